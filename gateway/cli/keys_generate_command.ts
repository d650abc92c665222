/** `tessera keys generate`: write a new private signing key as a JWK file. */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from 'jose';
import { isSigningAlgorithm, signingAlgorithms, type SigningAlgorithm } from '../../core/signing_key.js';
import { ExitCode, UsageError, type CliCommand } from './command.js';

export const keysGenerateCommand: CliCommand = {
  words: ['keys', 'generate'],
  summary: 'Write a new private signing key (JWK file, mode 0600)',
  usage: `tessera keys generate [--alg ${signingAlgorithms.join('|')}] [--out FILE]`,
  details: [
    `--alg ALG    ${signingAlgorithms.join(', ')} (default: ES256)`,
    '--out FILE   where to write the key (default: keys/signing-<alg>-<kid prefix>.jwk.json)',
    '',
    'The key id ("kid") is the key\'s RFC 7638 thumbprint. An existing file is never overwritten.',
  ],
  async run(args, io) {
    const { values } = parseArgs({
      args,
      options: { alg: { type: 'string', default: 'ES256' }, out: { type: 'string' } },
      strict: true,
      allowPositionals: false,
    });
    const algorithm = values.alg;
    if (!isSigningAlgorithm(algorithm)) {
      throw new UsageError(`unsupported --alg "${algorithm}"; use one of ${signingAlgorithms.join(', ')}`);
    }
    const jwk = await generateSigningJwk(algorithm);
    const kid = jwk.kid as string;
    const out = values.out ?? `keys/signing-${algorithm}-${kid.slice(0, 8)}.jwk.json`;

    await mkdir(dirname(out), { recursive: true, mode: 0o700 });
    try {
      // 'wx' fails if the file exists, atomically: no check-then-write race.
      await writeFile(out, `${JSON.stringify(jwk, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
    } catch (error) {
      if (error instanceof Error && 'code' in error && error.code === 'EEXIST') {
        io.stderr.write(`error: ${out} already exists; refusing to overwrite it\n`);
        return ExitCode.Failure;
      }
      throw error;
    }
    io.stdout.write(
      [
        `Wrote a private ${algorithm} signing key to ${out}`,
        `kid: ${kid}`,
        `Use it with: "signing": { "algorithm": "${algorithm}", "keys": [{ "file": "<path relative to the config file>" }] }`,
        '',
      ].join('\n'),
    );
    return ExitCode.Ok;
  },
};

/** A fresh private JWK with `kid` (RFC 7638 thumbprint), `alg` and `use: "sig"`. */
export async function generateSigningJwk(algorithm: SigningAlgorithm): Promise<JWK> {
  const { privateKey } = await generateKeyPair(algorithm, { extractable: true });
  const jwk = await exportJWK(privateKey);
  // The thumbprint covers only the public members, so the published key has the same kid.
  const kid = await calculateJwkThumbprint(jwk, 'sha256');
  return { ...jwk, kid, alg: algorithm, use: 'sig' };
}
