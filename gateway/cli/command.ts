/**
 * What every `tessera` subcommand shares: its description for the help text, the streams it
 * writes to, and the exit codes.
 */
import { parseArgs } from 'node:util';
import { formatProblems, type ConfigError } from '../config/config_error.js';

/** Exit codes: 2 means "fix what you gave me" (usage or config), 1 means "it failed". */
export const ExitCode = { Ok: 0, Failure: 1, Usage: 2, InvalidConfig: 2 } as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

export interface CliIo {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
  readonly stdin: NodeJS.ReadStream;
  readonly env: NodeJS.ProcessEnv;
}

export interface CliCommand {
  /** The words that select the command, e.g. `['keys', 'generate']`. */
  readonly words: readonly string[];
  /** One line for `tessera --help`. */
  readonly summary: string;
  /** Synopsis, e.g. `tessera start [--config FILE]`. */
  readonly usage: string;
  /** Option and argument lines for `tessera help COMMAND`. */
  readonly details: readonly string[];
  run(args: string[], io: CliIo): Promise<number>;
}

/** A mistake in the command line itself: printed with the command's usage, exit 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** The one argument of a command that takes no options (`tessera hash-secret SECRET`); `what` names it in the usage error. */
export function onlyArgument(args: string[], what: string): string {
  const { positionals } = parseArgs({ args, options: {}, strict: true, allowPositionals: true });
  if (positionals.length !== 1) throw new UsageError(`expected exactly one ${what}`);
  return positionals[0] as string;
}

/** Prints every config problem on its own line under a one-line heading. */
export function reportConfigError(error: ConfigError, io: CliIo): void {
  const count = error.problems.length;
  const source = error.source ?? 'the config';
  io.stderr.write(`error: ${source} has ${count} problem${count === 1 ? '' : 's'}:\n${formatProblems(error.problems)}\n`);
}

/** The first line of an error's message: start-up failures are reported on one line. */
export function describeError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split('\n', 1)[0] ?? '';
}
