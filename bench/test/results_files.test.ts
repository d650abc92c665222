/**
 * Runs write their files outside the repository; the repository keeps one run,
 * bench/results/latest.json, the newest full `npm run bench`, and bench/README.md's table is that
 * run's (bench/README.md, "Results").
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { latestResults, resultsDirectory, type BenchResults } from '../report/results.js';
import { parseOptions } from '../runner/options.js';
import { scenarios } from '../scenarios/index.js';

const benchDir = fileURLToPath(new URL('../', import.meta.url));
const repoRoot = path.resolve(benchDir, '..');
const readme = readFileSync(`${benchDir}README.md`, 'utf8');
const latest = JSON.parse(readFileSync(latestResults, 'utf8')) as BenchResults;

/** The results files git tracks (a run saved locally is not the repository's until committed). */
function trackedResults(): string[] | null {
  try {
    const listed = execFileSync('git', ['-C', benchDir, 'ls-files', 'results'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    return listed.split('\n').filter((file) => file !== '');
  } catch {
    return null;
  }
}

const inside = (dir: string): boolean => !path.relative(repoRoot, dir).startsWith('..');

t.test('a run writes outside the repository unless told where', async (t) => {
  const home = os.homedir();
  t.equal(resultsDirectory(undefined, {}), path.join(home, '.cache', 'tessera-bench', 'results'), 'the user cache');
  t.equal(resultsDirectory(undefined, { XDG_CACHE_HOME: '/var/cache/me' }), '/var/cache/me/tessera-bench/results');
  t.equal(resultsDirectory(undefined, { TESSERA_BENCH_RESULTS: '/tmp/runs', XDG_CACHE_HOME: '/x' }), '/tmp/runs');
  t.equal(resultsDirectory('/tmp/out', { TESSERA_BENCH_RESULTS: '/tmp/runs' }), '/tmp/out', '--out wins');
  t.notOk(inside(resultsDirectory(undefined, {})), 'the default is not in the repository');
  t.equal(parseOptions(['client_credentials', '--out', '/tmp/out']).out, '/tmp/out');
  t.equal(parseOptions(['client_credentials']).out, undefined);
  t.throws(() => parseOptions(['--out', '/tmp/out', '--no-save']), /one or the other/);
});

t.test('the repository keeps one run: results/latest.json', async (t) => {
  const files = trackedResults();
  if (files === null) {
    t.pass('not a git checkout: nothing is committed');
    return;
  }
  t.same(files, ['results/latest.json']);
});

t.test('latest.json is a full run of scenarios that still exist', async (t) => {
  t.same(
    latest.argv.filter((arg) => !arg.startsWith('-')),
    [],
    'no scenario named: every scenario and sign',
  );
  t.not(latest.sign, null, 'with the sign micro-bench');
  const known = new Set(scenarios.map((s) => s.name));
  for (const s of latest.scenarios) t.ok(known.has(s.name), `${s.name} is a scenario of bench/scenarios/index.ts`);
  t.ok(latest.scenarios.length >= 10, `${latest.scenarios.length} scenarios`);
});

t.test("bench/README.md's table is latest.json's run", async (t) => {
  const started = latest.startedAt.slice(0, 16).replace('T', ' ');
  const commit = latest.settings.gateway.git?.commit.slice(0, 7) ?? 'no commit';
  t.match(readme, `[\`results/latest.json\`](results/latest.json)`, 'the README links the file');
  t.match(
    readme,
    new RegExp(`## Latest figures, ${started}[^\\n]*\\n[^]*?at ${commit}`),
    `a heading with ${started} and the commit ${commit}`,
  );
  t.notMatch(readme, /results\/\d{4}-\d\d-\d\dT[\d-]+Z\.json/, 'no other results file is cited: they are not in the repository');
});
