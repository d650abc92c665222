import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { repoRoot } from '../support/child_server.js';
import type { LoadGenerator, LoadOptions, LoadResult, LoadRun } from './load_generator.js';

const childEntry = fileURLToPath(new URL('./autocannon_child.ts', import.meta.url));

export function autocannonVersion(): string {
  const require = createRequire(import.meta.url);
  return (require('autocannon/package.json') as { version: string }).version;
}

/** autocannon (one connection loop, in a child process), the fallback when wrk is not installed. */
export function createAutocannon(): LoadGenerator {
  return {
    name: 'autocannon',
    version: autocannonVersion(),
    threads: 1,
    start(options: LoadOptions): LoadRun {
      const child = spawn(process.execPath, ['--import', 'tsx', childEntry, JSON.stringify(options)], {
        cwd: repoRoot,
        stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      });
      let stderr = '';
      child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      let result: LoadResult | undefined;
      const started = new Promise<void>((resolve, reject) => {
        child.once('error', reject);
        child.on('message', (message: { type?: string; result?: LoadResult }) => {
          if (message.type === 'started') resolve();
          if (message.type === 'result') result = message.result;
        });
      });
      const done = new Promise<LoadResult>((resolve, reject) => {
        child.once('error', reject);
        child.once('close', (code) => {
          if (result !== undefined) resolve(result);
          else reject(new Error(`autocannon failed (exit ${code}): ${stderr.trim()}`));
        });
      });
      return { pid: child.pid as number, started, done };
    },
  };
}
