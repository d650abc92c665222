import { Readable, Writable } from 'node:stream';
import type { CliCommand, CliIo } from '../../gateway/cli/command.js';
import { runCli } from '../../gateway/cli/run_cli.js';

export interface CliOutput {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a `tessera` command in this process with its output captured (no child process to start). */
export function runCliCommand(command: CliCommand, args: string[]): Promise<CliOutput> {
  return captured(process.stdin, {}, (io) => command.run(args, io));
}

/**
 * Runs a whole `tessera ARGV` command line in this process, as main.ts does but with the streams
 * captured: `input` is what stdin holds (a pipe, not a terminal), `env` the only environment the
 * command sees. With `cwd` the process works in that folder for the call, since relative paths in
 * the arguments are the operator's; calls that pass it must not run side by side with other
 * subtests (process.chdir is process-wide).
 */
export async function runCliInProcess(
  argv: string[],
  options: { cwd?: string; input?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<CliOutput> {
  // As the spawned CLI's stdin was: a pipe holding `input`, or an empty one.
  const run = () => captured(Readable.from([options.input ?? '']), options.env ?? {}, (io) => runCli(argv, io));
  if (options.cwd === undefined) return run();
  const previous = process.cwd();
  process.chdir(options.cwd);
  try {
    return await run();
  } finally {
    process.chdir(previous);
  }
}

async function captured(stdin: Readable, env: NodeJS.ProcessEnv, run: (io: CliIo) => Promise<number>): Promise<CliOutput> {
  const stdout = collector();
  const stderr = collector();
  const io = { stdout: stdout.stream, stderr: stderr.stream, stdin, env } as unknown as CliIo;
  const code = await run(io);
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

/** A stream that keeps what is written, as it is written: complete once the command resolves. */
function collector(): { stream: Writable; text(): string } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  return { stream, text: () => text };
}
