/** `tessera hash-secret SECRET`: the stored form of a client or API resource secret. */
import { hashClientSecret } from '../../core/crypto/client_secret.js';
import { ExitCode, onlyArgument, UsageError, type CliCommand } from './command.js';

export const hashSecretCommand: CliCommand = {
  words: ['hash-secret'],
  summary: 'Print the stored form of a client secret',
  usage: 'tessera hash-secret SECRET',
  details: [
    'Prints Base64(SHA-256(SECRET)) for a "clientSecrets" or "secrets" entry\'s "value".',
    'A secret starting with "-" goes after "--": tessera hash-secret -- -s3cret',
  ],
  async run(args, io) {
    const secret = onlyArgument(args, 'SECRET');
    if (secret === '') throw new UsageError('the secret must not be empty');
    io.stdout.write(`${hashClientSecret(secret)}\n`);
    return ExitCode.Ok;
  },
};
