/**
 * The physical floor of one request's own work (issue 18): what no implementation of the request
 * can avoid, as data each scenario declares in its file. Each part is measured in the same run
 * (runner/floors.ts) and the report prints Tessera's CPU per request as a multiple of the sum
 * (report/floors.ts):
 *
 * - the JWTs the server signs and the JWS it verifies, per algorithm (one full JWT as the workers'
 *   `JwtSigner` makes it; one node:crypto verification of a compact JWS);
 * - one bare uWebSockets.js request (the `ceiling` endpoint's server CPU per request), always one;
 * - on the Redis store, the commands the store sends for the request, each as a bare ioredis loop
 *   (client CPU + redis-server CPU per command); on the memory store the same calls through the
 *   thread bridge (support/bridge_cost.ts, issue 33).
 *
 * The store commands are the ones `core/store/redis_store.ts` sends, observed with `MONITOR`
 * during a preflight of each scenario; bench/README.md ("Floors") lists them.
 */
import type { BenchAlgorithm } from '../support/keys.js';

/** One Redis command of the store, with the sizes of the values it reads or writes (bytes, header included). */
export type StoreCommand =
  /** `GET` of a live record of `bytes`; 0: of a key that is not there (a deny-list miss). */
  | { op: 'get'; bytes: number }
  /** `DEL` of a key that is there (a failure counter reset after a sign-in). */
  | { op: 'del' }
  /** `EVALSHA tesseraIncrement` of a counter that is not there yet (the first failure of a window). */
  | { op: 'increment' }
  /** `EVALSHA tesseraWrite`: a record into a family (members set, revocation marker), or a standalone one; `ifAbsent`: put-if-absent. */
  | { op: 'write'; family: boolean; ifAbsent: boolean; bytes: number }
  /** `EVALSHA tesseraRotate`: consumes a live record of `oldBytes`, writes its successor of `bytes` and a companion record of each size. */
  | { op: 'rotate'; oldBytes: number; bytes: number; companions: readonly number[] }
  /**
   * `EVALSHA tesseraRedeemChain` (`Store.redeemChain`, issue 33): a refresh in one call. The live
   * refresh token the bench seeds (`bytes`) passes the store's checks and is rotated: its
   * successor (the same record, its expiry moved), the chain record with the retry value, the
   * filter of retired ids, and a companion record of each size (the access token's `~at` entry).
   */
  | { op: 'redeemChain'; bytes: number; companions: readonly number[] }
  /**
   * `EVALSHA tesseraRedeemRecord` (`Store.redeemRecord`, issue 33): a code redeemed in one call,
   * on the record the bench seeds (`bytes`). `code`: an authorization code that passes the checks,
   * consumed, with the refresh token derived from it (`derivedBytes` as the script writes it: its
   * maps with fixmap headers, 4 B under msgpackr's record) and a companion record of each size; `pendingDeviceCode`: a device code no user approved, which fails the `status`
   * check and comes back unchecked, nothing written (the poll then reads its poll state).
   */
  | { op: 'redeemRecord'; record: 'code'; bytes: number; derivedBytes: number; companions: readonly number[] }
  | { op: 'redeemRecord'; record: 'pendingDeviceCode'; bytes: number };

export interface StoreCommandCount {
  command: StoreCommand;
  /** Per request; a mix has fractions. */
  count: number;
}

/** What one request of a scenario cannot do without. Every request also costs one bare uWS request. */
export interface RequestFloor {
  /** JWTs signed per request (access token, ID token), per algorithm. */
  signatures: Partial<Record<BenchAlgorithm, number>>;
  /** JWS verified per request (a presented token, a client assertion), per algorithm. */
  verifications: Partial<Record<BenchAlgorithm, number>>;
  /** The Redis store's commands per request (none on the memory store). */
  store: readonly StoreCommandCount[];
  /**
   * Work the request does by design that is not compared: Tessera's figure is taken minus its cost
   * measured in the same run (the password grant's argon2id verify, issue 18: "password minus the
   * hash"): the bench user's (14 ms), or the cheap-hash user's (about 0.28 ms, `-cheap`).
   */
  excludes?: 'argon2id-verify' | 'argon2id-verify-cheap';
}

/** Each command once per request. */
export function oncePerRequest(...commands: StoreCommand[]): StoreCommandCount[] {
  return commands.map((command) => ({ command, count: 1 }));
}

/** A stable name for a command, which also tells its variants apart (results file and report). */
export function storeCommandName(command: StoreCommand): string {
  switch (command.op) {
    case 'get':
      return command.bytes === 0 ? 'GET (absent)' : `GET ${command.bytes} B`;
    case 'del':
      return 'DEL';
    case 'increment':
      return 'EVALSHA tesseraIncrement';
    case 'write':
      return `EVALSHA tesseraWrite (${command.family ? 'family' : 'standalone'}${command.ifAbsent ? ', if absent' : ''}, ${command.bytes} B)`;
    case 'rotate':
      return `EVALSHA tesseraRotate (${command.oldBytes} → ${command.bytes} B${command.companions.map((bytes) => ` + ${bytes} B`).join('')})`;
    case 'redeemChain':
      return `EVALSHA tesseraRedeemChain (${command.bytes} → ${command.bytes} B${command.companions.map((bytes) => ` + ${bytes} B`).join('')})`;
    case 'redeemRecord':
      return command.record === 'code'
        ? `EVALSHA tesseraRedeemRecord (code ${command.bytes} → ${command.derivedBytes} B${command.companions.map((bytes) => ` + ${bytes} B`).join('')})`
        : `EVALSHA tesseraRedeemRecord (pending device code ${command.bytes} B, unchecked)`;
  }
}

function addCounts<K extends string>(into: Partial<Record<K, number>>, from: Partial<Record<K, number>>, weight: number): void {
  for (const [key, count] of Object.entries(from) as [K, number | undefined][]) {
    if (count !== undefined) into[key] = (into[key] ?? 0) + count * weight;
  }
}

/**
 * The floor of a mix: each part's floor weighted by its share of the requests (floors add up, so
 * a mix's is their weighted mean). Excluded work does not mix: a part that excludes some is refused.
 */
export function mixFloors(parts: readonly { floor: RequestFloor; weight: number }[]): RequestFloor {
  const total = parts.reduce((sum, part) => sum + part.weight, 0);
  if (!(total > 0)) throw new Error('a mix needs a positive total weight');
  const signatures: Partial<Record<BenchAlgorithm, number>> = {};
  const verifications: Partial<Record<BenchAlgorithm, number>> = {};
  const store = new Map<string, StoreCommandCount>();
  for (const { floor, weight } of parts) {
    if (floor.excludes !== undefined) throw new Error(`a mix cannot exclude ${floor.excludes} from one of its parts`);
    const share = weight / total;
    addCounts(signatures, floor.signatures, share);
    addCounts(verifications, floor.verifications, share);
    for (const { command, count } of floor.store) {
      const name = storeCommandName(command);
      const seen = store.get(name);
      store.set(name, { command, count: (seen?.count ?? 0) + count * share });
    }
  }
  return { signatures, verifications, store: [...store.values()] };
}
