/**
 * `tessera …` as a child process, the way an operator runs it: from the TypeScript sources (with
 * tsx, as the tests run Tessera) or from the compiled CLI in dist/ (plain node, as `npm start`
 * does). The developer's TESSERA_* variables do not leak in; the child is killed at exit.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { killAtExit } from './kill_at_exit.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

export interface CliProcess {
  readonly child: ChildProcess;
  /** Everything it printed so far, stdout and stderr together. */
  output(): string;
  /** Its exit code (null after a signal). */
  readonly exited: Promise<number | null>;
  /** Resolves once `${url}/readyz` answers 200; rejects with the output if it exits or 60 s pass. */
  ready(url: string): Promise<void>;
}

export function startCli(args: readonly string[], options: { cwd: string; compiled?: boolean }): CliProcess {
  // The compiled CLI runs without the test runner's loaders, as `npm start` would.
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('TESSERA_') && !(options.compiled === true && name === 'NODE_OPTIONS')),
  );
  const entry =
    options.compiled === true
      ? [path.join(repoRoot, 'dist/gateway/cli/main.js')]
      : ['--import', 'tsx', path.join(repoRoot, 'gateway/cli/main.ts')];
  const child = spawn(process.execPath, [...entry, ...args], { cwd: options.cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  killAtExit(child);
  let output = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    output: () => output,
    exited,
    async ready(url) {
      const deadline = Date.now() + 60_000;
      for (;;) {
        const status = await fetch(`${url}/readyz`).then(
          (r) => r.status,
          () => 0,
        );
        if (status === 200) return;
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`the gateway did not become ready:\n${output}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    },
  };
}
