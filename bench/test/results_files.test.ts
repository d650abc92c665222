/**
 * bench/results/ keeps, per machine, the newest run of each scenario, and bench/README.md cites
 * only files that are there (bench/README.md, "Results files").
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import type { BenchResults } from '../report/results.js';

const benchDir = fileURLToPath(new URL('../', import.meta.url));
const readme = readFileSync(`${benchDir}README.md`, 'utf8');

/** The results files git tracks (a run saved locally is not the repository's until committed). */
function trackedResults(): string[] | null {
  try {
    const listed = execFileSync('git', ['-C', benchDir, 'ls-files', 'results'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    return listed.split('\n').filter((file) => file.endsWith('.json'));
  } catch {
    return null;
  }
}

t.test('every results file bench/README.md cites is in bench/results/, with its chart', async (t) => {
  const cited = [...new Set([...readme.matchAll(/results\/(\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ)\.json/g)].map((m) => m[1] as string))];
  t.ok(cited.length > 0, 'the README cites results files');
  for (const stamp of cited) {
    const json = `${benchDir}results/${stamp}.json`;
    t.ok(existsSync(json), `${stamp}.json exists`);
    // The chart draws the scenarios' rows: a run of `scale` or `soak` alone has none, and no chart.
    const charted = !existsSync(json) || (JSON.parse(readFileSync(json, 'utf8')) as BenchResults).scenarios.length > 0;
    if (charted) t.ok(existsSync(`${benchDir}results/${stamp}.svg`), `${stamp}.svg exists`);
  }
});

t.test('each committed run is the newest on its machine for one of its scenarios, and has a README row', async (t) => {
  const files = trackedResults();
  if (files === null) {
    t.pass('not a git checkout: nothing is committed');
    return;
  }
  const runs = files.map((file) => ({ file, results: JSON.parse(readFileSync(`${benchDir}${file}`, 'utf8')) as BenchResults }));
  const measured = (results: BenchResults): string[] => [
    ...results.scenarios.map((s) => s.name),
    ...(results.sign === null ? [] : ['sign']),
    ...(results.scale === undefined || results.scale === null ? [] : ['scale']),
    ...(results.soak === undefined || results.soak === null ? [] : ['soak']),
  ];
  for (const { file, results } of runs) {
    const machine = JSON.stringify(results.machine);
    const newer = runs.filter((other) => JSON.stringify(other.results.machine) === machine && other.results.startedAt > results.startedAt);
    const newest = measured(results).filter((name) => !newer.some((other) => measured(other.results).includes(name)));
    t.ok(
      newest.length > 0,
      `${file}: newest on its machine for ${newest.join(', ') || 'nothing (git rm it, and summarise it in the README)'}`,
    );
    t.match(readme, `\`${file}\``, `${file} has its row in the README`);
  }
});
