/**
 * The shared store for any number of gateway processes (docs/storage.md), on Redis, a Redis
 * master group behind Sentinel, or Redis Cluster.
 *
 * ## Key layout
 *
 * Every key starts with the configured prefix (default `tessera:`, written `<p>` below) and every
 * key has a TTL (`PX`); nothing is ever written without one.
 *
 * | Key | Type | Holds |
 * |---|---|---|
 * | `<p><kind>:<id>` | string | a standalone record |
 * | `<p>{<family>}:<kind>:<id>` | string | a record of a family |
 * | `<p>{<family>}:members` | set | the keys of the family's records; TTL of its longest-lived member |
 * | `<p>{<family>}:revoked` | string | revocation marker; refuses later writes into the family |
 * | `<p>{<family>}:listed` | sorted set | the family's listing ({@link Store.listFamily}): members `<name>\0<kind>:<id>`, all of score 0, in byte order (`ZRANGEBYLEX`); TTL of its longest-lived record |
 * | `<p>{<family>}:chain` | hash | a refresh-token chain's state: last rotation, rate-limit count (docs/storage.md, "Refresh-token chains") |
 * | `<p>{<family>}:retired` | string | the chain's Bloom filter of retired token ids, 8192 bits |
 * | `<p>{<family>}~<name>:…` | | a sub-family (`subFamily`): the three rows above for its own records, in its family's slot |
 * | `<p>ctr:<name>` | string | a fixed-window counter; TTL = the rest of the window |
 *
 * `<id>` is base64url(SHA-256(handle)) (docs/storage.md: never the handle itself). The
 * `{<family>}` hash tag puts a family in one Cluster slot, so the scripts that touch several of its
 * keys stay atomic there (docs/storage.md, "Redis key layout").
 *
 * A record's value is one header byte followed by the msgpackr body: `0` live, `1` consumed.
 * Consuming overwrites only that byte (`SETRANGE`), which keeps the key's TTL, so a consumed
 * record stays until it would have expired and a replay is still recognised.
 *
 * ## Atomicity
 *
 * consume, rotate, rotateChain, chainLookup, redeemChain, redeemRecord, writeWhileLive, revokeFamily, putIfAbsent, replaceIfUnchanged, a write into a family, a delete
 * from a family and increment each run as one Lua script (`defineCommand`, sent as EVALSHA); plain writes, reads and
 * deletes of standalone keys are single commands. Nothing reads then writes from the client.
 *
 * ## Replication
 *
 * Redis replicates asynchronously: a write the master acknowledged may not have reached the
 * replica that a failover promotes, and is then lost (a rotation the client saw, a consumed code).
 * With `waitForReplicas` (Sentinel only) every write (the chain's rotation and lookup included)
 * is followed by `WAIT n` on the same connection; fewer acknowledgements within the call's deadline, or a connection replaced in
 * between, fail the call like an outage (the write may still stand, as after a timeout).
 * docs/operations.md, "What a failover costs".
 *
 * ## Failure
 *
 * Every backend failure rejects with {@link StoreUnavailableError} within about
 * `commandTimeoutMs`: commands are never queued while disconnected (a queued consume or rotate
 * could run after its caller was already told it failed, and so lose a refresh token), an
 * in-flight command is not resent after a reconnect, and each call carries its own deadline (one
 * timer, #runBounded; ioredis's per-command timeout is not used). The
 * client keeps reconnecting in the background with a capped backoff.
 */
import { Cluster, Redis } from 'ioredis';
import type { ClusterOptions, RedisOptions } from 'ioredis';
import { packBytes, packRecordText, packRecordWithHeader, unpackRecord } from './record_codec.js';
import { derivedRecordSpec, recordFieldsLua } from './record_fields.js';
import {
  FamilyRevokedError,
  StoreUnavailableError,
  assertFamilyName,
  assertListable,
  assertListedName,
  assertOneSlot,
  assertPageLimit,
  assertChain,
  assertRotatable,
  companionList,
  retiredFilterBits,
  retiredFilterPositions,
  slotFamily,
  toTtlMs,
} from './store.js';
import type {
  ChainChecks,
  ChainLookup,
  ChainPolicy,
  ChainRedeemPolicy,
  ChainRedemption,
  ChainRotation,
  CompanionRecord,
  ConsumeResult,
  CounterResult,
  FamilyPage,
  FamilyScan,
  ListedRecord,
  DerivedRecord,
  RecordKind,
  RedeemChecks,
  Redemption,
  Replacement,
  Store,
  StoreKey,
} from './store.js';

/** What every Redis store takes, whichever way it finds its servers. */
export interface RedisStoreCommonOptions {
  /** Prepended to every key. Default `tessera:`. */
  keyPrefix?: string;
  /** Bound on one store call, connection wait included. Default 500 ms. */
  commandTimeoutMs?: number;
  /** Bound on establishing one connection. Default `max(1000, 4 × commandTimeoutMs)`. */
  connectTimeoutMs?: number;
  /** Longest pause between two reconnection attempts. Default 2000 ms. */
  maxReconnectDelayMs?: number;
  /** Connection errors, for logging; they are otherwise only visible as failed calls. */
  onError?: (err: Error) => void;
  /** Told each command's name, duration and failure (the store command metrics). */
  observe?: (command: string, seconds: number, failed: boolean) => void;
}

/** One Redis server (`redis://` or `rediss://` URL). */
export interface RedisStandaloneOptions extends RedisStoreCommonOptions {
  url: string;
}

/** A Redis Cluster, given any of its nodes (`redis://host:port`). */
export interface RedisClusterStoreOptions extends RedisStoreCommonOptions {
  nodes: readonly string[];
}

/**
 * A master group watched by Redis Sentinel (docs/operations.md, "Redis Sentinel"): the client asks
 * the Sentinels for the current master and follows it through failovers.
 */
export interface RedisSentinelStoreOptions extends RedisStoreCommonOptions {
  /** The Sentinels, `host:port` each; any one that answers is enough. */
  sentinels: readonly string[];
  /** The master group's name (`sentinel monitor <name> …`). */
  name: string;
  /** Password (and ACL user) of the Redis master and replicas. */
  password?: string;
  username?: string;
  /** Password (and ACL user) of the Sentinels, when they require one. */
  sentinelPassword?: string;
  sentinelUsername?: string;
  /** TLS to the Sentinels and to the Redis servers. */
  tls?: boolean;
  /**
   * Replicas that must acknowledge each write (`WAIT`) before the call succeeds; 0 (default) = do
   * not wait. See "Replication" above.
   */
  waitForReplicas?: number;
}

export type RedisStoreOptions = RedisStandaloneOptions | RedisClusterStoreOptions | RedisSentinelStoreOptions;

/** `host:port` (a bracketed IPv6 host allowed) as ioredis wants a Sentinel's address. */
export function parseSentinelAddress(address: string): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:\s]+)):(\d{1,5})$/.exec(address);
  const port = Number(match?.[3]);
  if (match === null || port < 1 || port > 65535) throw new Error(`not a host:port Sentinel address: ${address}`);
  return { host: match[1] ?? match[2] ?? '', port };
}

/**
 * After a failover the old master may still hold our connection for a moment, now as a replica:
 * a write there answers READONLY. Reconnecting asks the Sentinels for the new master; the failed
 * command is not resent (1, not 2), as with every other failure ("Failure" above).
 */
function reconnectOnReadonly(err: Error): 1 | false {
  return err.message.startsWith('READONLY') ? 1 : false;
}

const liveHeader = 0;
const consumedHeader = 1;
const headerBytes = 1;

/**
 * Time a call waits past `commandTimeoutMs` before it gives up: room for the answer to a script
 * Redis ran just before its deadline to come back ({@link RedisStore}, "Late rotations").
 */
const deadlineSlackMs = 50;

/** How often each connection reads Redis's clock ({@link RedisStore}, "Late rotations"). */
const clockSampleEveryMs = 1000;
/** How long the tightest reading is trusted before a looser, newer one replaces it. */
const clockSampleKeptMs = 5000;

/**
 * Scripts return arrays of integers and bulk strings only: those replies look the same under
 * RESP2 and RESP3 (a Lua `false` would be a null in one and a boolean in the other).
 * Optional KEYS: a family's members set and revocation marker are passed only for family keys.
 */

/**
 * Lua that writes a script's companion records, passed as (key, members key) pairs from
 * KEYS[firstKey] and (bytes, ttl) pairs from ARGV[firstArg]: each with its TTL, listed in its
 * members set, which lives as long as its longest member. One fragment for the scripts that share it.
 */
function writeCompanions(firstKey: number, firstArg: number | string): string {
  return `local k, a = ${firstKey}, ${firstArg}
while KEYS[k] do
  local companionTtl = tonumber(ARGV[a + 1])
  redis.call('SET', KEYS[k], ARGV[a], 'PX', companionTtl)
  redis.call('SADD', KEYS[k + 1], KEYS[k])
  if redis.call('PTTL', KEYS[k + 1]) < companionTtl then redis.call('PEXPIRE', KEYS[k + 1], companionTtl) end
  k, a = k + 2, a + 2
end`;
}

