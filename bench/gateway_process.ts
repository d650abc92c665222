/**
 * One Tessera gateway in its own process, for the benchmarks: the runner reads this process's CPU
 * time and memory, and the load generator does not share its event loop.
 *
 *   node --import tsx bench/gateway_process.ts <config.json> [dist|source] [root]
 *
 * `dist` runs the compiled gateway (`npm run build`), what users run; `source` runs the
 * TypeScript sources (workers then load through workers/worker_from_source.mjs). `root` is the
 * checkout to run [this one]: another worktree of the project, to compare two versions.
 *
 * With `BENCH_SEED_GRANT=1` in the environment the gateway also loads the bench seed grant
 * (support/seed_grant.mjs, through `startGateway`'s `grantModules`), with which the runner writes
 * refresh tokens, codes and device codes into this gateway's own store before the load.
 *
 * With `BENCH_EVENTS=file` (JSON lines under `BENCH_EVENTS_DIR`) or `BENCH_EVENTS=redis` (a Redis
 * Stream at `BENCH_EVENTS_REDIS_URL`) the gateway emits audit events (`--events`, bench/README.md).
 * The bench reads /metrics where the gateway serves it (its management listener, or the public
 * port of a checkout from before it had one).
 *
 * With `BENCH_PROCESSES=N` (`--processes`, Redis only) this process is process 0 of N gateways on
 * one port, as `tessera start --processes N` runs them (docs/operations.md, "Several processes"):
 * it starts the N − 1 others (this script again, with `BENCH_PROCESS_INDEX`), announces itself
 * once all listen with every pid in `pids` (the runner adds up their CPU), and stops them with itself.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { announceReady, stopOnRequest } from './support/child_protocol.js';
import { startChild, type ChildServer } from './support/child_server.js';
import { seedGrantType } from './support/seed.js';

type ServerModule = typeof import('../gateway/start/server.js');
type LoadModule = typeof import('../gateway/config/load.js');

const [configFile, target = 'dist', root] = process.argv.slice(2);
if (configFile === undefined || (target !== 'dist' && target !== 'source')) {
  console.error('usage: gateway_process.ts <config.json> [dist|source] [root]');
  process.exit(2);
}

const rootUrl = root === undefined ? new URL('../', import.meta.url) : pathToFileURL(`${path.resolve(root)}/`);
const base = new URL(target === 'dist' ? 'dist/gateway/' : 'gateway/', rootUrl);
// `start/server` since the rooms of issue 31; a --baseline-root from before them has `server` at
// the gateway's root.
const ext = target === 'dist' ? 'js' : 'ts';
const serverUrl = existsSync(fileURLToPath(new URL(`start/server.${ext}`, base)))
  ? new URL('start/server.js', base)
  : new URL('server.js', base);
const { startGateway } = (await import(serverUrl.href)) as ServerModule;
const { validateConfig } = (await import(new URL('config/load.js', base).href)) as LoadModule;

// The seed grant imports the handle code of the gateway it runs in: compiled or TypeScript.
const seeding = process.env.BENCH_SEED_GRANT === '1';
const seedModule = new URL('./support/seed_grant.mjs', import.meta.url);
seedModule.searchParams.set('base', new URL(target === 'dist' ? 'dist/' : './', rootUrl).href);
seedModule.searchParams.set('ext', target === 'dist' ? 'js' : 'ts');

const raw = JSON.parse(readFileSync(configFile, 'utf8')) as Record<string, unknown>;
const events = process.env.BENCH_EVENTS;
if (events === 'file')
  raw.events = { sink: 'file', file: path.join(process.env.BENCH_EVENTS_DIR ?? tmpdir(), `events-${process.pid}.jsonl`) };
if (events === 'redis') {
  raw.events = {
    sink: 'none',
    redisStream: { url: process.env.BENCH_EVENTS_REDIS_URL, key: `bench:events:${process.pid}`, maxLen: 100_000 },
  };
}
// /metrics on a management listener on a free port of its own: gateways of one run never share
// one. A checkout from before the management listener refuses the key and serves /metrics on its
// public port: it is validated again without it.
const validate = (document: Record<string, unknown>) =>
  // No TESSERA_* overrides: the bench config is the whole truth.
  validateConfig(document, {
    configDir: path.dirname(path.resolve(configFile)),
    env: {},
    ...(seeding ? { extraGrantTypes: [seedGrantType] } : {}),
  });
let config: ReturnType<typeof validate>;
try {
  config = validate({ ...raw, management: { host: '127.0.0.1', port: 0 } });
} catch (err) {
  if (!String((err as { message?: unknown }).message).includes('management')) throw err;
  config = validate(raw);
}
// The bench config always names its keys; the development-key folder is read at start-up only.
const devKeyDir = mkdtempSync(path.join(tmpdir(), 'tessera-bench-devkey-'));
const processes = Number(process.env.BENCH_PROCESSES ?? '1');
const processIndex = Number(process.env.BENCH_PROCESS_INDEX ?? '0');
const gateway = await startGateway({
  config,
  devKeyDir,
  ...(seeding ? { grantModules: [seedModule.href] } : {}),
  // A checkout from before `--processes` ignores it and shares the port all the same (Redis).
  ...(processes > 1 ? { process: { index: processIndex, count: processes } } : {}),
}).finally(() => rmSync(devKeyDir, { recursive: true, force: true }));

// Process 0 starts the others once it listens (a taken port fails here, before any of them).
const siblings: ChildServer[] = [];
const stopAll = async (): Promise<void> => {
  await Promise.all([gateway.stop(), ...siblings.map((sibling) => sibling.stop())]);
};
stopOnRequest(stopAll);
if (processIndex === 0 && processes > 1) {
  const entry = fileURLToPath(import.meta.url);
  try {
    for (let index = 1; index < processes; index++) {
      siblings.push(
        await startChild({
          name: `gateway process ${index}`,
          entry,
          args: process.argv.slice(2),
          // --cpu-prof and its folder: every process is profiled alike (startChild adds tsx).
          nodeArgs: process.execArgv.filter((arg) => arg.startsWith('--cpu-prof')),
          env: { BENCH_PROCESS_INDEX: String(index) },
        }),
      );
    }
  } catch (err) {
    await stopAll();
    throw err;
  }
}
const { managementUrl } = gateway as { managementUrl?: string };
announceReady(gateway.url, {
  ...(processes > 1 ? { processes, pids: [process.pid, ...siblings.map((sibling) => sibling.pid)] } : {}),
  metricsUrl: `${managementUrl ?? gateway.url}/metrics`,
  events: events ?? 'none',
  target,
  root: fileURLToPath(rootUrl),
  grantTypes: gateway.grantTypes,
  threads: config.workers.threads,
  store: config.store.type,
  seeding,
});
