// The schedule of store-kept keys (gateway/keys/stored_key.ts): states, expiry, and one order on
// every node.
import t from 'tap';
import { generateSigningKey } from '../../../gateway/keys/key_loader.js';
import { publishedSetOf, scheduleKeys, type StoredSigningKey } from '../../../gateway/keys/stored_key.js';

const hour = 3_600_000;
async function stored(activatesAt: number): Promise<StoredSigningKey> {
  const key = await generateSigningKey('ES256');
  return { ...key, recordId: `r-${key.kid}`, createdAt: activatesAt - hour, activatesAt };
}
const [k1, k2, k3, k4] = await Promise.all([stored(0), stored(10 * hour), stored(20 * hour), stored(30 * hour)]);
const all = [k1, k2, k3, k4] as StoredSigningKey[];
const retention = 2 * hour;

t.test('the last key whose activation has come is active; earlier ones are retired, later ones next', async (t) => {
  const now = 21 * hour;
  t.same(
    scheduleKeys(all, retention, now).map((s) => [s.key.kid, s.state, s.expiresAt]),
    [
      [k1?.kid, 'retired', 10 * hour + retention],
      [k2?.kid, 'retired', 20 * hour + retention],
      [k3?.kid, 'active', null],
      [k4?.kid, 'next', null],
    ],
  );
});

t.test('a retired key stays published for the retention after its successor activated, then leaves', async (t) => {
  const now = 21 * hour;
  const set = publishedSetOf(scheduleKeys(all, retention, now), now);
  t.same(
    set.keys.map((k) => k.kid),
    [k4?.kid, k3?.kid, k2?.kid],
    'newest first; k1 expired at 12 h',
  );
  t.same(
    set.activations.map((a) => a.kid),
    [k2?.kid, k3?.kid, k4?.kid],
    'activations oldest first',
  );
  t.notOk(
    set.keys.some((k) => 'recordId' in k || 'activatesAt' in k),
    'the published set carries only key material',
  );
});

t.test('records in any order give the same set', async (t) => {
  const now = 21 * hour;
  const shuffled = [k3, k1, k4, k2] as StoredSigningKey[];
  t.same(publishedSetOf(scheduleKeys(shuffled, retention, now), now), publishedSetOf(scheduleKeys(all, retention, now), now));
});

t.test('before any activation the first key signs', async (t) => {
  t.same(
    scheduleKeys([k2, k3] as StoredSigningKey[], retention, 0).map((s) => s.state),
    ['active', 'next'],
  );
});
