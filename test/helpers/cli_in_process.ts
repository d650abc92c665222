import { PassThrough } from 'node:stream';
import type { CliCommand, CliIo } from '../../gateway/cli/command.js';

/** Runs a `tessera` command in this process with its output captured (no child process to start). */
export async function runCliCommand(command: CliCommand, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (c: Buffer) => (out += c.toString()));
  stderr.on('data', (c: Buffer) => (err += c.toString()));
  const io = { stdout, stderr, stdin: process.stdin, env: {} } as unknown as CliIo;
  const code = await command.run(args, io);
  return { code, stdout: out, stderr: err };
}
