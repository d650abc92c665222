/**
 * Random bytes for handles and IVs, drawn from a per-thread pool that `randomFillSync` refills
 * 4 KiB at a time. A `randomBytes` call costs about 2.3 µs whatever its size
 * (docs/decisions/0015-refresh-cuts-random-pool-and-packed-values.md), and a refresh drew two of them; Node's own
 * `randomUUID` keeps a cache of random bytes the same way. The bytes are the same CSPRNG's.
 */
import { randomBytes, randomFillSync } from 'node:crypto';

const poolBytes = 4096;
// Its own allocation, never a slice of Node's shared Buffer pool.
const pool = Buffer.allocUnsafeSlow(poolBytes);
let used = poolBytes;

/** `n` fresh random bytes in a Buffer the caller owns; every byte is handed out once. */
export function pooledRandomBytes(n: number): Buffer {
  if (n > poolBytes) return randomBytes(n);
  if (used + n > poolBytes) {
    randomFillSync(pool);
    used = 0;
  }
  const out = Buffer.from(pool.subarray(used, used + n));
  // Handed out: no copy of it stays behind in the pool.
  pool.fill(0, used, used + n);
  used += n;
  return out;
}