/**
 * Lua that writes the record at KEYS[1] as `value` for `ttl` (in scope) and lists it in its
 * family's members set (KEYS[2]) and listing (KEYS[4], member ARGV[4]) when those are passed, each
 * living as long as its longest entry. For the scripts whose KEYS are record [, members, revoked
 * [, listing]]: tesseraWrite and tesseraReplaceIfUnchanged.
 */
function writeRecord(value: string): string {
  return `redis.call('SET', KEYS[1], ${value}, 'PX', ttl)
if KEYS[2] then
  redis.call('SADD', KEYS[2], KEYS[1])
  if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
end
if KEYS[4] then
  redis.call('ZADD', KEYS[4], 0, ARGV[4])
  if redis.call('PTTL', KEYS[4]) < ttl then redis.call('PEXPIRE', KEYS[4], ttl) end
end`;
}

/**
 * Lua that deletes the record at KEYS[1] and forgets it in its family's members set and listing,
 * given as Lua expressions (a key absent from KEYS reads as nil: nothing to forget there); leaves
 * `removed`, the records deleted, in scope. The same in tesseraDeleteMember and
 * tesseraReplaceIfUnchanged, whose KEYS differ.
 */
function deleteRecord(at: { members: string; listing: string; listingMember: string }): string {
  return `local removed = redis.call('DEL', KEYS[1])
if ${at.members} then redis.call('SREM', ${at.members}, KEYS[1]) end
if ${at.listing} then redis.call('ZREM', ${at.listing}, ${at.listingMember}) end`;
}

/**
 * The writes of a rotation, the same in tesseraRotateChain and tesseraRedeemChain (docs/storage.md,
 * "Refresh-token chains"): the successor and its companions, the filter of retired ids, the chain
 * record, then the old record deleted last, so that a refused write leaves it live. KEYS: old,
 * new, members, revoked, chain, filter, companions from `companionKey`; in scope: `current`,
 * `now`, `count`, `windowEnd`, `ttl`, `chainTtl`; ARGV positions as named (the new id follows the
 * old one).
 */
function rotationWrites(at: {
  successor: string;
  companionKey: number;
  companionArg: number;
  filterArg: number;
  oldIdArg: number;
  retryArg: number;
}): string {
  return `redis.call('SET', KEYS[2], ${at.successor}, 'PX', ttl)
redis.call('SADD', KEYS[3], KEYS[2], KEYS[5], KEYS[6])
local membersTtl = math.max(ttl, chainTtl)
if redis.call('PTTL', KEYS[3]) < membersTtl then redis.call('PEXPIRE', KEYS[3], membersTtl) end
${writeCompanions(at.companionKey, at.companionArg)}
-- The filter is written whole at its first use: SETBIT alone grows the string as its bits come,
-- with Redis's doubling allocation, so the family's bytes would depend on the order of its ids.
if redis.call('EXISTS', KEYS[6]) == 0 then redis.call('SET', KEYS[6], string.rep(string.char(0), ${retiredFilterBits / 8})) end
for i = ${at.filterArg}, ${at.filterArg + 3} do redis.call('SETBIT', KEYS[6], tonumber(ARGV[i]), 1) end
redis.call('HSET', KEYS[5], 'c', count + 1, 'w', windowEnd, 'p', ARGV[${at.oldIdArg}], 's', ARGV[${at.oldIdArg + 1}], 't', now,
  'r', ARGV[${at.retryArg}], 'v', string.char(${consumedHeader}) .. string.sub(current, 2))
if redis.call('PTTL', KEYS[5]) < chainTtl then redis.call('PEXPIRE', KEYS[5], chainTtl) end
if redis.call('PTTL', KEYS[6]) < chainTtl then redis.call('PEXPIRE', KEYS[6], chainTtl) end
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[3], KEYS[1])
return {1, current}`;
}

/**
 * A chain token that is no longer live (docs/storage.md, "Refresh-token chains"), for the lookup
 * and for the one-step refresh: the grace window's successor for a retry of the chain's last
 * rotation (counted against the family's rate), a replay when the family's filter of retired ids
 * holds the id, else missing. A Lua function both scripts include, so the rule exists once.
 */
const goneTokenLua = `
local function goneToken(chainKey, filterKey, oldId, grace, limit, window, successorPrefix, positions, now)
  local state = redis.call('HMGET', chainKey, 'p', 's', 't', 'r', 'v', 'c', 'w')
  if not state[5] then return {0} end
  if state[1] == oldId then
    if grace > 0 and now - tonumber(state[3]) < grace then
      local successor = redis.call('GET', successorPrefix .. state[2])
      if successor and string.byte(successor, 1) == ${liveHeader} then
        local count, windowEnd = tonumber(state[6]) or 0, tonumber(state[7]) or 0
        if windowEnd <= now then count, windowEnd = 0, now + window end
        if count >= limit then return {4, windowEnd - now} end
        redis.call('HSET', chainKey, 'c', count + 1, 'w', windowEnd)
        return {5, successor, state[2], state[4]}
      end
    end
    return {2, state[5]}
  end
  for _, position in ipairs(positions) do
    if redis.call('GETBIT', filterKey, position) == 0 then return {0} end
  end
  return {2, state[5]}
end`;

/**
 * The one-step refresh's arguments travel packed (docs/decisions/0028): its eighteen checks and
 * positions as one msgpack array in ARGV[1], the retry value's bytes in ARGV[2] (Redis's cmsgpack
 * reads no msgpack bin), then the companions' pairs. ioredis builds each argument of a command
 * one by one (a quarter of a refresh's worker CPU went to ioredis, most of it there); one packed
 * argument cost the client 12-15 µs less per call in a probe. The script rebuilds the positional
 * ARGV it always read (a local of the same name), so its body and shared fragments stay as they are.
 */
const packedChainArgCount = 18;
const packedChainRetryArg = 7;
const unpackChainArgsLua = `local ARGV = (function(sent)
  local args = cmsgpack.unpack(sent[1])
  args[${packedChainRetryArg}] = sent[2]
  for i = 3, #sent do args[${packedChainArgCount - 2} + i] = sent[i] end
  return args
end)(ARGV)`;

