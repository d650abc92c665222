/**
 * `tessera hash-password [PASSWORD]`: the stored form of a user password. Without an argument the
 * password is read from stdin (prompted without echo on a terminal), so it stays out of shell
 * history.
 */
import { parseArgs } from 'node:util';
import { hashPassword } from '../../core/crypto/password_hash.js';
import { ExitCode, UsageError, type CliCommand, type CliIo } from './command.js';

export const hashPasswordCommand: CliCommand = {
  words: ['hash-password'],
  summary: 'Print the stored form of a user password (reads stdin when PASSWORD is omitted)',
  usage: 'tessera hash-password [PASSWORD]',
  details: [
    'Prints an argon2id PHC string for a user\'s "passwordHash".',
    'Without PASSWORD: prompts twice without echo on a terminal, otherwise reads one line from',
    'stdin (printf %s "$PW" | tessera hash-password), which keeps it out of shell history.',
  ],
  async run(args, io) {
    const { positionals } = parseArgs({ args, options: {}, strict: true, allowPositionals: true });
    if (positionals.length > 1) throw new UsageError('expected at most one PASSWORD');
    const password = positionals[0] ?? (io.stdin.isTTY ? await promptPassword(io) : await readPasswordFromPipe(io));
    if (password === undefined) return ExitCode.Failure;
    if (password === '') throw new UsageError('the password must not be empty');
    io.stdout.write(`${await hashPassword(password)}\n`);
    return ExitCode.Ok;
  },
};

async function readPasswordFromPipe(io: CliIo): Promise<string> {
  let text = '';
  io.stdin.setEncoding('utf8');
  for await (const chunk of io.stdin) text += String(chunk);
  // `echo` adds one line ending; anything beyond that is a mistake, not part of the password.
  const password = text.replace(/\r?\n$/, '');
  if (/[\r\n]/.test(password)) throw new UsageError('expected a single line on stdin');
  return password;
}

/** Asks twice (a typo would make an unusable hash); `undefined` when the answers differ. */
async function promptPassword(io: CliIo): Promise<string | undefined> {
  const first = await readHiddenLine('Password: ', io);
  const second = await readHiddenLine('Repeat password: ', io);
  if (first !== second) {
    io.stderr.write('error: the passwords do not match\n');
    return undefined;
  }
  return first;
}

function readHiddenLine(prompt: string, io: CliIo): Promise<string> {
  const { stdin, stderr } = io;
  // Raw mode before the prompt: anything typed once the prompt shows must not be echoed.
  stdin.setRawMode(true);
  stderr.write(prompt);
  stdin.setEncoding('utf8');
  stdin.resume();
  return new Promise((resolveLine) => {
    let line = '';
    const finish = (): void => {
      stdin.off('data', onData);
      stdin.setRawMode(false);
      stdin.pause();
      stderr.write('\n');
    };
    const onData = (chunk: string): void => {
      for (const character of chunk) {
        if (character === '\r' || character === '\n' || character === '\u0004') {
          finish();
          resolveLine(line);
          return;
        }
        if (character === '\u0003') {
          // Raw mode swallows Ctrl-C; honour it like the shell would.
          finish();
          process.exit(130);
        }
        if (character === '\u007f' || character === '\b') line = Array.from(line).slice(0, -1).join('');
        else line += character;
      }
    };
    stdin.on('data', onData);
  });
}
