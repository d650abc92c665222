// at_hash / c_hash (OIDC Core §3.1.3.6): the left half of the token's hash, pinned to known
// digests (FIPS 180-2 SHA-256 and SHA-512 of "abc"), so a change of how it is computed cannot
// change what relying parties check.
import t from 'tap';
import { tokenHash } from '../../../workers/tokens/id_token.js';

t.test('the left half of SHA-256 for ES256, RS256 and PS256', async (t) => {
  for (const alg of ['ES256', 'RS256', 'PS256'] as const) t.equal(tokenHash('abc', alg), 'ungWv48Bz-pBQUDeXa4iIw', alg);
});

t.test('the left half of SHA-512 for EdDSA (Ed25519)', async (t) => {
  t.equal(tokenHash('abc', 'EdDSA'), '3a81oZNherrMQXNJriBBMRLm-k6JqX6iCp7u5ktV05o');
});
