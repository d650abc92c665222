/** The `tessera` command line (docs/operations.md, "Command line"): picks the command and maps failures to exit codes. */
import { checkConfigCommand } from './check_config_command.js';
import { clientsCommands } from './clients_commands.js';
import { describeError, ExitCode, reportConfigError, UsageError, type CliCommand, type CliIo } from './command.js';
import { hashPasswordCommand } from './hash_password_command.js';
import { hashSecretCommand } from './hash_secret_command.js';
import { formatCommandHelp, formatHelp } from './help.js';
import { keysGenerateCommand } from './keys_generate_command.js';
import { keysListCommand } from './keys_list_command.js';
import { keysRotateCommand } from './keys_rotate_command.js';
import { startCommand } from './start_command.js';
import { packageVersion } from './version.js';
import { ConfigError } from '../config/config_error.js';

const commands: readonly CliCommand[] = [
  startCommand,
  checkConfigCommand,
  hashSecretCommand,
  hashPasswordCommand,
  keysGenerateCommand,
  keysListCommand,
  keysRotateCommand,
  ...clientsCommands,
];

/** Runs one command line (without `node` and the script) and resolves to the exit code. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined || first === '--help' || first === '-h' || (first === 'help' && rest.length === 0)) {
    io.stdout.write(formatHelp(commands));
    return ExitCode.Ok;
  }
  if (first === '--version' && rest.length === 0) {
    io.stdout.write(`tessera ${packageVersion()}\n`);
    return ExitCode.Ok;
  }
  if (first === 'help') {
    const found = findCommand(rest);
    if (found === undefined) return reportUnknownCommand(rest, io);
    io.stdout.write(formatCommandHelp(found.command));
    return ExitCode.Ok;
  }

  const found = findCommand(argv);
  if (found === undefined) return reportUnknownCommand(argv, io);
  const { command, args } = found;
  // `--` ends the options: a secret may legitimately be "--help".
  const options = args.includes('--') ? args.slice(0, args.indexOf('--')) : args;
  if (options.includes('--help') || options.includes('-h')) {
    io.stdout.write(formatCommandHelp(command));
    return ExitCode.Ok;
  }

  const name = command.words.join(' ');
  try {
    return await command.run(args, io);
  } catch (error) {
    if (error instanceof ConfigError) {
      reportConfigError(error, io);
      return ExitCode.InvalidConfig;
    }
    if (error instanceof UsageError || isParseArgsError(error)) {
      io.stderr.write(`error: tessera ${name}: ${describeError(error)}\nUsage: ${command.usage}\n`);
      return ExitCode.Usage;
    }
    io.stderr.write(`error: tessera ${name}: ${describeError(error)}\n`);
    return ExitCode.Failure;
  }
}

function findCommand(argv: readonly string[]): { command: CliCommand; args: string[] } | undefined {
  const command = commands.find((candidate) => candidate.words.every((word, i) => argv[i] === word));
  return command && { command, args: argv.slice(command.words.length) };
}

function reportUnknownCommand(argv: readonly string[], io: CliIo): number {
  const group = commands.find((command) => command.words.length > 1 && command.words[0] === argv[0]);
  const message =
    group === undefined
      ? `unknown command "${argv[0] ?? ''}"`
      : `unknown or missing subcommand for "${argv[0] ?? ''}" (did you mean "tessera ${group.words.join(' ')}"?)`;
  io.stderr.write(`error: ${message}\n\n${formatHelp(commands)}`);
  return ExitCode.Usage;
}

function isParseArgsError(error: unknown): boolean {
  return error instanceof Error && 'code' in error && typeof error.code === 'string' && error.code.startsWith('ERR_PARSE_ARGS_');
}
