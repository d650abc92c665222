/**
 * The digests of DPoP (workers/dpop/dpop_proof.ts) against the RFCs' own examples, and computed
 * apart with a Hash object for the store keys.
 */
import { calculateJwkThumbprint } from 'jose';
import { createHash } from 'node:crypto';
import t from 'tap';
import { accessTokenHash, dpopJtiKey, jwkThumbprint } from '../../../workers/dpop/dpop_proof.js';

t.test('the JWK thumbprint is RFC 7638 §3.1 example: NzbLsXh8…', async (t) => {
  const jwk = {
    kty: 'RSA',
    n: '0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw',
    e: 'AQAB',
    alg: 'RS256',
    kid: '2011-04-29',
  };
  t.equal(jwkThumbprint(jwk), 'NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs');
  const ec = {
    kty: 'EC',
    crv: 'P-256',
    x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU',
    y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0',
  };
  t.equal(jwkThumbprint(ec), await calculateJwkThumbprint(ec), "an EC key's, as jose computes it");
});

t.test("ath is RFC 9449 §7.1's example", async (t) => {
  t.equal(accessTokenHash('Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU'), 'fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo');
});

t.test("a proof's replay key is SHA-256 of the key's thumbprint and the jti", async (t) => {
  const expected = createHash('sha256').update('thumb\u0000jti-1', 'utf8').digest('base64url');
  t.same(dpopJtiKey('thumb', 'jti-1'), { kind: 'misc', id: `dpop:${expected}` });
  t.not(dpopJtiKey('thumb', 'jti-2').id, dpopJtiKey('thumb', 'jti-1').id);
});
