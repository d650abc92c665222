// The redeem-once step (workers/grants/redeem_once.ts) against both stores: the MemoryStore and a
// RedisStore on a private redis-server. The grants' own tests cover when each grant calls it;
// here the step itself: one winner, a replay revokes what the item was exchanged for.
import t from 'tap';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { redeemOnce, refuseRedeemed, type RedeemServices, type SingleUseItem } from '../../../workers/grants/redeem_once.js';
import { OAuthError, OAuthErrors } from '../../../core/oauth_errors.js';
import { MemoryStore } from '../../../core/store/memory_store.js';
import { RedisStore } from '../../../core/store/redis_store.js';
import type { Store } from '../../../core/store/store.js';
import { issuedTokensFamily, newFamilyHandle, newFamilyId, newRefreshHandle } from '../../../core/records/refresh_token_handle.js';
import { issuedAccessTokenRecord } from '../../../core/records/family_revocation.js';
import { revokedJtiKey } from '../../../core/records/family_revocation.js';
import { startRedisServer } from '../../helpers/redis_server.js';
import type { TapTest } from '../../core/store/store_conformance.js';

interface CodeRecord {
  clientId: string;
  n: number;
}

const minute = 60_000;
const invalid = (): OAuthError => new OAuthError(OAuthErrors.invalidAuthorizationCode);

interface Harness {
  store: Store;
  services: RedeemServices;
  /** The warnings logged, as `msg` strings. */
  warnings: string[];
  /** A stored item of `owner`, with a refresh token and a live access token in its family. */
  seed(owner?: string): Promise<Seeded>;
}

interface Seeded {
  family: string;
  item: SingleUseItem<CodeRecord>;
  record: CodeRecord;
  /** Retention requests the item's `replayRetentionMs` received: the replayed value. */
  retentionAsked: CodeRecord[];
  /** Whether the family's refresh token is still there. */
  refreshTokenLive(): Promise<boolean>;
  /** Whether the family's access token is on the deny list. */
  accessTokenDenied(): Promise<boolean>;
}

type MakeStores = (t: TapTest) => Promise<Store[]>;

function harness(store: Store): Harness {
  const warnings: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.length > 0) warnings.push((JSON.parse(line) as { msg: string }).msg);
      done();
    },
  });
  const services: RedeemServices = { store, now: Date.now, logger: pino({ level: 'warn' }, sink) };
  let seq = 0;
  return {
    store,
    services,
    warnings,
    async seed(owner = 'client-a') {
      const family = newFamilyId();
      const code = newFamilyHandle('code', family);
      const record: CodeRecord = { clientId: owner, n: ++seq };
      await store.set(code.key, record, minute);
      const refresh = newRefreshHandle(family);
      await store.set(refresh.key, { clientId: owner }, minute);
      const jti = `jti-${family}`;
      const issued = issuedAccessTokenRecord(family, { jti, exp: Math.floor(Date.now() / 1000) + 600 }, Date.now());
      if (issued === undefined) throw new Error('the access token expired at once');
      await store.set(issued.key, issued.value, issued.ttlMs);
      const retentionAsked: CodeRecord[] = [];
      const item: SingleUseItem<CodeRecord> = {
        name: 'test item',
        kind: 'authorization_code',
        key: code.key,
        family,
        clientId: 'client-a',
        invalid,
        replayRetentionMs: (value) => {
          retentionAsked.push(value);
          return minute;
        },
      };
      return {
        family,
        item,
        record,
        retentionAsked,
        refreshTokenLive: async () => (await store.get(refresh.key)) !== null,
        accessTokenDenied: async () => (await store.get(revokedJtiKey(jti))) !== null,
      };
    },
  };
}

/** The error a refused redemption threw, as `error: description`. */
async function refusal(redemption: Promise<unknown>): Promise<string> {
  try {
    await redemption;
  } catch (err) {
    if (err instanceof OAuthError) return `${err.error}: ${err.description}`;
    throw err;
  }
  return 'redeemed';
}

const refused = 'invalid_grant: The authorization code is invalid, expired or already used.';

