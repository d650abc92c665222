/**
 * `npm run bench [-- scenario… | sign] [options]`: starts the servers itself, drives them with a
 * real HTTP load generator (wrk, or autocannon when wrk is not installed), checks every response,
 * interleaves contenders, prints a table per scenario and writes <timestamp>.json and .svg outside the repository (report/results.ts, `resultsDirectory`)
 * and .svg. See bench/README.md.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { createAutocannon } from './load/autocannon.js';
import type { LoadGenerator } from './load/load_generator.js';
import { createWrk, findWrk } from './load/wrk.js';
import { formatBars, judgeBars } from './report/bars.js';
import { renderChart } from './report/chart.js';
import { formatProfiles, summariseProfiles } from './report/cpu_profile.js';
import { resultsDirectory, writeResults, type BenchResults, type ScenarioResult } from './report/results.js';
import { formatScale } from './report/scale.js';
import { formatScenario, formatSettings } from './report/table.js';
import { formatThroughputBound, throughputBound } from './report/throughput_bound.js';
import { RunContext } from './runner/context.js';
import { parseOptions, usage, UsageError, type BenchOptions } from './runner/options.js';
import { Progress } from './runner/progress.js';
import { formatFloorComponents, measureFloors, runScenarioWithFloor, type FloorsRun } from './runner/floors.js';
import { resolveTarget, type BaselineCheckout } from './runner/target.js';
import { runScaleBench } from './scale/scale_bench.js';
import { runSoak } from './soak/soak_bench.js';
import { formatSoak } from './report/soak.js';
import { scenarios, findScenario } from './scenarios/index.js';
import type { ActiveScenario, PendingScenario } from './scenarios/scenario.js';
import { repoRoot } from './support/child_server.js';
import { describeCheckout } from './support/git_info.js';
import { describeMachine, formatMachine } from './support/machine.js';
import { formatSignRatios, runSignBench } from './sign.js';

function chooseGenerator(options: BenchOptions): LoadGenerator {
  const wrkVersion = findWrk();
  if (options.loadgen === 'wrk' && wrkVersion === null) {
    throw new UsageError('--loadgen wrk: wrk is not installed (Debian/Ubuntu: sudo apt-get install -y wrk)');
  }
  if (options.loadgen === 'autocannon' || wrkVersion === null) return createAutocannon();
  return createWrk(wrkVersion, options.loadgenThreads);
}

async function main(): Promise<number> {
  let options: BenchOptions;
  try {
    options = parseOptions(process.argv.slice(2));
  } catch (err) {
    console.error(`${(err as Error).message}\n\n${usage}`);
    return 2;
  }
  if (options.help) {
    console.log(usage);
    return 0;
  }

  const unknown = options.names.filter(
    (name) => name !== 'sign' && name !== 'scale' && name !== 'scale-store' && name !== 'soak' && findScenario(name) === undefined,
  );
  if (unknown.length > 0) {
    console.error(
      `unknown scenario ${unknown.map((n) => `"${n}"`).join(', ')}; known: sign, scale, scale-store, soak, ${scenarios.map((s) => s.name).join(', ')}`,
    );
    return 2;
  }
  const everything = options.names.length === 0;
  const chosen = everything ? scenarios : options.names.map((name) => findScenario(name)).filter((s) => s !== undefined);
  const active = chosen.filter((s): s is ActiveScenario => s.kind === 'active');
  const pending = chosen.filter((s): s is PendingScenario => s.kind === 'pending');
  const runSign = everything || options.names.includes('sign');
  // Only when named: it writes 2M records and starts gateways of 100k clients (~7 min).
  const runScale = options.names.includes('scale');
  // Only when named: it writes up to 1M stored clients into Redis (issue 34).
  const runScaleStore = options.names.includes('scale-store');
  // Only when named: five minutes of load and bursts (bench/README.md, "Soak and bursts").
  const runSoakNamed = options.names.includes('soak');
  if (!everything) for (const scenario of pending) console.log(`${scenario.name}: pending: ${scenario.pending}`);
  if (active.length === 0 && !runSign && !runScale && !runScaleStore && !runSoakNamed) return 0;

  let generator: LoadGenerator;
  try {
    generator = chooseGenerator(options);
  } catch (err) {
    console.error((err as Error).message);
    return 2;
  }
  const target = resolveTarget(options.target, options.gatewayRoot === undefined ? undefined : path.resolve(options.gatewayRoot));
  let baseline: BaselineCheckout | null = null;
  if (options.baselineRoot !== undefined) {
    const root = path.resolve(options.baselineRoot);
    // gateway/server.ts before the rooms of issue 31, gateway/start/server.ts since.
    const serverFiles = ['gateway/start/server.ts', 'dist/gateway/start/server.js', 'gateway/server.ts', 'dist/gateway/server.js'];
    if (!serverFiles.some((file) => existsSync(path.join(root, file)))) {
      console.error(`--baseline-root ${root}: not a Tessera checkout (none of ${serverFiles.join(', ')})`);
      return 2;
    }
    try {
      // Resolved on its own: its dist/ may be built or stale independently of this checkout's.
      baseline = { root, target: resolveTarget(options.target, root) };
    } catch (err) {
      console.error(`--baseline-root ${root}: ${(err as Error).message}`);
      return 2;
    }
  }
  const machine = describeMachine();
  const startedAt = new Date();
  const progress = new Progress();
  const ctx = new RunContext(options, generator, target, progress, baseline);
  const interrupt = (): void => {
    progress.clear();
    console.error('\ninterrupted: stopping the servers');
    void ctx.close().finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);

  const results: BenchResults = {
    schema: 1,
    startedAt: startedAt.toISOString(),
    finishedAt: '',
    argv: process.argv.slice(2),
    machine,
    settings: {
      label: options.label ?? null,
      durationS: options.durationS,
      warmupS: options.warmupS,
      connections: options.connections,
      rounds: options.rounds ?? 'auto',
      quick: options.quick,
      loadgen: { name: generator.name, version: generator.version, threads: generator.threads },
      gateway: {
        target: target.kind,
        threads: options.threads,
        // Only when the run measured other counts than one, so that other results files stay as they were.
        ...(options.processes.length === 1 && options.processes[0] === 1 ? {} : { processes: options.processes }),
        note: target.note,
        root: options.gatewayRoot === undefined ? null : path.resolve(options.gatewayRoot),
        git: describeCheckout(options.gatewayRoot === undefined ? repoRoot : path.resolve(options.gatewayRoot)),
      },
      baseline:
        baseline === null
          ? null
          : {
              root: baseline.root,
              label: options.baselineLabel ?? null,
              target: baseline.target.kind,
              note: baseline.target.note,
              git: describeCheckout(baseline.root),
            },
      redis: null,
    },
    scenarios: [],
    pending: scenarios.filter((s): s is PendingScenario => s.kind === 'pending').map((s) => ({ name: s.name, reason: s.pending })),
    sign: null,
  };

  console.log(`Machine: ${formatMachine(machine)}`);
  if (target.note !== null) console.log(`Note: ${target.note}`);
  if (baseline !== null) {
    if (baseline.target.note !== null) console.log(`Note (baseline): ${baseline.target.note}`);
    if (baseline.target.kind !== target.kind) {
      console.log(
        `Note: Tessera runs ${target.kind === 'dist' ? 'dist/' : 'its sources'} and the baseline ${baseline.target.kind === 'dist' ? 'dist/' : 'its sources'}: ` +
          'the comparison mixes a build with the TypeScript sources (build both, or pass --target)',
      );
    }
  }
  if (generator.name === 'autocannon' && options.loadgen !== 'autocannon')
    console.log('Note: wrk is not installed, using autocannon (sudo apt-get install -y wrk for the reference figures)');
  // A soak alone has its own settings, printed in its report; the rounds and warm-up are not its.
  const soakAlone = runSoakNamed && active.length === 0 && !runSign && !runScale && !runScaleStore;
  console.log(
    soakAlone
      ? `Settings: soak for ${options.soak.durationS} s, Tessera from ${target.kind === 'dist' ? 'dist/' : 'TypeScript sources'}, ${options.threads} worker threads\n`
      : `Settings: ${formatSettings(results)}\n`,
  );

  let failed = false;
  try {
    let floors: FloorsRun | null = null;
    try {
      floors = await measureFloors(active, ctx);
    } catch (err) {
      progress.clear();
      console.error(`floors: FAILED: ${(err as Error).stack ?? String(err)}`);
      failed = true;
    }
    results.floors = floors?.components ?? null;
    if (results.floors != null)
      console.log(
        `### Floors (measured in this run)\n\n${formatFloorComponents(results.floors)
          .map((line) => `- ${line}`)
          .join('\n')}\n`,
      );
    for (const scenario of active) {
      let result: ScenarioResult | null;
      try {
        result = await runScenarioWithFloor(scenario, ctx, floors);
      } catch (err) {
        progress.clear();
        console.error(`${scenario.name}: FAILED: ${(err as Error).stack ?? String(err)}`);
        failed = true;
        continue;
      }
      if (result === null) continue;
      results.settings.redis = ctx.redisVersion;
      results.scenarios.push(result);
      failed ||= result.hasErrors;
      console.log(`${formatScenario(result)}\n`);
    }
    if (runSign) {
      console.log('### sign (ES256 signing and verification, one thread, 2 s each)\n');
      results.sign = await runSignBench(2, (line) => console.log(line));
      for (const line of formatSignRatios(results.sign)) console.log(line);
      console.log('');
    }
    if (runScale || runScaleStore) {
      results.scale = await runScaleBench(ctx, { config: runScale, store: runScaleStore });
      results.settings.redis = ctx.redisVersion;
      const loads = [...results.scale.cost, ...(results.scale.storedClients?.rows.flatMap((row) => row.loads) ?? [])];
      failed ||= results.scale.failures.length > 0 || loads.some((row) => row.rounds.some((round) => !round.valid));
      console.log(`${formatScale(results.scale)}\n`);
    }
    if (runSoakNamed) {
      try {
        results.soak = await runSoak(ctx, { ...options.soak, connections: options.connections });
        results.settings.redis = ctx.redisVersion;
        failed ||= results.soak.failures.length > 0;
        progress.clear();
        console.log(`${formatSoak(results.soak)}\n`);
      } catch (err) {
        progress.clear();
        console.error(`soak: FAILED: ${(err as Error).stack ?? String(err)}`);
        failed = true;
      }
    }
  } finally {
    await ctx.close();
  }
  results.finishedAt = new Date().toISOString();
  results.bound = throughputBound(results);
  if (results.bound !== null) console.log(`${formatThroughputBound(results.bound)}\n`);
  if (results.scenarios.length > 0) {
    results.bars = judgeBars(results);
    console.log(`${formatBars(results.bars)}\n`);
  }

  if (everything && results.pending.length > 0)
    console.log(`Pending scenarios: ${results.pending.map((p) => p.name).join(', ')} (\`npm run bench -- <name>\` says why)\n`);
  if (options.save) {
    let svg: string | null = null;
    try {
      svg = results.scenarios.length > 0 ? await renderChart(results) : null;
    } catch (err) {
      console.error(`chart: ${(err as Error).message}`);
    }
    const written = writeResults(results, svg, resultsDirectory(options.out));
    console.log(`Results: ${written.json}${written.svg === null ? '' : `\nChart:   ${written.svg}`}`);
  }
  if (ctx.profileDir !== null) {
    console.log(`\nCPU profiles in ${ctx.profileDir}; hottest functions by self time during the measured runs:\n`);
    console.log(formatProfiles(summariseProfiles(ctx.profileDir, 12, ctx.profileWindows)));
  }
  const seconds = (Date.now() - startedAt.getTime()) / 1000;
  console.log(`\nTook ${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s.`);
  if (failed) console.log('\n!!! SOME RUNS HAD ERRORS: see the tables above; those runs are not results.');
  return failed ? 1 : 0;
}

process.exitCode = await main();
