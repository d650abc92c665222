// A worker's signing keys (workers/tokens/signing_key_ring.ts): which key signs when, and a new
// set taken from the gateway without a restart.
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import t from 'tap';
import { generateSigningKey } from '../../../gateway/keys/key_loader.js';
import { KeySetCell } from '../../../wire/key_set_cell.js';
import { publicJwk, type SigningKeyMaterial } from '../../../core/signing_key.js';
import { SigningKeyRing } from '../../../workers/tokens/signing_key_ring.js';

const [a, b, c] = await Promise.all([generateSigningKey('ES256'), generateSigningKey('ES256'), generateSigningKey('ES256')]);
const kidOf = (token: string) => decodeProtectedHeader(token).kid;

t.test('the key whose activation has come signs; a published key that waits does not', async (t) => {
  const cell = KeySetCell.create();
  const now = Date.now();
  cell.write({
    keys: [b, a],
    activations: [
      { kid: a.kid, activatesAt: now - 1000 },
      { kid: b.kid, activatesAt: now + 1000 },
    ],
  });
  const published: string[][] = [];
  const ring = new SigningKeyRing(cell, (keys) => published.push(keys.map((k) => k.kid)));
  t.same(published, [[b.kid, a.kid]], 'the validator got the published keys');
  t.equal(kidOf(ring.signer.sign({ sub: 'x' }, 'at+jwt')), a.kid);
  ring.refresh(now + 999);
  t.equal(ring.signer.kid, a.kid, 'not before its activation');
  ring.refresh(now + 1000);
  t.equal(ring.signer.kid, b.kid, 'from its activation on');
  const token = ring.signer.sign({ sub: 'x' }, 'at+jwt');
  const { protectedHeader } = await jwtVerify(token, createLocalJWKSet({ keys: [publicJwk(b)] }));
  t.equal(protectedHeader.kid, b.kid, 'and its signature verifies with its public key');
});

t.test('a new set from the gateway is taken on the next refresh; a kept key is not imported again', async (t) => {
  const cell = KeySetCell.create();
  cell.write({ keys: [a], activations: [{ kid: a.kid, activatesAt: 0 }] });
  let published: readonly SigningKeyMaterial[] = [];
  const ring = new SigningKeyRing(cell, (keys) => {
    published = keys;
  });
  const first = ring.signer;
  cell.write({ keys: [c, a], activations: [{ kid: a.kid, activatesAt: 0 }] });
  ring.refresh(Date.now());
  t.same(
    published.map((k) => k.kid),
    [c.kid, a.kid],
  );
  t.equal(ring.signer, first, 'the same signer: the key is not imported again');
  cell.write({ keys: [c], activations: [{ kid: c.kid, activatesAt: 0 }] });
  ring.refresh(Date.now());
  t.equal(ring.signer.kid, c.kid, 'a reload that drops the signing key switches at once');
});

t.test('a worker started before the store gave the keys: no signer (a store outage, 503) until the gateway publishes them', async (t) => {
  const writtenEmpty = KeySetCell.create();
  writtenEmpty.write({ keys: [], activations: [] });
  // Never written (the gateway started without the store), or written empty.
  for (const cell of [KeySetCell.create(), writtenEmpty]) {
    const ring = new SigningKeyRing(cell, () => {});
    t.throws(() => ring.signer, { code: 'store_unavailable' }, 'no signer: answered as a store outage');
    cell.write({ keys: [a as SigningKeyMaterial], activations: [{ kid: (a as SigningKeyMaterial).kid, activatesAt: 0 }] });
    ring.refresh(Date.now());
    t.equal(ring.signer.kid, (a as SigningKeyMaterial).kid, 'signs once the set arrives');
  }
});
