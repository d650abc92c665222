import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { killAtExit } from '../../test/helpers/kill_at_exit.js';
import { isReadyMessage, isReplyMessage, type AskMessage, type StopMessage } from './child_protocol.js';

export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

export interface ChildServer {
  readonly name: string;
  readonly pid: number;
  readonly url: string;
  readonly detail: Record<string, unknown>;
  /** The last lines the process wrote (stdout and stderr), for diagnostics. */
  output(): string;
  /** Whether it is still running. */
  alive(): boolean;
  /** Sends a request over IPC (child_protocol.ts `answerRequests`) and resolves its answer. */
  ask(request: unknown, timeoutMs?: number): Promise<unknown>;
  stop(): Promise<void>;
}

export interface StartChildOptions {
  name: string;
  /** A TypeScript entry under bench/, run with `node --import tsx`. */
  entry: string;
  args?: readonly string[];
  env?: Record<string, string>;
  nodeArgs?: readonly string[];
  readyTimeoutMs?: number;
}

/** Keeps the tail of a child's output without letting the pipe fill up and block it. */
class OutputTail {
  private lines: string[] = [];
  private partial = '';
  constructor(private readonly maxLines: number) {}
  push(chunk: Buffer): void {
    const text = this.partial + chunk.toString('utf8');
    const parts = text.split('\n');
    this.partial = parts.pop() ?? '';
    this.lines.push(...parts);
    if (this.lines.length > this.maxLines) this.lines = this.lines.slice(-this.maxLines);
  }
  text(): string {
    return [...this.lines, this.partial].filter((line) => line.length > 0).join('\n');
  }
}

/**
 * Starts a server process that announces itself with a `ready` IPC message (child_protocol.ts),
 * and resolves once it has. Rejects, with the process's output, when it exits or stays silent.
 */
export function startChild(options: StartChildOptions): Promise<ChildServer> {
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), '--import', 'tsx', options.entry, ...(options.args ?? [])], {
    cwd: repoRoot,
    env: { ...process.env, NODE_ENV: 'production', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  killAtExit(child);
  const tail = new OutputTail(200);
  child.stdout?.on('data', (chunk: Buffer) => tail.push(chunk));
  child.stderr?.on('data', (chunk: Buffer) => tail.push(chunk));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  let askSequence = 0;
  const asked = new Map<number, { resolve: (value: unknown) => void; reject: (err: Error) => void; timer: NodeJS.Timeout }>();
  child.on('message', (message: unknown) => {
    if (!isReplyMessage(message)) return;
    const waiting = asked.get(message.id);
    if (waiting === undefined) return;
    asked.delete(message.id);
    clearTimeout(waiting.timer);
    if (message.ok) waiting.resolve(message.value);
    else waiting.reject(new Error(`${options.name}: ${message.error ?? 'request failed'}`));
  });
  child.once('exit', () => {
    for (const waiting of asked.values()) {
      clearTimeout(waiting.timer);
      waiting.reject(new Error(`${options.name} exited`));
    }
    asked.clear();
  });
  const ask = (request: unknown, timeoutMs = 120_000): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const id = ++askSequence;
      const timer = setTimeout(() => {
        asked.delete(id);
        reject(new Error(`${options.name} did not answer within ${timeoutMs} ms`));
      }, timeoutMs);
      asked.set(id, { resolve, reject, timer });
      const message: AskMessage = { type: 'ask', id, request };
      child.send(message);
    });

  return new Promise((resolve, reject) => {
    const timeoutMs = options.readyTimeoutMs ?? 60_000;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${options.name} did not start within ${timeoutMs} ms\n${tail.text()}`));
    }, timeoutMs);
    const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
      clearTimeout(timer);
      reject(new Error(`${options.name} exited during start-up (${code ?? signal})\n${tail.text()}`));
    };
    child.once('exit', onExit);
    child.on('message', (message: unknown) => {
      if (!isReadyMessage(message)) return;
      clearTimeout(timer);
      child.off('exit', onExit);
      const pid = child.pid as number;
      let stopping: Promise<void> | undefined;
      resolve({
        name: options.name,
        pid,
        url: message.url,
        detail: message.detail,
        output: () => tail.text(),
        alive: () => child.exitCode === null && child.signalCode === null,
        ask,
        stop() {
          stopping ??= (async () => {
            if (child.exitCode !== null || child.signalCode !== null) return;
            const stop: StopMessage = { type: 'stop' };
            if (child.connected) child.send(stop);
            else child.kill('SIGTERM');
            const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
            await exited;
            clearTimeout(killer);
          })();
          return stopping;
        },
      });
    });
  });
}
