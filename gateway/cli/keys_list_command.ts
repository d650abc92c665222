/** `tessera keys list --config FILE`: the signing keys a config publishes, and which signs. */
import { readSigningKeyFiles } from '../keys/key_loader.js';
import { ExitCode, type CliCommand } from './command.js';
import { formatTime, loadKeysConfig, withStoredKeys } from './keys_store.js';

const header = ['KID', 'ALG', 'STATE', 'CREATED', 'ACTIVATES', 'EXPIRES'] as const;

export const keysListCommand: CliCommand = {
  words: ['keys', 'list'],
  summary: 'List the signing keys: kid, algorithm, state and schedule',
  usage: 'tessera keys list --config FILE',
  details: [
    '--config FILE   the config of the gateways (required)',
    '',
    'Store-kept keys (no signing.keys, Redis store): every key in the store, oldest first, with its',
    'state: next (published, not signing yet), active (signing) or retired (published until EXPIRES).',
    'Key files: the configured files in order; the first is active, the others published.',
    "Times are UTC. Sealed store-kept keys need the gateways' key-encryption key",
    '(TESSERA_KEY_ENCRYPTION_KEY or keyEncryption.keyFile).',
  ],
  async run(args, io) {
    const config = await loadKeysConfig(args, io);
    const rows: string[][] = [];
    if (config.signing.keys.length > 0) {
      const keys = await readSigningKeyFiles(
        config.signing.keys.map((k) => k.file),
        config.signing.algorithm,
      );
      keys.forEach((key, i) => {
        rows.push([key.kid, key.alg, i === 0 ? 'active' : 'published', '-', '-', '-']);
      });
    } else {
      const schedule = await withStoredKeys(config, io.env, (source) => source.schedule());
      for (const { key, state, expiresAt } of schedule) {
        rows.push([key.kid, key.alg, state, formatTime(key.createdAt), formatTime(key.activatesAt), formatTime(expiresAt)]);
      }
      if (rows.length === 0)
        io.stderr.write('no keys in the store yet: the first gateway to start (or "tessera keys rotate") creates one\n');
    }
    io.stdout.write(formatTable([[...header], ...rows]));
    return ExitCode.Ok;
  },
};

function formatTable(rows: readonly (readonly string[])[]): string {
  const widths = (rows[0] as readonly string[]).map((_, column) => Math.max(...rows.map((row) => (row[column] as string).length)));
  return (
    rows
      .map((row) =>
        row
          .map((cell, column) => cell.padEnd(widths[column] as number))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}