const scripts = {
  // KEYS: record [, members, revoked [, listing]]. ARGV: bytes, ttl, '1' = only when absent
  // [, listing member]. Reply: {0} family revoked | {1} written | {2, current} a live record was
  // already there.
  tesseraWrite: `
local ttl = tonumber(ARGV[2])
if KEYS[3] and redis.call('EXISTS', KEYS[3]) == 1 then return {0} end
if ARGV[3] == '1' then
  local current = redis.call('GET', KEYS[1])
  if current and string.byte(current, 1) == ${liveHeader} then return {2, current} end
end
${writeRecord('ARGV[1]')}
return {1}`,
  // Compare-and-set (Store.replaceIfUnchanged). KEYS: record [, members, revoked [, listing]].
  // ARGV: expected bytes, next bytes ('' = delete), ttl [, listing member]. Reply: {0} missing |
  // {1} replaced | {2, current} another live value is stored. Bytes compare with their header, so
  // a consumed record never equals a live expected value.
  tesseraReplaceIfUnchanged: `
if KEYS[3] and redis.call('EXISTS', KEYS[3]) == 1 then return {0} end
local current = redis.call('GET', KEYS[1])
if not current or string.byte(current, 1) ~= ${liveHeader} then return {0} end
if current ~= ARGV[1] then return {2, current} end
if ARGV[2] == '' then
  ${deleteRecord({ members: 'KEYS[2]', listing: 'KEYS[4]', listingMember: 'ARGV[4]' })}
  return {1}
end
local ttl = tonumber(ARGV[3])
${writeRecord('ARGV[2]')}
return {1}`,
  // KEYS: record. Reply: {0} missing | {1, value} consumed now | {2, value} consumed before.
  tesseraConsume: `
local current = redis.call('GET', KEYS[1])
if not current then return {0} end
if string.byte(current, 1) ~= ${liveHeader} then return {2, current} end
redis.call('SETRANGE', KEYS[1], 0, string.char(${consumedHeader}))
return {1, current}`,
  // KEYS: old, new [, members, revoked [, (companion, companion's members)…]]. ARGV: bytes, ttl
  // [, (companion bytes, companion ttl)…]. Reply as tesseraConsume; the writes come before the
  // consume so that a refused write (OOM) leaves the old record live.
  tesseraRotate: `
if KEYS[4] and redis.call('EXISTS', KEYS[4]) == 1 then return {0} end
local current = redis.call('GET', KEYS[1])
if not current then return {0} end
if string.byte(current, 1) ~= ${liveHeader} then return {2, current} end
local ttl = tonumber(ARGV[2])
redis.call('SET', KEYS[2], ARGV[1], 'PX', ttl)
if KEYS[3] then
  redis.call('SADD', KEYS[3], KEYS[2])
  if redis.call('PTTL', KEYS[3]) < ttl then redis.call('PEXPIRE', KEYS[3], ttl) end
end
${writeCompanions(5, 3)}
redis.call('SETRANGE', KEYS[1], 0, string.char(${consumedHeader}))
return {1, current}`,
  // A refresh-token chain's rotation (docs/storage.md, "Refresh-token chains"). KEYS: old, new,
  // members, revoked, chain, retired-id filter [, (companion, companion's members)…]. ARGV: bytes,
  // ttl, retry bytes, limit, window, chain ttl, deadline ('' = none), old id, new id, four filter
  // positions [, (companion bytes, companion ttl)…]. Reply: {0} missing | {1, old} rotated |
  // {2, retired} replayed | {3} reached Redis after the deadline: nothing done | {4, ms} limited.
  // The old record is deleted last, after every write, so that a refused write leaves it live.
  tesseraRotateChain: `
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local deadline = tonumber(ARGV[7])
if deadline and now > deadline then return {3} end
if redis.call('EXISTS', KEYS[4]) == 1 then return {0} end
local current = redis.call('GET', KEYS[1])
if not current then
  local retired = redis.call('HGET', KEYS[5], 'v')
  if not retired then return {0} end
  if redis.call('HGET', KEYS[5], 'p') == ARGV[8] then return {2, retired} end
  for i = 10, 13 do
    if redis.call('GETBIT', KEYS[6], tonumber(ARGV[i])) == 0 then return {0} end
  end
  return {2, retired}
end
if string.byte(current, 1) ~= ${liveHeader} then return {2, current} end
local state = redis.call('HMGET', KEYS[5], 'c', 'w')
local count, windowEnd = tonumber(state[1]) or 0, tonumber(state[2]) or 0
if windowEnd <= now then count, windowEnd = 0, now + tonumber(ARGV[5]) end
if count >= tonumber(ARGV[4]) then return {4, windowEnd - now} end
local ttl = tonumber(ARGV[2])
local chainTtl = tonumber(ARGV[6])
${rotationWrites({ successor: 'ARGV[1]', companionKey: 7, companionArg: 14, filterArg: 10, oldIdArg: 8, retryArg: 3 })}`,
  // For a chain token \`get\` no longer finds. KEYS: old, revoked, chain, retired-id filter. ARGV:
  // old id, grace, limit, window, the successor's key without its id, four filter positions.
  // Reply: {0} missing | {2, retired} replayed | {4, ms} limited | {5, successor, its id, retry}.
  // The grace window counts on Redis's clock from the rotation's own write ('t').
  tesseraChainLookup: `
${goneTokenLua}
if redis.call('EXISTS', KEYS[2]) == 1 then return {0} end
local current = redis.call('GET', KEYS[1])
if current then
  if string.byte(current, 1) ~= ${liveHeader} then return {2, current} end
  return {0}
end
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
return goneToken(KEYS[3], KEYS[4], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5],
  {tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])}, now)`,
  // A refresh in one step (docs/storage.md, "One round trip per redemption"): tesseraRotateChain of
  // a record it checks itself, or tesseraChainLookup of a token already gone. KEYS: old, new,
  // members, revoked, chain, retired-id filter [, (companion, companion's members)…]. ARGV: client
  // id, the caller's now, jkt ('' = none), x5t ('' = none), ' '-framed scopes the record may hold,
  // sliding expiry ('' = absolute), retry bytes, limit, window, deadline ('' = none), old id, new id,
  // four filter positions, grace, the successor's key without its id [, (companion bytes, companion
  // ttl)…], sent packed ({@link packedChainArgs}). Reply: as tesseraRotateChain and
  // tesseraChainLookup, and {6, current}: live but a check did not pass, nothing done. The
  // successor is the old record with its expiresAt rewritten.
  tesseraRedeemChain: `
${recordFieldsLua}
${goneTokenLua}
${unpackChainArgsLua}
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local deadline = tonumber(ARGV[10])
if deadline and now > deadline then return {3} end
if redis.call('EXISTS', KEYS[4]) == 1 then return {0} end
local current = redis.call('GET', KEYS[1])
if not current then
  return goneToken(KEYS[5], KEYS[6], ARGV[11], tonumber(ARGV[17]), tonumber(ARGV[8]), tonumber(ARGV[9]), ARGV[18],
    {tonumber(ARGV[13]), tonumber(ARGV[14]), tonumber(ARGV[15]), tonumber(ARGV[16])}, now)
end
if string.byte(current, 1) ~= ${liveHeader} then return {2, current} end
local ok, fields = pcall(recordFields, current, 2)
if not ok or not fields then return {6, current} end
local callerNow = tonumber(ARGV[2])
local expiresAt = fieldValue(current, fields['expiresAt'])
local absolute = fieldValue(current, fields['absoluteExpiresAt'])
if fieldValue(current, fields['clientId']) ~= ARGV[1] or type(expiresAt) ~= 'number' or type(absolute) ~= 'number'
  or expiresAt <= callerNow or absolute <= callerNow then return {6, current} end
for i, name in ipairs({'jkt', 'x5t'}) do
  if fields[name] and (ARGV[2 + i] == '' or fieldValue(current, fields[name]) ~= ARGV[2 + i]) then return {6, current} end
end
local scopes = fieldValue(current, fields['scopes'])
if type(scopes) ~= 'table' or #scopes == 0 then return {6, current} end
for _, scope in ipairs(scopes) do
  if type(scope) ~= 'string' or not string.find(ARGV[5], ' ' .. scope .. ' ', 1, true) then return {6, current} end
end
local state = redis.call('HMGET', KEYS[5], 'c', 'w')
local count, windowEnd = tonumber(state[1]) or 0, tonumber(state[2]) or 0
if windowEnd <= now then count, windowEnd = 0, now + tonumber(ARGV[9]) end
if count >= tonumber(ARGV[8]) then return {4, windowEnd - now} end
local nextExpiry = absolute
local sliding = tonumber(ARGV[6])
if sliding and sliding < absolute then nextExpiry = sliding end
local span = fields['expiresAt']
local successorBytes = string.sub(current, 1, span[1] - 1) .. string.char(0xcb) .. struct.pack('>d', nextExpiry) .. string.sub(current, span[2])
local ttl = math.ceil(nextExpiry - callerNow)
local chainTtl = math.max(1000, math.ceil(absolute - callerNow))
${rotationWrites({ successor: 'successorBytes', companionKey: 7, companionArg: 19, filterArg: 13, oldIdArg: 11, retryArg: 7 })}`,
  // A code or device code redeemed in one step (docs/storage.md, "One round trip per redemption"):
  // checked on its fields, consumed, and the record derived from it (a refresh token) written with
  // the companions. KEYS: record, derived (the record again when none), members, revoked
  // [, (companion, companion's members)…]. ARGV, read in order: ' '-framed scopes the record may
  // hold; equal checks (count, then name, 'v' or 'n' (must be absent), value); bound checks
  // (the same); later checks (count, then name, number); the derived record's scope ('' = none),
  // ttl, copied names (count, names), nested maps (count, then name, count, names), set pairs
  // (count, packed pairs) [, (companion bytes, companion ttl)…].
  // Reply: {0} missing | {1, record, 1 = derived written} | {2, record} replayed | {6, record}
  // live but a check did not pass: nothing done.
  tesseraRedeemRecord: `
${recordFieldsLua}
local a = 1
local function arg()
  a = a + 1
  return ARGV[a - 1]
end
if redis.call('EXISTS', KEYS[4]) == 1 then return {0} end
local current = redis.call('GET', KEYS[1])
if not current then return {0} end
if string.byte(current, 1) ~= ${liveHeader} then return {2, current} end
local ok, fields = pcall(recordFields, current, 2)
if not ok or not fields then return {6, current} end
local function value(name) return fieldValue(current, fields[name]) end
local framed = arg()
for _ = 1, tonumber(arg()) do
  local name, mode, wanted = arg(), arg(), arg()
  if mode == 'n' then
    if fields[name] then return {6, current} end
  elseif value(name) ~= wanted then return {6, current} end
end
for _ = 1, tonumber(arg()) do
  local name, mode, wanted = arg(), arg(), arg()
  if fields[name] and (mode == 'n' or value(name) ~= wanted) then return {6, current} end
end
for _ = 1, tonumber(arg()) do
  local name, after = arg(), tonumber(arg())
  local v = value(name)
  if type(v) ~= 'number' or not (v > after) then return {6, current} end
end
local scopes = value('scopes')
if type(scopes) ~= 'table' or #scopes == 0 then return {6, current} end
local granted = {}
for _, scope in ipairs(scopes) do
  if type(scope) ~= 'string' or not string.find(framed, ' ' .. scope .. ' ', 1, true) then return {6, current} end
  granted[scope] = true
end
local whenScope, ttl = arg(), tonumber(arg())
local copy = {}
for _ = 1, tonumber(arg()) do copy[#copy + 1] = arg() end
local nests = {}
for _ = 1, tonumber(arg()) do
  local name, inner = arg(), {}
  for _ = 1, tonumber(arg()) do inner[#inner + 1] = arg() end
  nests[#nests + 1] = {name, inner}
end
local n, body = tonumber(arg()), arg()
local function packedName(name) return string.char(0xa0 + #name) .. name end
local function mapHeader(count)
  if count < 16 then return string.char(0x80 + count) end
  return string.char(0xde, math.floor(count / 256), count % 256)
end
local function span(name) return string.sub(current, fields[name][1], fields[name][2] - 1) end
local derived = false
if whenScope ~= '' and granted[whenScope] then
  for _, name in ipairs(copy) do
    if fields[name] then n, body = n + 1, body .. packedName(name) .. span(name) end
  end
  for _, nest in ipairs(nests) do
    local m, inner = 0, ''
    for _, name in ipairs(nest[2]) do
      if fields[name] then m, inner = m + 1, inner .. packedName(name) .. span(name) end
    end
    n, body = n + 1, body .. packedName(nest[1]) .. mapHeader(m) .. inner
  end
  redis.call('SET', KEYS[2], string.char(${liveHeader}) .. mapHeader(n) .. body, 'PX', ttl)
  redis.call('SADD', KEYS[3], KEYS[2])
  if redis.call('PTTL', KEYS[3]) < ttl then redis.call('PEXPIRE', KEYS[3], ttl) end
  derived = true
end
${writeCompanions(5, 'a')}
redis.call('SETRANGE', KEYS[1], 0, string.char(${consumedHeader}))
if derived then return {1, current, 1} end
return {1, current, 0}`,
  // KEYS: guards… [, record, record's members]. ARGV: guard count [, bytes, ttl].
  // Reply: {1} every guard live (and the record written) | {0} a guard was not, nothing written.
  tesseraWriteWhileLive: `
local n = tonumber(ARGV[1])
for i = 1, n do
  if redis.call('GETRANGE', KEYS[i], 0, 0) ~= string.char(${liveHeader}) then return {0} end
end
if KEYS[n + 1] then
  local ttl = tonumber(ARGV[3])
  redis.call('SET', KEYS[n + 1], ARGV[2], 'PX', ttl)
  redis.call('SADD', KEYS[n + 2], KEYS[n + 1])
  if redis.call('PTTL', KEYS[n + 2]) < ttl then redis.call('PEXPIRE', KEYS[n + 2], ttl) end
end
return {1}`,
  // KEYS: members, revoked, listing. ARGV: ttl. Reply: records removed. The members are keys of
  // the same hash tag, so they live in this script's slot.
  tesseraRevoke: `
local removed = 0
for _, member in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  removed = removed + redis.call('DEL', member)
end
redis.call('DEL', KEYS[1], KEYS[3])
local ttl = tonumber(ARGV[1])
if redis.call('PTTL', KEYS[2]) < ttl then redis.call('SET', KEYS[2], '1', 'PX', ttl) end
return removed`,
  // KEYS: record, members [, listing]. ARGV: [listing member]. Reply: records removed.
  tesseraDeleteMember: `
${deleteRecord({ members: 'KEYS[2]', listing: 'KEYS[3]', listingMember: 'ARGV[1]' })}
return removed`,
  // One page of a family's listing. KEYS: listing. ARGV: the first name's ZRANGEBYLEX bound,
  // records wanted, the family's record key prefix, most names read. Reply: {names read, the last
  // name read, (name, record)…}. Names whose record is gone are forgotten; consumed ones skipped.
  // The record keys share the listing's hash tag, so they live in this script's slot.
  tesseraListPage: `
local want, most = tonumber(ARGV[2]), tonumber(ARGV[4])
local from, read, last, out = ARGV[1], 0, '', {}
while #out < 2 * want and read < most do
  local batch = redis.call('ZRANGEBYLEX', KEYS[1], from, '+', 'LIMIT', 0, math.min(want - #out / 2, most - read))
  if #batch == 0 then break end
  for _, member in ipairs(batch) do
    read = read + 1
    local at = string.find(member, '\\0', 1, true)
    last = string.sub(member, 1, at - 1)
    local value = redis.call('GET', ARGV[3] .. string.sub(member, at + 1))
    if not value then redis.call('ZREM', KEYS[1], member)
    elseif string.byte(value, 1) == ${liveHeader} then
      out[#out + 1] = last
      out[#out + 1] = value
    end
  end
  from = '(' .. batch[#batch]
end
table.insert(out, 1, last)
table.insert(out, 1, read)
return out`,
  // KEYS: listing, records…. ARGV: their listing members. Reply: records listed (those live).
  tesseraListIfLive: `
local listed = 0
for i = 2, #KEYS do
  if redis.call('GETRANGE', KEYS[i], 0, 0) == string.char(${liveHeader}) then
    redis.call('ZADD', KEYS[1], 0, ARGV[i - 1])
    local ttl = redis.call('PTTL', KEYS[i])
    if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
    listed = listed + 1
  end
end
return listed`,
  // KEYS: members, then records that read as gone. Reply: members forgotten. Checked again here, so
  // a record written since the read keeps its membership.
  tesseraForgetGone: `
local forgotten = 0
for i = 2, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 0 then forgotten = forgotten + redis.call('SREM', KEYS[1], KEYS[i]) end
end
return forgotten`,
  // KEYS: counter. ARGV: window. Reply: {count, ms left}. The first increment opens the window.
  tesseraIncrement: `
local count = redis.call('INCRBY', KEYS[1], ARGV[2])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  ttl = tonumber(ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return {count, ttl}`,
} as const;

