// Store ids of handles and PKCE checks are fixed digests (docs/storage.md, RFC 7636): records
// written by one build must be found by the next, so the exact bytes are pinned here.
import t from 'tap';
import { hashHandle, newHandle } from '../../../core/store/handle.js';
import { verifyCodeVerifier } from '../../../core/rules/pkce.js';

t.test('a handle is stored under base64url(SHA-256(handle))', async (t) => {
  // FIPS 180-2 test vector: SHA-256("abc").
  t.equal(hashHandle('abc'), 'ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0');
  // UTF-8 bytes, not UTF-16 code units or latin1.
  t.equal(hashHandle('é'), 'SplVfkAzw1Od4utlRyAXytX5VX96BiWgnxw_biumnEw');
  t.not(hashHandle(newHandle()), hashHandle(newHandle()));
});

t.test('PKCE S256 with the example of RFC 7636 Appendix B', async (t) => {
  const verifier = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
  const challenge = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';
  t.equal(verifyCodeVerifier(verifier, challenge), true);
  t.equal(verifyCodeVerifier(`${verifier.slice(0, -1)}l`, challenge), false, 'one character changed');
  t.equal(verifyCodeVerifier(verifier, `${challenge.slice(0, -1)}N`), false);
  t.equal(verifyCodeVerifier('too-short', challenge), false);
});
