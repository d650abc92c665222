import t from 'tap';
import { pooledRandomBytes } from '../../../core/crypto/random_pool.js';

t.test('gives the asked number of bytes, more than the pool holds included', async (t) => {
  for (const n of [0, 1, 12, 32, 4096, 5000]) t.equal(pooledRandomBytes(n).length, n, `${n} bytes`);
});

t.test('never hands out the same bytes twice, across many refills of the pool', async (t) => {
  const seen = new Set<string>();
  // 20,000 × 32 bytes: about 156 refills of a 4 KiB pool.
  for (let i = 0; i < 20_000; i++) seen.add(pooledRandomBytes(32).toString('hex'));
  t.equal(seen.size, 20_000);
});

t.test('the caller owns its bytes: later draws do not change them', async (t) => {
  const first = pooledRandomBytes(32);
  const copy = Buffer.from(first);
  for (let i = 0; i < 300; i++) pooledRandomBytes(32);
  t.same(first, copy);
});

t.test('the bytes look uniform: every byte value turns up', async (t) => {
  const counts = new Array<number>(256).fill(0);
  const bytes = pooledRandomBytes(4096 * 4);
  for (const b of bytes) counts[b] = (counts[b] ?? 0) + 1;
  t.ok(
    counts.every((c) => c > 20),
    'each of 256 values seen in 16 KiB (about 64 expected each)',
  );
  const small = Buffer.concat(Array.from({ length: 512 }, () => pooledRandomBytes(32)));
  const smallCounts = new Array<number>(256).fill(0);
  for (const b of small) smallCounts[b] = (smallCounts[b] ?? 0) + 1;
  t.ok(
    smallCounts.every((c) => c > 20),
    'and from the pool itself',
  );
});