/** The scripts as the store defines them: the bench's floor sends the same ones (bench/support/store_command_cost.ts). */
export { scripts as redisStoreScripts };

type ScriptName = keyof typeof scripts;
export type ScriptArg = string | Buffer | number;
/** The `…Buffer` variants `defineCommand` adds: bulk replies arrive as Buffers, not strings. */
type ScriptCommands = Record<`${ScriptName}Buffer`, (numKeys: number, ...args: ScriptArg[]) => Promise<unknown>>;

type Client = Redis | Cluster;

/**
 * Redis error replies that mean "the backend cannot serve now" rather than "this call is wrong".
 */
const unavailableReplies = [
  'CLUSTERDOWN',
  'LOADING',
  'READONLY',
  'MASTERDOWN',
  'TRYAGAIN',
  'BUSY',
  'OOM',
  'NOREPLICAS',
  'MOVED',
  'ASK',
  'NOAUTH',
  'WRONGPASS',
];

/** Maps whatever a call failed with to the store's error model. */
function toStoreError(err: unknown, op: string): unknown {
  if (err instanceof StoreUnavailableError || err instanceof FamilyRevokedError) return err;
  if (!(err instanceof Error)) return new StoreUnavailableError(`${op} failed`, { cause: err });
  if (err.name === 'ReplyError') {
    const code = err.message.split(' ', 1)[0] ?? '';
    // Any other reply error (WRONGTYPE, a script error) is a bug, not an outage.
    if (!unavailableReplies.includes(code)) return err;
  }
  // Connection refused or reset, "Command timed out", MaxRetriesPerRequestError,
  // ClusterAllFailedError, "Stream isn't writeable…", "Connection is closed.".
  return new StoreUnavailableError(`${op}: ${err.message}`, { cause: err });
}

/**
 * How a family names its keys: `{family}`, or `{family}~name` for a sub-family, whose hash tag is
 * then its family's (Redis Cluster hashes only what is inside the first braces).
 */
function familyTag(family: string): string {
  const slot = slotFamily(family);
  return `{${slot}}${family.slice(slot.length)}`;
}

/** The names of a store's keys ("Key layout" above). */
export interface RedisKeyNames {
  record(key: StoreKey): string;
  members(family: string): string;
  revoked(family: string): string;
  chain(family: string): string;
  retired(family: string): string;
  listed(family: string): string;
}

/**
 * The key names of a store whose `keyPrefix` is `prefix`: the store's own, and those of the bench's
 * floor, which sends the store's scripts under a prefix of its own (bench/support/store_command_cost.ts).
 */
export function redisKeyNames(prefix: string): RedisKeyNames {
  const familyKey = (family: string, row: string): string => `${prefix}${familyTag(family)}:${row}`;
  return {
    record: (key) => {
      if (key.family === undefined) return `${prefix}${key.kind}:${key.id}`;
      assertFamilyName(key.family);
      return familyKey(key.family, `${key.kind}:${key.id}`);
    },
    members: (family) => familyKey(family, 'members'),
    revoked: (family) => familyKey(family, 'revoked'),
    chain: (family) => familyKey(family, 'chain'),
    retired: (family) => familyKey(family, 'retired'),
    listed: (family) => familyKey(family, 'listed'),
  };
}

/** A script's KEYS and ARGV. */
export interface ScriptCall {
  readonly keys: string[];
  readonly args: ScriptArg[];
}

/**
 * Appends records to a script's KEYS and ARGV as `writeCompanions` reads them: (record, its
 * members) and (bytes, ttl) pairs. Callers checked that each has a family (assertRotatable,
 * assertOneSlot).
 */
function addCompanions(names: RedisKeyNames, companions: readonly CompanionRecord<unknown>[], keys: string[], args: ScriptArg[]): void {
  for (const c of companions) {
    keys.push(names.record(c.key), names.members(c.key.family as string));
    args.push(packRecordWithHeader(c.value, headerBytes), toTtlMs(c.ttlMs));
  }
}

/**
 * `tesseraRedeemChain`'s KEYS and ARGV for {@link RedisStore.redeemChain}, with its deadline
 * `applyBy` ('' = none). The bench's floor sends the same call.
 */
