import { unpack } from 'msgpackr';
import t from 'tap';
import { redeemChainCall, redisKeyNames } from '../../../core/store/redis_store.js';
import { retiredFilterPositions, type StoreKey } from '../../../core/store/store.js';

/**
 * `tesseraRedeemChain` takes its checks and positions as one packed argument (docs/storage.md,
 * "One round trip per redemption"): ioredis builds a command argument by argument, so eighteen
 * separate ones cost the worker 12-15 µs a refresh. The script's behaviour is the store
 * conformance suite's; this pins the shape both the store and the bench's floor send.
 */
t.test('a refresh sends its checks packed in one argument, the retry bytes and companions beside it', async (t) => {
  const family = 'fam1';
  // Chain token ids are base64url hashes (the retired-id filter reads their bytes).
  const oldId = Buffer.alloc(32, 1).toString('base64url');
  const newId = Buffer.alloc(32, 2).toString('base64url');
  const oldKey: StoreKey = { kind: 'rt', id: oldId, family };
  const newKey: StoreKey = { kind: 'rt', id: newId, family };
  const companion = { key: { kind: 'at', id: 'jti-1', family: `${family}~at` } as StoreKey, value: { exp: 1 }, ttlMs: 60_000 };
  const call = redeemChainCall(
    redisKeyNames('tessera'),
    oldKey,
    newKey,
    [companion],
    { clientId: 'ro.client', now: 1_800_000_000_000, jkt: 'thumb', x5t: undefined, scopes: ['openid', 'api1'], slidingUntil: undefined },
    { limit: 60, windowMs: 60_000, graceMs: 5_000, retry: { v: 2, n: 'x' } },
    1_800_000_600_000,
  );
  t.equal(call.keys.length, 8, 'six keys of the chain, two of the companion');
  t.equal(call.args.length, 4, 'packed checks, retry bytes, the companion’s bytes and TTL');
  const packed = unpack(call.args[0] as Buffer) as unknown[];
  t.same(
    packed,
    [
      'ro.client',
      1_800_000_000_000,
      'thumb',
      '',
      ' openid api1 ',
      '',
      '',
      60,
      60_000,
      1_800_000_600_000,
      oldId,
      newId,
      ...retiredFilterPositions(oldId),
      5_000,
      call.keys[1]?.replace(new RegExp(`${newId}$`), ''),
    ],
    'the eighteen in the order the script reads them',
  );
  t.ok(Buffer.isBuffer(call.args[1]), 'the retry value as bytes of its own (cmsgpack reads no msgpack bin)');
});
