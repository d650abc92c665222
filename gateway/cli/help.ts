/** `tessera --help` and `tessera help COMMAND`. */
import { envOverrideNames } from '../config/env_overrides.js';
import type { CliCommand } from './command.js';

/** The overview: one line per command. */
export function formatHelp(commands: readonly CliCommand[]): string {
  const names = commands.map((command) => command.words.join(' '));
  const width = Math.max(...names.map((name) => name.length), 'help'.length) + 2;
  const lines = [
    'Tessera: OAuth 2.0 / OpenID Connect token service',
    '',
    'Usage: tessera <command> [options]',
    '',
    'Commands:',
    ...commands.map((command, i) => `  ${(names[i] ?? '').padEnd(width)}${command.summary}`),
    `  ${'help'.padEnd(width)}Show this help, or a command's options: tessera help <command>`,
    `  ${'--version'.padEnd(width)}Print the version`,
    '',
    'Environment variables override the config file:',
    `  ${envOverrideNames.join(', ')}`,
  ];
  return `${lines.join('\n')}\n`;
}

/** A single command's synopsis and options. */
export function formatCommandHelp(command: CliCommand): string {
  const lines = [`Usage: ${command.usage}`, '', command.summary];
  if (command.details.length > 0) lines.push('', ...command.details.map((line) => (line === '' ? '' : `  ${line}`)));
  return `${lines.join('\n')}\n`;
}