export function redeemChainCall<R>(
  names: RedisKeyNames,
  oldKey: StoreKey,
  newKey: StoreKey,
  companions: readonly CompanionRecord<unknown>[],
  checks: ChainChecks,
  chain: ChainRedeemPolicy<R>,
  applyBy: number | string,
): ScriptCall {
  const family = newKey.family as string;
  const keys = [
    names.record(oldKey),
    names.record(newKey),
    names.members(family),
    names.revoked(family),
    names.chain(family),
    names.retired(family),
  ];
  const packed: (string | number)[] = [
    checks.clientId,
    checks.now,
    checks.jkt ?? '',
    checks.x5t ?? '',
    ` ${checks.scopes.join(' ')} `,
    checks.slidingUntil ?? '',
    // The retry value's place: its bytes go beside the array (ARGV[2]).
    '',
    Math.floor(chain.limit),
    toTtlMs(chain.windowMs),
    applyBy,
    oldKey.id,
    newKey.id,
    ...retiredFilterPositions(oldKey.id),
    Math.max(0, Math.floor(chain.graceMs)),
    names.record({ kind: oldKey.kind, id: '', family }),
  ];
  const args: ScriptArg[] = [packedChainArgs(packed), packRecordWithHeader(chain.retry ?? null, headerBytes)];
  addCompanions(names, companions, keys, args);
  return { keys, args };
}

/** `tesseraRedeemChain`'s packed arguments (see `unpackChainArgsLua`): the eighteen, in order. */
function packedChainArgs(packed: readonly (string | number)[]): Buffer {
  if (packed.length !== packedChainArgCount)
    throw new Error(`tesseraRedeemChain takes ${packedChainArgCount} packed arguments, not ${packed.length}`);
  return packBytes(packed);
}

/** `tesseraRedeemRecord`'s KEYS and ARGV for {@link RedisStore.redeemRecord}. The bench's floor sends the same call. */
export function redeemRecordCall(
  names: RedisKeyNames,
  key: StoreKey,
  checks: RedeemChecks,
  derived: DerivedRecord | undefined,
  companions: readonly CompanionRecord<unknown>[],
): ScriptCall {
  const family = key.family;
  if (family === undefined) throw new Error('redeemRecord needs a key in a family');
  const spec = derived === undefined ? undefined : derivedRecordSpec(derived, packRecordText);
  const keys = [names.record(key), names.record(derived?.key ?? key), names.members(family), names.revoked(family)];
  const args: ScriptArg[] = [` ${checks.scopes.join(' ')} `];
  const pairs = (entries: [string, string | null | undefined][]): void => {
    args.push(entries.length);
    for (const [name, wanted] of entries) args.push(name, wanted === null || wanted === undefined ? 'n' : 'v', wanted ?? '');
  };
  pairs(Object.entries(checks.equal));
  pairs(Object.entries(checks.bound ?? {}));
  const later = Object.entries(checks.later ?? {});
  args.push(later.length);
  for (const [name, after] of later) args.push(name, after);
  args.push(spec?.whenScope ?? '', derived === undefined ? 0 : toTtlMs(derived.ttlMs), spec?.copy.length ?? 0, ...(spec?.copy ?? []));
  args.push(spec?.nest.length ?? 0);
  for (const [name, inner] of spec?.nest ?? []) args.push(name, inner.length, ...inner);
  args.push(spec?.setCount ?? 0, Buffer.from(spec?.setPairs ?? '', 'latin1'));
  addCompanions(names, companions, keys, args);
  return { keys, args };
}

/** Reads the `{status [, bytes]}` reply of the write, consume and rotate scripts. */
function readScriptReply(reply: unknown): { status: number; bytes: Buffer | undefined } {
  if (!Array.isArray(reply) || typeof reply[0] !== 'number') {
    throw new Error(`unexpected script reply from redis: ${typeof reply}`);
  }
  const bytes: unknown = reply[1];
  return { status: reply[0], bytes: Buffer.isBuffer(bytes) ? bytes : undefined };
}

function unpackBody<T>(bytes: Buffer): T {
  return unpackRecord<T>(bytes.subarray(headerBytes));
}

/** The `{4, ms}` reply of a chain script refused by its rate limit. */
function limitedFor(reply: unknown): number {
  const ms = (reply as unknown[])[1];
  return typeof ms === 'number' ? Math.max(0, ms) : 0;
}

function toConsumeResult<T>(reply: unknown): ConsumeResult<T> {
  const { status, bytes } = readScriptReply(reply);
  if (status === 0 || bytes === undefined) return { status: 'missing' };
  return { status: status === 1 ? 'consumed' : 'replayed', value: unpackBody<T>(bytes) };
}

/**
 * {@link Store} on Redis (one server), a Sentinel-watched master (`sentinels`) or Redis Cluster (`nodes`).
 *
 * @example
 * ```ts
 * const store = new RedisStore({ url: 'redis://127.0.0.1:6379', keyPrefix: 'tessera:', commandTimeoutMs: 500 });
 * await store.ping();
 * ```
 */
export class RedisStore implements Store {
  readonly #client: Client;
  readonly #prefix: string;
  readonly #keys: RedisKeyNames;
  readonly #commandTimeoutMs: number;
  readonly #observe: ((command: string, seconds: number, failed: boolean) => void) | undefined;
  readonly #isCluster: boolean;
  readonly #waitForReplicas: number;
  /** Counts `ready` events: a `WAIT` on another connection than the write's proves nothing. */
  #connectionGeneration = 0;
  #pendingReady: Promise<void> | null = null;
  #closed = false;
  /**
   * A lower bound of Redis's clock minus `performance.now()` (ms), from a `TIME` reading: Redis
   * ran it before its reply arrived, so its time minus the local receive time can only fall short,
   * by at most the round trip. The largest of the last few seconds' readings is the tightest. A
   * lower bound makes a deadline early, never late: a reading Redis held (a pause) still reads
   * true, where an upper bound (time minus the send time) would carry the hold into every
   * deadline for seconds, and let rotations that waited through the next pause apply.
   */
  #clockOffset: { offsetMs: number; takenAt: number } | undefined;
  readonly #clockTimer: NodeJS.Timeout;
  /** The pause before the `attempt`th reconnection (the client's own retry strategy). */
  readonly #retryDelay: (attempt: number) => number;
  /** Restarts of a client that ended while the store is open, since its last `ready` ({@link #restart}). */
  #restarts = 0;
  #restartTimer: NodeJS.Timeout | undefined;

