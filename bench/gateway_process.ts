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
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { announceReady, stopOnRequest } from './support/child_protocol.js';
import { seedGrantType } from './support/seed.js';

type ServerModule = typeof import('../gateway/server.js');
type LoadModule = typeof import('../gateway/config/load.js');

const [configFile, target = 'dist', root] = process.argv.slice(2);
if (configFile === undefined || (target !== 'dist' && target !== 'source')) {
  console.error('usage: gateway_process.ts <config.json> [dist|source] [root]');
  process.exit(2);
}

const rootUrl = root === undefined ? new URL('../', import.meta.url) : pathToFileURL(`${path.resolve(root)}/`);
const base = new URL(target === 'dist' ? 'dist/gateway/' : 'gateway/', rootUrl);
const { startGateway } = (await import(new URL('server.js', base).href)) as ServerModule;
const { validateConfig } = (await import(new URL('config/load.js', base).href)) as LoadModule;

// The seed grant imports the handle code of the gateway it runs in: compiled or TypeScript.
const seeding = process.env.BENCH_SEED_GRANT === '1';
const seedModule = new URL('./support/seed_grant.mjs', import.meta.url);
seedModule.searchParams.set('base', new URL(target === 'dist' ? 'dist/' : './', rootUrl).href);
seedModule.searchParams.set('ext', target === 'dist' ? 'js' : 'ts');

const raw: unknown = JSON.parse(readFileSync(configFile, 'utf8'));
// No TESSERA_* overrides: the bench config is the whole truth.
const config = validateConfig(raw, {
  configDir: path.dirname(path.resolve(configFile)),
  env: {},
  ...(seeding ? { extraGrantTypes: [seedGrantType] } : {}),
});
// The bench config always names its keys; the development-key folder is read at start-up only.
const devKeyDir = mkdtempSync(path.join(tmpdir(), 'tessera-bench-devkey-'));
const gateway = await startGateway({ config, devKeyDir, ...(seeding ? { grantModules: [seedModule.href] } : {}) }).finally(() =>
  rmSync(devKeyDir, { recursive: true, force: true }),
);

stopOnRequest(() => gateway.stop());
announceReady(gateway.url, {
  target,
  root: fileURLToPath(rootUrl),
  grantTypes: gateway.grantTypes,
  threads: config.workers.threads,
  store: config.store.type,
  seeding,
});
