/** `tessera keys rotate --config FILE`: add a store-kept key that signs after the propagation delay. */
import { rotationPolicyOf } from '../config/signing_rotation.js';
import { ExitCode, type CliCommand } from './command.js';
import { formatTime, loadKeysConfig, withStoredKeys } from './keys_store.js';

export const keysRotateCommand: CliCommand = {
  words: ['keys', 'rotate'],
  summary: 'Add a new store-kept signing key that activates after the propagation delay',
  usage: 'tessera keys rotate --config FILE',
  details: [
    '--config FILE   the config of the gateways (required; a Redis store, no signing.keys)',
    '',
    'The new key is published by every gateway within seconds and signs once',
    'signing.rotation.propagation (default: signing.jwksMaxAgeSeconds) has passed; the key it',
    'replaces stays published for signing.rotation.retention. When a key already waits to',
    'activate, nothing is added. With signing.keys, rotate by editing the key files instead',
    '(docs/operations.md, "Signing keys and rotation"). The new key is sealed under the gateways\'',
    'key-encryption key (TESSERA_KEY_ENCRYPTION_KEY or keyEncryption.keyFile), which it needs too.',
  ],
  async run(args, io) {
    const config = await loadKeysConfig(args, io);
    if (config.signing.keys.length > 0) {
      io.stderr.write(
        'error: this config names key files (signing.keys): add a key with "tessera keys generate", list it, and reload the gateways; see docs/operations.md "Signing keys and rotation"\n',
      );
      return ExitCode.Failure;
    }
    const outcome = await withStoredKeys(config, io.env, (source) => source.rotate());
    const { key } = outcome;
    if (!outcome.created) {
      io.stdout.write(
        `A key already waits to activate: ${key.kid} (${key.alg}) signs from ${formatTime(key.activatesAt)}; nothing added.\n`,
      );
      return ExitCode.Ok;
    }
    const propagation = rotationPolicyOf(config).propagationMs / 1000;
    io.stdout.write(
      `Added ${key.kid} (${key.alg}): published now, signs from ${formatTime(key.activatesAt)} (after ${propagation} s of propagation).\n`,
    );
    return ExitCode.Ok;
  },
};
