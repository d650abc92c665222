// Basic headers that proved a secret are remembered (gateway/client_authentication/verified_headers.ts,
// docs/endpoints.md): for 60 s at most, never past the secret's expiry, and in bounded memory.
import t from 'tap';
import { maxRememberedHeaders, VerifiedHeaders } from '../../../gateway/client_authentication/verified_headers.js';

const forever = { hash: Buffer.alloc(32), expiresAt: Number.POSITIVE_INFINITY };

t.test('remembered for 60 s', async (t) => {
  let clock = 1_000_000;
  const headers = new VerifiedHeaders<string>(() => clock);
  t.equal(headers.get('Basic a'), undefined, 'nothing before it proved a secret');
  headers.remember('Basic a', 'urn:api1', [forever]);
  t.equal(headers.get('Basic a'), 'urn:api1');
  t.equal(headers.get('Basic b'), undefined, 'another header is not this one');
  clock += 59_999;
  t.equal(headers.get('Basic a'), 'urn:api1');
  clock += 1;
  t.equal(headers.get('Basic a'), undefined, 'checked again after 60 s');
});

t.test('never past the expiry of the secret, and expired secrets do not shorten it', async (t) => {
  let clock = 1_000_000;
  const headers = new VerifiedHeaders<string>(() => clock);
  const expired = { hash: Buffer.alloc(32), expiresAt: clock - 1 };
  const soon = { hash: Buffer.alloc(32), expiresAt: clock + 5_000 };
  headers.remember('Basic a', 'x', [expired, soon, forever]);
  clock += 4_999;
  t.equal(headers.get('Basic a'), 'x');
  clock += 1;
  t.equal(headers.get('Basic a'), undefined);
  headers.remember('Basic b', 'y', [expired, forever]);
  clock += 30_000;
  t.equal(headers.get('Basic b'), 'y', 'an already expired secret is not the bound');
});

t.test('bounded: past the cap the memory starts again', async (t) => {
  const headers = new VerifiedHeaders<number>(() => 0);
  for (let i = 0; i < maxRememberedHeaders; i++) headers.remember(`Basic ${i}`, i, [forever]);
  t.equal(headers.get('Basic 0'), 0);
  headers.remember('Basic new', -1, [forever]);
  t.equal(headers.get('Basic 0'), undefined, 'emptied at the cap');
  t.equal(headers.get('Basic new'), -1);
});