  constructor(options: RedisStoreOptions) {
    this.#prefix = options.keyPrefix ?? 'tessera:';
    this.#keys = redisKeyNames(this.#prefix);
    this.#commandTimeoutMs = options.commandTimeoutMs ?? 500;
    this.#observe = options.observe;
    this.#waitForReplicas = 'sentinels' in options ? (options.waitForReplicas ?? 0) : 0;
    const maxDelay = options.maxReconnectDelayMs ?? 2000;
    // Keep reconnecting for as long as the store is open, backing off to `maxDelay`.
    const retryStrategy = (times: number): number => Math.min(50 * 2 ** Math.min(times, 10), maxDelay);
    this.#retryDelay = retryStrategy;
    const connectionOptions: RedisOptions = {
      lazyConnect: true,
      // No `commandTimeout`: each call's own timer (#runBounded) is the one bound, and the only
      // one that gives a reply already received a chance first. ioredis's per-command timer fired
      // 50 ms before it, and in the timers phase, ahead of a reply waiting to be read: a rotation
      // Redis ran before its deadline was reported failed (docs/storage.md, "Late rotations").
      // Commands issued in one event-loop turn (a batch of grants) go out in one write.
      enableAutoPipelining: true,
      connectTimeout: options.connectTimeoutMs ?? Math.max(1000, 4 * this.#commandTimeoutMs),
      // Fail, never queue: see "Failure" above. Start-up waits for `ready` in #whenReady instead.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      retryStrategy,
      connectionName: 'tessera',
      scripts: Object.fromEntries(Object.entries(scripts).map(([name, lua]) => [name, { lua }])),
    };
    if ('nodes' in options) {
      this.#isCluster = true;
      const clusterOptions: ClusterOptions = {
        lazyConnect: true,
        enableOfflineQueue: false,
        clusterRetryStrategy: retryStrategy,
        retryDelayOnClusterDown: 100,
        retryDelayOnFailover: 100,
        retryDelayOnTryAgain: 100,
        scripts: connectionOptions.scripts,
        // Per-node connections: the cluster client owns reconnection and queueing of its nodes.
        redisOptions: {
          connectTimeout: connectionOptions.connectTimeout,
          maxRetriesPerRequest: 0,
          autoResendUnfulfilledCommands: false,
          connectionName: 'tessera',
        },
      };
      this.#client = new Cluster([...options.nodes], clusterOptions);
    } else if ('sentinels' in options) {
      this.#isCluster = false;
      const tls = options.tls === true ? {} : undefined;
      this.#client = new Redis({
        ...connectionOptions,
        sentinels: options.sentinels.map(parseSentinelAddress),
        name: options.name,
        role: 'master',
        ...(options.password === undefined ? {} : { password: options.password }),
        ...(options.username === undefined ? {} : { username: options.username }),
        ...(options.sentinelPassword === undefined ? {} : { sentinelPassword: options.sentinelPassword }),
        ...(options.sentinelUsername === undefined ? {} : { sentinelUsername: options.sentinelUsername }),
        ...(tls === undefined ? {} : { tls, sentinelTLS: tls, enableTLSForSentinelMode: true }),
        // A Sentinel that does not answer must not hold up the search for one that does.
        sentinelCommandTimeout: this.#commandTimeoutMs,
        // Keep asking the Sentinels for as long as the store is open (null would give up).
        sentinelRetryStrategy: retryStrategy,
        // Subscribe to +switch-master so a failover moves the connection at once, not at the
        // first command that fails on the demoted master.
        failoverDetector: true,
        reconnectOnError: reconnectOnReadonly,
      });
    } else {
      this.#isCluster = false;
      this.#client = new Redis(options.url, connectionOptions);
    }
    const onError = options.onError ?? (() => {});
    // Without a listener ioredis prints every connection error; failures reach callers anyway.
    this.#client.on('error', (err: Error) => onError(err));
    this.#client.on('ready', () => {
      this.#connectionGeneration += 1;
      this.#restarts = 0;
    });
    if (!this.#isCluster) this.#client.on('end', () => this.#restart());
    this.#client.connect().catch(() => {
      // The retry strategy keeps trying; calls meanwhile fail with StoreUnavailableError.
    });
    this.#client.on('ready', () => {
      // A new connection may reach another server (a Sentinel failover's new master), whose clock
      // is not the old one's: its readings start afresh. Kept, the old master's tightest reading
      // would stand for up to clockSampleKeptMs, and a new master whose clock runs ahead by more
      // than the command timeout would have every rotation refused as late (issue 36).
      this.#clockOffset = undefined;
      void this.#sampleClock();
    });
    this.#clockTimer = setInterval(() => void this.#sampleClock(), clockSampleEveryMs);
    // Housekeeping: never keeps a process alive by itself.
    this.#clockTimer.unref();
  }

  async set<T>(key: StoreKey, value: T, ttlMs: number): Promise<void> {
    const ttl = toTtlMs(ttlMs);
    const recordKey = this.#keys.record(key);
    const bytes = packRecordWithHeader(value, headerBytes);
    if (key.name !== undefined) assertListedName(key);
    if (key.family === undefined) {
      await this.#write('set', (c) => c.set(recordKey, bytes, 'PX', ttl));
      return;
    }
    const family = key.family;
    const keys = [recordKey, this.#keys.members(family), this.#keys.revoked(family)];
    const args: ScriptArg[] = [bytes, ttl, '0'];
    this.#addListing(key, keys, args);
    const reply = await this.#write('set', (c) => this.#script(c, 'tesseraWrite', keys, args));
    if (readScriptReply(reply).status === 0) throw new FamilyRevokedError(family);
  }

  async get<T>(key: StoreKey): Promise<T | null> {
    const recordKey = this.#keys.record(key);
    const bytes = await this.#run('get', (c) => c.getBuffer(recordKey));
    if (bytes === null || bytes[0] !== liveHeader) return null;
    return unpackBody<T>(bytes);
  }

  async delete(key: StoreKey): Promise<boolean> {
    const recordKey = this.#keys.record(key);
    const family = key.family;
    if (family === undefined) return Number(await this.#write('delete', (c) => c.del(recordKey))) > 0;
    const keys = [recordKey, this.#keys.members(family)];
    const args: ScriptArg[] = [];
    if (key.name !== undefined) {
      keys.push(this.#keys.listed(family));
      args.push(this.#listingMember(key));
    }
    const removed = await this.#write('delete', (c) => this.#script(c, 'tesseraDeleteMember', keys, args));
    return Number(removed) > 0;
  }

  async consume<T>(key: StoreKey): Promise<ConsumeResult<T>> {
    const recordKey = this.#keys.record(key);
    const reply = await this.#write('consume', (c) => this.#script(c, 'tesseraConsume', [recordKey], []));
    return toConsumeResult<T>(reply);
  }

  async rotate<T, U, V = unknown>(
    oldKey: StoreKey,
    newKey: StoreKey,
    newValue: U,
    ttlMs: number,
    companion?: CompanionRecord<V> | readonly CompanionRecord<unknown>[],
  ): Promise<ConsumeResult<T>> {
    const companions = companionList(companion);
    assertRotatable(oldKey, newKey, companions);
    if (this.#isCluster && newKey.family === undefined) {
      throw new Error('rotate on Redis Cluster needs both keys in one family (one hash slot)');
    }
    const ttl = toTtlMs(ttlMs);
    const keys = [this.#keys.record(oldKey), this.#keys.record(newKey)];
    const args: ScriptArg[] = [packRecordWithHeader(newValue, headerBytes), ttl];
    if (newKey.family !== undefined) keys.push(this.#keys.members(newKey.family), this.#keys.revoked(newKey.family));
    addCompanions(this.#keys, companions, keys, args);
    const reply = await this.#write('rotate', (c) => this.#script(c, 'tesseraRotate', keys, args));
    return toConsumeResult<T>(reply);
  }

  async rotateChain<T, U, R = unknown>(
    oldKey: StoreKey,
    newKey: StoreKey,
    newValue: U,
    ttlMs: number,
    companions: readonly CompanionRecord<unknown>[],
    chain: ChainPolicy<R>,
  ): Promise<ChainRotation<T>> {
    assertRotatable(oldKey, newKey, companions);
    assertChain(oldKey, newKey, chain);
    const family = newKey.family as string;
    const ttl = toTtlMs(ttlMs);
    const keys = [
      this.#keys.record(oldKey),
      this.#keys.record(newKey),
      this.#keys.members(family),
      this.#keys.revoked(family),
      this.#keys.chain(family),
      this.#keys.retired(family),
    ];
    const args: ScriptArg[] = [
      packRecordWithHeader(newValue, headerBytes),
      ttl,
      packRecordWithHeader(chain.retry ?? null, headerBytes),
      Math.floor(chain.limit),
      toTtlMs(chain.windowMs),
      toTtlMs(chain.ttlMs),
      this.#applyBy(),
      oldKey.id,
      newKey.id,
      ...retiredFilterPositions(oldKey.id),
    ];
    addCompanions(this.#keys, companions, keys, args);
    // A write: with `waitForReplicas` the rotation is answered only once a replica holds it. Sent
    // without the WAIT, a rotation the old master acknowledged after the replica's promotion was
    // answered and then lost, and the client's next refresh found nothing (issue 36).
    const reply = await this.#write('rotate', (c) => this.#script(c, 'tesseraRotateChain', keys, args));
    const { status, bytes } = readScriptReply(reply);
    if (status === 3) throw new StoreUnavailableError('rotate reached redis after its caller stopped waiting: nothing done');
    if (status === 4) return { status: 'limited', retryAfterMs: limitedFor(reply) };
    return toConsumeResult<T>(status === 0 || bytes === undefined ? [0] : reply);
  }

  async chainLookup<T, R = unknown>(oldKey: StoreKey, graceMs: number, chain: Omit<ChainPolicy, 'retry'>): Promise<ChainLookup<T, R>> {
    const family = oldKey.family;
    if (family === undefined) throw new Error('a chain lookup needs a key in a family');
    assertFamilyName(family);
    const keys = [this.#keys.record(oldKey), this.#keys.revoked(family), this.#keys.chain(family), this.#keys.retired(family)];
    const successorPrefix = this.#keys.record({ kind: oldKey.kind, id: '', family });
    const args: ScriptArg[] = [
      oldKey.id,
      Math.max(0, Math.floor(graceMs)),
      Math.floor(chain.limit),
      toTtlMs(chain.windowMs),
      successorPrefix,
      ...retiredFilterPositions(oldKey.id),
    ];
    // A write: it counts a retry in the rate limit, and its verdict ends a chain ('missing') or
    // revokes the family ('replayed'). With `waitForReplicas` that verdict is trusted only from a
    // master a replica follows, never from a demoted master still serving its stale copy.
    const reply = await this.#write('chainLookup', (c) => this.#script(c, 'tesseraChainLookup', keys, args));
    const { status, bytes } = readScriptReply(reply);
    if (status === 4) return { status: 'limited', retryAfterMs: limitedFor(reply) };
    if (status === 2 && bytes !== undefined) return { status: 'replayed', value: unpackBody<T>(bytes) };
    if (status === 5 && bytes !== undefined) {
      const [, , id, retry] = reply as unknown[];
      if (Buffer.isBuffer(id) && Buffer.isBuffer(retry)) {
        return { status: 'retry', successor: unpackBody<T>(bytes), successorId: id.toString('utf8'), retry: unpackBody<R>(retry) };
      }
    }
    return { status: 'missing' };
  }

  async redeemChain<T, R = unknown>(
    oldKey: StoreKey,
    newKey: StoreKey,
    companions: readonly CompanionRecord<unknown>[],
    checks: ChainChecks,
    chain: ChainRedeemPolicy<R>,
  ): Promise<ChainRedemption<T, R>> {
    assertRotatable(oldKey, newKey, companions);
    assertChain(oldKey, newKey, chain);
    const { keys, args } = redeemChainCall(this.#keys, oldKey, newKey, companions, checks, chain, this.#applyBy());
    // A write, followed by WAIT when `waitForReplicas` is set, as rotateChain and chainLookup are.
    const reply = await this.#write('redeemChain', (c) => this.#script(c, 'tesseraRedeemChain', keys, args));
    const { status, bytes } = readScriptReply(reply);
    if (status === 3) throw new StoreUnavailableError('redeemChain reached redis after its caller stopped waiting: nothing done');
    if (status === 4) return { status: 'limited', retryAfterMs: limitedFor(reply) };
    if (bytes !== undefined) {
      if (status === 1) return { status: 'consumed', value: unpackBody<T>(bytes) };
      if (status === 6) return { status: 'unchecked', value: unpackBody<T>(bytes) };
      if (status === 2) return { status: 'replayed', value: unpackBody<T>(bytes) };
      if (status === 5) {
        const [, , id, retry] = reply as unknown[];
        if (Buffer.isBuffer(id) && Buffer.isBuffer(retry)) {
          return { status: 'retry', successor: unpackBody<T>(bytes), successorId: id.toString('utf8'), retry: unpackBody<R>(retry) };
        }
      }
    }
    return { status: 'missing' };
  }

  async redeemRecord<T>(
    key: StoreKey,
    checks: RedeemChecks,
    derived: DerivedRecord | undefined,
    companions: readonly CompanionRecord<unknown>[],
  ): Promise<Redemption<T>> {
    assertRotatable(key, derived?.key ?? { ...key, id: `${key.id}~` }, companions);
    const { keys, args } = redeemRecordCall(this.#keys, key, checks, derived, companions);
    const reply = await this.#write('redeemRecord', (c) => this.#script(c, 'tesseraRedeemRecord', keys, args));
    const { status, bytes } = readScriptReply(reply);
    if (bytes === undefined || status === 0) return { status: 'missing' };
    const value = unpackBody<T>(bytes);
    if (status === 1) return { status: 'consumed', value, derived: (reply as unknown[])[2] === 1 };
    return { status: status === 6 ? 'unchecked' : 'replayed', value };
  }

  async writeWhileLive<V>(guards: readonly StoreKey[], record?: CompanionRecord<V>): Promise<boolean> {
    assertOneSlot(guards, record);
    const keys = guards.map((guard) => this.#keys.record(guard));
    const args: ScriptArg[] = [guards.length];
    // assertOneSlot: every key has a family.
    if (record !== undefined) addCompanions(this.#keys, [record], keys, args);
    const reply = await this.#write('writeWhileLive', (c) => this.#script(c, 'tesseraWriteWhileLive', keys, args));
    return readScriptReply(reply).status === 1;
  }

  async revokeFamily(family: string, ttlMs: number): Promise<number> {
    assertFamilyName(family);
    const ttl = toTtlMs(ttlMs);
    const removed = await this.#write('revokeFamily', (c) =>
      this.#script(c, 'tesseraRevoke', [this.#keys.members(family), this.#keys.revoked(family), this.#keys.listed(family)], [ttl]),
    );
    return Number(removed);
  }

  async familyRecords<T>(family: string, kind: RecordKind): Promise<T[]> {
    assertFamilyName(family);
    const membersKey = this.#keys.members(family);
    const members = await this.#run('familyRecords', (c) => c.smembers(membersKey));
    const marker = `${familyTag(family)}:${kind}:`;
    const keys = members.filter((m) => m.startsWith(this.#prefix) && m.includes(marker));
    if (keys.length === 0) return [];
    const values = await this.#run('familyRecords', (c) => c.mgetBuffer(...keys));
    const records: T[] = [];
    const gone: string[] = [];
    for (const [i, bytes] of values.entries()) {
      if (bytes === null) gone.push(keys[i] as string);
      else if (bytes[0] === liveHeader) records.push(unpackBody<T>(bytes));
    }
    // Expiry removes a record but not its name in the members SET: a family that lives long (a
    // user's grants, gateway/pages/user_grants.ts) would keep the names of every expired record.
    if (gone.length > 0) await this.#write('familyRecords', (c) => this.#script(c, 'tesseraForgetGone', [membersKey, ...gone], []));
    return records;
  }

  async listFamily<T>(family: string, after: string | undefined, limit: number): Promise<FamilyPage<T>> {
    assertFamilyName(family);
    assertPageLimit(limit);
    const listedKey = this.#keys.listed(family);
    // Past every member of `after` itself: its members are `after`, NUL, a key.
    const from = after === undefined ? '-' : Buffer.concat([Buffer.from('['), Buffer.from(after, 'utf8'), Buffer.from([1])]);
    // One more than the page, to tell whether more follow; and a bound on forgotten names read in
    // one script, so that a listing full of expired names never holds Redis long.
    const most = 4 * limit + 100;
    const prefix = `${this.#prefix}${familyTag(family)}:`;
    // A read that may forget stale names: not followed by WAIT (a name forgotten on the master
    // only is forgotten again by the next page read after a failover).
    const reply = await this.#run('listFamily', (c) => this.#script(c, 'tesseraListPage', [listedKey], [from, limit + 1, prefix, most]));
    if (!Array.isArray(reply) || typeof reply[0] !== 'number') throw new Error('unexpected listFamily reply from redis');
    const records: ListedRecord<T>[] = [];
    for (let i = 2; i + 1 < reply.length; i += 2) {
      records.push({ name: (reply[i] as Buffer).toString('utf8'), value: unpackBody<T>(reply[i + 1] as Buffer) });
    }
    if (records.length > limit) {
      records.pop();
      return { records, next: (records.at(-1) as ListedRecord<T>).name };
    }
    // Stopped at the bound on names read: the next page goes on from the last one read.
    const lastRead = (reply[1] as Buffer).toString('utf8');
    return { records, next: reply[0] >= most ? lastRead : null };
  }

  async scanFamily<T>(family: string, kind: RecordKind, cursor: string | undefined, count: number): Promise<FamilyScan<T>> {
    assertFamilyName(family);
    const membersKey = this.#keys.members(family);
    const [next, members] = await this.#run('scanFamily', (c) => c.sscan(membersKey, cursor ?? '0', 'COUNT', count));
    const marker = `${familyTag(family)}:${kind}:`;
    const keys = members.filter((m) => m.startsWith(this.#prefix) && m.includes(marker));
    const records: T[] = [];
    if (keys.length > 0) {
      const values = await this.#run('scanFamily', (c) => c.mgetBuffer(...keys));
      for (const bytes of values) if (bytes !== null && bytes[0] === liveHeader) records.push(unpackBody<T>(bytes));
    }
    return { records, cursor: next === '0' ? null : next };
  }

  async listRecords(keys: readonly StoreKey[]): Promise<number> {
    assertListable(keys);
    const first = keys[0];
    if (first === undefined) return 0;
    const scriptKeys = [this.#keys.listed(first.family as string), ...keys.map((k) => this.#keys.record(k))];
    const members = keys.map((k) => this.#listingMember(k));
    return Number(await this.#write('listRecords', (c) => this.#script(c, 'tesseraListIfLive', scriptKeys, members)));
  }

  async isFamilyRevoked(family: string): Promise<boolean> {
    assertFamilyName(family);
    const revokedKey = this.#keys.revoked(family);
    return (await this.#run('isFamilyRevoked', (c) => c.exists(revokedKey))) === 1;
  }

  async putIfAbsent<T>(key: StoreKey, value: T, ttlMs: number): Promise<T> {
    const ttl = toTtlMs(ttlMs);
    const keys = [this.#keys.record(key)];
    if (key.family !== undefined) keys.push(this.#keys.members(key.family), this.#keys.revoked(key.family));
    const bytes = packRecordWithHeader(value, headerBytes);
    const args: ScriptArg[] = [bytes, ttl, '1'];
    this.#addListing(key, keys, args);
    const reply = readScriptReply(await this.#write('putIfAbsent', (c) => this.#script(c, 'tesseraWrite', keys, args)));
    if (reply.status === 0) throw new FamilyRevokedError(key.family ?? '');
    // Every caller gets a decoded copy of what is stored, the writer included.
    return unpackBody<T>(reply.status === 2 && reply.bytes !== undefined ? reply.bytes : bytes);
  }

  async replaceIfUnchanged<T>(key: StoreKey, expected: T, next: T | null, ttlMs: number): Promise<Replacement<T>> {
    const ttl = toTtlMs(ttlMs);
    const keys = [this.#keys.record(key)];
    if (key.family !== undefined) keys.push(this.#keys.members(key.family), this.#keys.revoked(key.family));
    // A packed value is never empty (its header byte), so '' can mean "delete".
    const args: ScriptArg[] = [
      packRecordWithHeader(expected, headerBytes),
      next === null ? '' : packRecordWithHeader(next, headerBytes),
      ttl,
    ];
    this.#addListing(key, keys, args);
    const reply = readScriptReply(await this.#write('replaceIfUnchanged', (c) => this.#script(c, 'tesseraReplaceIfUnchanged', keys, args)));
    if (reply.status === 1) return { status: 'replaced' };
    if (reply.status === 2 && reply.bytes !== undefined) return { status: 'changed', current: unpackBody<T>(reply.bytes) };
    return { status: 'missing' };
  }

  async increment(name: string, windowMs: number, by = 1): Promise<CounterResult> {
    const window = toTtlMs(windowMs);
    const counterKey = this.#counterKey(name);
    const reply = await this.#write('increment', (c) => this.#script(c, 'tesseraIncrement', [counterKey], [window, by]));
    if (!Array.isArray(reply) || typeof reply[0] !== 'number' || typeof reply[1] !== 'number') {
      throw new Error('unexpected increment reply from redis');
    }
    return { count: reply[0], resetInMs: reply[1] };
  }

  async resetCounter(name: string): Promise<void> {
    const counterKey = this.#counterKey(name);
    await this.#write('resetCounter', (c) => c.del(counterKey));
  }

  async ping(): Promise<void> {
    await this.#run('ping', (c) => c.ping());
  }

  async checkReady(): Promise<void> {
    // A write, bounded by the command timeout like every call: `CLIENT PAUSE … WRITE` holds it
    // until the timeout, a failed Cluster refuses it with CLUSTERDOWN, `maxmemory` with OOM.
    const key = `${this.#prefix}readyz`;
    await this.#write('checkReady', (c) => c.set(key, '1', 'PX', 10_000));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#clockTimer);
    clearTimeout(this.#restartTimer);
    const client = this.#client;
    if (client.status === 'ready') {
      // Let QUIT flush politely, but never wait on a dead server for it.
      await Promise.race([client.quit().catch(() => {}), new Promise((resolve) => setTimeout(resolve, this.#commandTimeoutMs).unref())]);
    }
    // Also stops the reconnection loop.
    client.disconnect();
  }

  /** A record's member in its family's listing: its name, NUL, its key past the family's tag. */
  #listingMember(key: StoreKey): Buffer {
    return Buffer.concat([Buffer.from(assertListedName(key), 'utf8'), Buffer.from([0]), Buffer.from(`${key.kind}:${key.id}`)]);
  }

  /** The listing's key and member for `tesseraWrite`, when the record has a name. */
  #addListing(key: StoreKey, keys: string[], args: ScriptArg[]): void {
    if (key.name === undefined) return;
    const member = this.#listingMember(key);
    keys.push(this.#keys.listed(key.family as string));
    args.push(member);
  }

  /**
   * Late rotations: the moment on Redis's clock after which a rotation does nothing, or '' while
   * Redis's clock was never read: `commandTimeoutMs` from now, `deadlineSlackMs` before this call
   * gives up, so that the answer to a rotation Redis runs by then has that long to come back
   * (#runBounded reads it even when the event loop was busy). A rotation Redis runs only later (a
   * `CLIENT PAUSE`, a stall, a failover held it) does nothing, rather than retire a token whose
   * successor nobody will ever receive (docs/storage.md, "Late rotations").
   */
  #applyBy(): number | string {
    const clock = this.#clockOffset;
    if (clock === undefined) return '';
    return Math.floor(performance.now() + clock.offsetMs + this.#commandTimeoutMs);
  }

  async #sampleClock(): Promise<void> {
    if (this.#closed || this.#client.status !== 'ready') return;
    try {
      const [seconds, micros] = await this.#runBounded('time', (c) => c.time());
      const now = performance.now();
      const offsetMs = Number(seconds) * 1000 + Number(micros) / 1000 - now;
      const kept = this.#clockOffset;
      if (kept === undefined || offsetMs >= kept.offsetMs || now - kept.takenAt > clockSampleKeptMs) {
        this.#clockOffset = { offsetMs, takenAt: now };
      }
    } catch {
      // Unreachable now: keep the last reading; calls fail on their own.
    }
  }

  #counterKey(name: string): string {
    return `${this.#prefix}ctr:${name}`;
  }

  #script(client: Client, name: ScriptName, keys: string[], args: ScriptArg[]): Promise<unknown> {
    const command = (client as unknown as ScriptCommands)[`${name}Buffer`];
    return command.call(client, keys.length, ...keys, ...args);
  }

  /**
   * {@link #run} for a call that writes: with `waitForReplicas`, the write is followed by `WAIT` and
   * succeeds only once enough replicas hold it ("Replication" above). Sent after the write's reply,
   * not pipelined with it: ioredis resends a script as EVAL after NOSCRIPT (a new master's empty
   * script cache), which would put the write behind the WAIT.
   */
  #write<R>(op: string, send: (client: Client) => Promise<R>): Promise<R> {
    const replicas = this.#waitForReplicas;
    if (replicas === 0) return this.#run(op, send);
    return this.#run(op, async (client) => {
      const generation = this.#connectionGeneration;
      const result = await send(client);
      const acknowledged = await (client as Redis).wait(replicas, this.#commandTimeoutMs);
      if (generation !== this.#connectionGeneration) throw new StoreUnavailableError(`${op}: the connection changed before WAIT`);
      if (acknowledged < replicas) throw new StoreUnavailableError(`${op}: ${acknowledged} of ${replicas} replicas acknowledged the write`);
      return result;
    });
  }

  /**
   * Runs one call under the store's deadline: waits for the connection only while one is being
   * established, and maps every failure to {@link StoreUnavailableError}.
   */
  async #run<R>(op: string, send: (client: Client) => Promise<R>): Promise<R> {
    const observe = this.#observe;
    if (observe === undefined) return this.#runBounded(op, send);
    const started = performance.now();
    try {
      const result = await this.#runBounded(op, send);
      observe(op, (performance.now() - started) / 1000, false);
      return result;
    } catch (err) {
      observe(op, (performance.now() - started) / 1000, true);
      throw err;
    }
  }

  /**
   * The call's one bound. Its timer gives up in the check phase (`setImmediate`), after the event
   * loop's poll phase has read whatever arrived: timers run first in a turn, so a loop busy past
   * the deadline (a burst of signing, a loaded machine) would otherwise fail a call whose answer
   * already waited on the socket, a rotation Redis applied in time among them (docs/storage.md,
   * "Late rotations").
   */
  async #runBounded<R>(op: string, send: (client: Client) => Promise<R>): Promise<R> {
    if (this.#closed) throw new StoreUnavailableError('redis store is closed');
    let timer: NodeJS.Timeout | undefined;
    let giveUp: NodeJS.Immediate | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        giveUp = setImmediate(() => reject(new StoreUnavailableError(`${op} got no answer within ${this.#commandTimeoutMs} ms`)));
      }, this.#commandTimeoutMs + deadlineSlackMs);
    });
    try {
      return await Promise.race([this.#whenReady().then(() => send(this.#client)), deadline]);
    } catch (err) {
      throw toStoreError(err, op);
    } finally {
      clearTimeout(timer);
      clearImmediate(giveUp);
    }
  }

  /**
   * Connects again a client that ended (`end`) although the store is still open, after the same
   * backoff as its own reconnections. ioredis ends a Sentinel client for good when its failover
   * detector's `+switch-master` arrives while the client, its connection to the old master lost,
   * is still asking the Sentinels for the master: the detector stops the connector, and the
   * connector's pending attempt then fails with "Connection is closed." (ioredis 6.0.0,
   * `SentinelConnector.connect`), which `Redis.connect` answers with `end`, not a retry. That thread's
   * store (the gateway thread's, which `/readyz` writes through, or a worker's) then stayed
   * unavailable until a restart (docs/operations.md, "Redis Sentinel").
   */
  #restart(): void {
    if (this.#closed || this.#restartTimer !== undefined) return;
    this.#restarts += 1;
    this.#restartTimer = setTimeout(() => {
      this.#restartTimer = undefined;
      const client = this.#client as Redis;
      if (this.#closed || client.status !== 'end') return;
      client.connect().catch(() => {
        // Failed again: `end` comes again and schedules the next attempt.
      });
    }, this.#retryDelay(this.#restarts));
    // Housekeeping like the clock timer: never keeps a process alive by itself.
    this.#restartTimer.unref();
  }

  /**
   * Resolves once the client is ready. While a connection is being set up (start-up, or a
   * reconnection attempt in progress) calls wait for it; while the client sits in its backoff
   * between attempts they fail at once, so an outage answers 503 fast instead of piling up.
   */
  #whenReady(): Promise<void> {
    const client = this.#client;
    const status = client.status;
    if (status === 'ready') return Promise.resolve();
    if (status !== 'wait' && status !== 'connecting' && status !== 'connect') {
      return Promise.reject(new StoreUnavailableError(`redis connection is ${status}`));
    }
    this.#pendingReady ??= new Promise<void>((resolve, reject) => {
      const settle = (err?: Error): void => {
        client.off('ready', onReady);
        client.off('reconnecting', onDown);
        client.off('end', onDown);
        this.#pendingReady = null;
        if (err === undefined) resolve();
        else reject(err);
      };
      const onReady = (): void => settle();
      const onDown = (): void => settle(new StoreUnavailableError('redis connection failed'));
      client.on('ready', onReady);
      client.on('reconnecting', onDown);
      client.on('end', onDown);
    });
    return this.#pendingReady;
  }
}
