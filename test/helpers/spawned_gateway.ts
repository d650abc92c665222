import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Test } from 'tap';
import { generateSigningKey } from '../../gateway/keys/key_loader.js';
import { freePort } from './free_port.js';
import { killAtExit } from './kill_at_exit.js';
import { baseTestConfig } from './test_gateway.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const mainScript = join(repoRoot, 'gateway/cli/main.ts');

/** A line of the gateway's JSON log, main thread or worker thread. */
export interface LogLine {
  level: number;
  msg: string;
  [member: string]: unknown;
}

export interface SpawnedGateway {
  readonly url: string;
  readonly tokenUrl: string;
  /** Where `/metrics` is served: the management listener, on a port of its own. */
  readonly managementUrl: string;
  /** Every JSON log line written so far, worker threads' included. */
  logLines(): LogLine[];
  /** Everything written to stdout and stderr so far. */
  output(): string;
  /** Sends SIGTERM and resolves the exit code once the process has stopped. */
  terminate(): Promise<number | null>;
  /** Sends a signal (SIGHUP: reload) to the process. */
  signal(name: NodeJS.Signals): void;
  /** Waits until a log line matches, or fails after `timeoutMs`. */
  waitForLog(what: string, predicate: (line: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
}

/**
 * `tessera start` in a child process on the test config with `validators` copied into its
 * `validatorsDir`, so a test reads the log as an operator does: worker threads write their own
 * lines, which an in-process gateway cannot capture. Killed when the test ends.
 */
export async function startSpawnedGateway(t: Test, options: SpawnOptions): Promise<SpawnedGateway> {
  // A port drawn free can still be taken by another test file's server before this gateway
  // listens (files run side by side): the gateway refuses it, and another port is drawn.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(t, options);
    } catch (err) {
      if (attempt === 3 || !String((err as Error).message).includes('the port is in use')) throw err;
    }
  }
}

interface SpawnOptions {
  validators: readonly string[];
  patch?: (raw: Record<string, unknown>) => void;
  env?: Record<string, string>;
  /** Return once `/readyz` answers at all, 503 included (a gateway started without its store). */
  untilListening?: boolean;
}

async function startOnce(t: Test, options: SpawnOptions): Promise<SpawnedGateway> {
  const dir = t.testdir();
  mkdirSync(join(dir, 'validators'), { recursive: true });
  for (const file of options.validators) copyFileSync(file, join(dir, 'validators', basename(file)));
  const port = await freePort();
  const raw = baseTestConfig();
  raw.issuer = `http://127.0.0.1:${port}`;
  raw.listen = { host: '127.0.0.1', port };
  const managementPort = await freePort();
  raw.management = { host: '127.0.0.1', port: managementPort };
  raw.logLevel = 'info';
  raw.validatorsDir = join(dir, 'validators');
  // A configured key: the development key would be written beside the working directory.
  const key = await generateSigningKey('ES256');
  writeFileSync(join(dir, 'signing.jwk.json'), JSON.stringify(key.jwk));
  raw.signing = { algorithm: 'ES256', keys: [{ file: join(dir, 'signing.jwk.json') }] };
  options.patch?.(raw);
  writeFileSync(join(dir, 'tessera.json'), JSON.stringify(raw));

  // From the repository root, so that a validator's `tessera/validator` resolves as in the tests.
  const env = {
    ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('TESSERA_'))),
    ...options.env,
  };
  const child = spawn(process.execPath, ['--import', 'tsx', mainScript, 'start', '-c', join(dir, 'tessera.json')], {
    cwd: repoRoot,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  killAtExit(child);
  t.teardown(() => {
    child.kill('SIGKILL');
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    const ready = await fetch(`${url}/readyz`).then(
      async (r) => {
        await r.arrayBuffer();
        return r.status;
      },
      () => 0,
    );
    if (ready === 200 || (options.untilListening === true && ready !== 0)) break;
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`the gateway did not become ready: ${output}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }

  const logLines = (): LogLine[] =>
    output
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as LogLine);
  return {
    url,
    tokenUrl: `${url}/connect/token`,
    managementUrl: `http://127.0.0.1:${managementPort}`,
    logLines,
    output: () => output,
    terminate() {
      if (child.exitCode !== null) return Promise.resolve(child.exitCode);
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.kill('SIGTERM');
      return exited;
    },
    signal(name) {
      child.kill(name);
    },
    async waitForLog(what, predicate, timeoutMs = 10_000) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const line = logLines().find(predicate);
        if (line !== undefined) return line;
        if (Date.now() > end) throw new Error(`no log line ${what} in: ${output}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
  };
}