function runRedeemOnce(t: TapTest, makeStores: MakeStores): void {
  const open = async (t: TapTest): Promise<Harness> => {
    const [store] = await makeStores(t);
    if (store === undefined) throw new Error('no store');
    return harness(store);
  };

  t.test('the first redemption returns the item and consumes it', async (t) => {
    const h = await open(t);
    const seeded = await h.seed();
    t.same(await redeemOnce(h.services, seeded.item), seeded.record);
    t.equal(await h.store.get(seeded.item.key), null, 'consumed');
    t.equal(await h.store.isFamilyRevoked(seeded.family), false);
    t.same(h.warnings, []);
  });

  t.test('the winning redemption writes its successor and companion in the same step', async (t) => {
    const h = await open(t);
    const seeded = await h.seed();
    const successor = newRefreshHandle(seeded.family);
    const companion = issuedAccessTokenRecord(seeded.family, { jti: 'next', exp: Math.floor(Date.now() / 1000) + 600 }, Date.now());
    const value = await redeemOnce(h.services, seeded.item, {
      key: successor.key,
      value: { clientId: 'client-a', next: true },
      ttlMs: minute,
      companion,
    });
    t.same(value, seeded.record);
    t.same(await h.store.get(successor.key), { clientId: 'client-a', next: true });
    const issued = await h.store.familyRecords(issuedTokensFamily(seeded.family), 'at');
    t.same(issued.filter((token) => (token as { jti: string }).jti === 'next').length, 1, 'the companion is written');
  });

  t.test('a replay is refused and revokes the family it was exchanged for, access tokens included', async (t) => {
    const h = await open(t);
    const seeded = await h.seed();
    await redeemOnce(h.services, seeded.item);
    t.equal(await refusal(redeemOnce(h.services, seeded.item)), refused);
    t.same(seeded.retentionAsked, [seeded.record], 'the retention is computed from the replayed record');
    t.equal(await h.store.isFamilyRevoked(seeded.family), true);
    t.equal(await seeded.refreshTokenLive(), false, 'the refresh token is gone');
    t.equal(await seeded.accessTokenDenied(), true, 'the access token is denied');
    t.same(h.warnings, ['test item redeemed twice: its family is revoked']);
  });

  t.test('a replay with a successor writes nothing and revokes the family', async (t) => {
    const h = await open(t);
    const seeded = await h.seed();
    await redeemOnce(h.services, seeded.item);
    const successor = newRefreshHandle(seeded.family);
    t.equal(
      await refusal(redeemOnce(h.services, seeded.item, { key: successor.key, value: { clientId: 'client-a' }, ttlMs: minute })),
      refused,
    );
    t.equal(await h.store.get(successor.key), null);
    t.equal(await h.store.isFamilyRevoked(seeded.family), true);
  });

  t.test('a replay by another client is refused and revokes nothing', async (t) => {
    const h = await open(t);
    const seeded = await h.seed('client-b');
    // The first redemption does not check the owner: the grant did that on the record it read.
    await redeemOnce(h.services, seeded.item);
    t.equal(await refusal(redeemOnce(h.services, seeded.item)), refused);
    t.equal(await h.store.isFamilyRevoked(seeded.family), false);
    t.equal(await seeded.refreshTokenLive(), true);
    t.same(h.warnings, []);
  });

  t.test('an item without replayRetentionMs is refused on replay and revokes nothing', async (t) => {
    const h = await open(t);
    const seeded = await h.seed();
    const item: SingleUseItem<CodeRecord> = {
      name: 'device code',
      kind: 'device_code',
      key: seeded.item.key,
      family: seeded.family,
      clientId: 'client-a',
      invalid,
    };
    await redeemOnce(h.services, item);
    t.equal(await refusal(redeemOnce(h.services, item)), refused);
    t.equal(await h.store.isFamilyRevoked(seeded.family), false);
    t.equal(await seeded.accessTokenDenied(), false);
  });

  t.test('a missing item is refused and revokes nothing', async (t) => {
    const h = await open(t);
    const seeded = await h.seed();
    await h.store.delete(seeded.item.key);
    t.equal(await refusal(redeemOnce(h.services, seeded.item)), refused);
    t.equal(await refusal(refuseRedeemed(h.services, seeded.item)), refused);
    t.equal(await h.store.isFamilyRevoked(seeded.family), false);
    t.same(seeded.retentionAsked, []);
  });

  t.test('refuseRedeemed: a consumed item presented again revokes its family; it always throws', async (t) => {
    const h = await open(t);
    const seeded = await h.seed();
    await redeemOnce(h.services, seeded.item);
    t.equal(await refusal(refuseRedeemed(h.services, seeded.item)), refused);
    t.equal(await h.store.isFamilyRevoked(seeded.family), true);
    t.equal(await seeded.accessTokenDenied(), true);

    const live = await h.seed();
    t.equal(await refusal(refuseRedeemed(h.services, live.item)), refused, 'even an item it finds live is refused');
    t.equal(await h.store.isFamilyRevoked(live.family), false);
  });

  t.test('of 60 parallel redemptions over several connections exactly one succeeds', async (t) => {
    const stores = await makeStores(t);
    const harnesses = stores.map(harness);
    const first = harnesses[0];
    if (first === undefined) throw new Error('no store');
    const seeded = await first.seed();
    const successor = newRefreshHandle(seeded.family);
    const redemptions = Array.from({ length: 60 }, (_, i) => {
      const h = harnesses[i % harnesses.length] as Harness;
      return redeemOnce(h.services, seeded.item, { key: successor.key, value: { clientId: 'client-a', winner: i }, ttlMs: minute });
    });
    const settled = await Promise.allSettled(redemptions);
    const won = settled.filter((s) => s.status === 'fulfilled');
    t.equal(won.length, 1, 'one winner');
    t.same((won[0] as PromiseFulfilledResult<CodeRecord>).value, seeded.record);
    const reasons = settled
      .filter((s): s is PromiseRejectedResult => s.status === 'rejected')
      .map((s) => `${(s.reason as OAuthError).error}`);
    t.same(new Set(reasons), new Set(['invalid_grant']), 'every other one is refused');
    t.equal(reasons.length, 59);
    // The losers saw a replay: what the winner received is revoked with the family.
    t.equal(await first.store.isFamilyRevoked(seeded.family), true);
    t.equal(await first.store.get(successor.key), null);
  });
}

t.test('MemoryStore', async (t) => {
  runRedeemOnce(t, async (t) => {
    const store = new MemoryStore();
    t.teardown(() => store.close());
    return [store];
  });
});

t.test('RedisStore', async (t) => {
  const redis = await startRedisServer();
  t.teardown(() => redis.stop());
  if (redis.warning !== null) t.comment(redis.warning);
  let prefixes = 0;
  runRedeemOnce(t, async (t) => {
    const keyPrefix = `redeem${process.pid}-${++prefixes}:`;
    // Three connections on one key space: the race is between clients, not within one pipeline.
    const stores = [0, 1, 2].map(() => new RedisStore({ url: redis.url, keyPrefix }));
    t.teardown(() => Promise.all(stores.map((store) => store.close())));
    return stores;
  });
});
