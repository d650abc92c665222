import t from 'tap';
import { SignJWT, createLocalJWKSet, exportJWK, generateKeyPair } from 'jose';
import { tokenSignatureProblem } from '../support/token_signatures.js';

async function signer(kid: string) {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' };
  const sign = (claims: Record<string, unknown>): Promise<string> =>
    new SignJWT(claims).setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid }).sign(privateKey);
  return { jwk, sign };
}

t.test('the depth checks verify token signatures against the published keys', async (t) => {
  const published = await signer('published');
  const other = await signer('published'); // same kid, another key: a forgery
  const keys = createLocalJWKSet({ keys: [published.jwk] });
  const good = await published.sign({ sub: 'm2m' });

  t.equal(
    await tokenSignatureProblem(JSON.stringify({ access_token: good, token_type: 'Bearer' }), keys),
    null,
    'a token signed with a published key passes',
  );
  t.equal(
    await tokenSignatureProblem(JSON.stringify({ access_token: good, id_token: await published.sign({ sub: 'alice' }) }), keys),
    null,
    'so do an access and an ID token',
  );

  const forged = await other.sign({ sub: 'm2m' });
  t.match(
    await tokenSignatureProblem(JSON.stringify({ access_token: forged }), keys),
    /^access_token does not verify/,
    'a token signed with another key under the same kid fails',
  );

  const [header, payload] = good.split('.');
  const zeroed = `${header}.${payload}.${'A'.repeat(86)}`;
  t.match(
    await tokenSignatureProblem(JSON.stringify({ access_token: zeroed }), keys),
    /^access_token does not verify/,
    'a made-up signature fails',
  );
  t.match(
    await tokenSignatureProblem(JSON.stringify({ access_token: good, id_token: forged }), keys),
    /^id_token does not verify/,
    'the ID token is checked too',
  );

  t.equal(await tokenSignatureProblem('{"active":true}', keys), null, 'an answer without tokens has nothing to verify');
  t.equal(await tokenSignatureProblem('not json', keys), null, 'nor has a body that is not JSON (the shape checks report it)');
});
