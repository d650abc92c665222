// The client registry's promise (gateway/client_registry/client_registry.ts), checked over random
// interleavings with fast-check: every request (a cache hit, or a store lookup) is answered exactly
// once, with its own client or "unknown" or a store failure; the lookups gauge is back to 0 once
// the store has answered everything; the cap on lookups and both cache bounds hold at every step;
// and no request issued after a change (a write, a removal, an invalidation as a version poll
// makes) is answered from a store read that began before it.
//
// The store is the real memory store behind a wrapper that holds every `get`'s answer (the record
// as it was when the get was sent, as a Redis GET runs at once and its reply may come late) until
// the scenario delivers it or fails it (StoreUnavailableError, as a Redis
// timeout does). Requests take the path client authentication takes (step.ts): `cached`, else
// `lookup`. test/gateway/client_registry/lookup_cap.test.ts and registry_under_load.test.ts drive
// the same code over HTTP with a real Redis.
import fc from 'fast-check';
import { pino } from 'pino';
import t from 'tap';
import type { RegisteredClient } from '../../../core/client_model.js';
import { MemoryStore } from '../../../core/store/memory_store.js';
import { StoreUnavailableError, type Store, type StoreKey } from '../../../core/store/store.js';
import type { ClientConfig } from '../../../core/worker_config.js';
import { ClientRegistry } from '../../../gateway/client_registry/client_registry.js';
import { clientSchema } from '../../../gateway/config/schema.js';

const ids = ['c0', 'c1', 'c2', 'c3', 'c4', 'c5'] as const;
const cap = 3;
const cacheSize = 2;
const negativeCacheSize = 2;
const cacheTtlMs = 1000;

type Op =
  | { kind: 'ask'; id: number }
  | { kind: 'deliver'; which: number }
  | { kind: 'fail'; which: number }
  | { kind: 'write'; id: number }
  | { kind: 'remove'; id: number }
  | { kind: 'invalidate' }
  | { kind: 'tick'; ms: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('ask' as const), id: fc.nat(ids.length - 1) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('deliver' as const), which: fc.nat(8) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('fail' as const), which: fc.nat(8) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('write' as const), id: fc.nat(ids.length - 1) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('remove' as const), id: fc.nat(ids.length - 1) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('invalidate' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 1, max: 1500 }) }) },
);

interface HeldGet {
  /** The record as the store held it when the get was sent: a Redis GET runs then, its reply comes later. */
  readonly read: Promise<unknown>;
  readonly resolve: (value: unknown) => void;
  readonly reject: (err: Error) => void;
}

/**
 * The real memory store; every `get` waits until the scenario delivers or fails it, but for the
 * reads a change makes itself (`ClientRegistry.write` reads the record it replaces, for the CORS
 * origin index): the property is about lookups, and a change is one step of the scenario.
 */
function holdingStore(real: MemoryStore, held: HeldGet[], changing: { now: boolean }): Store {
  return new Proxy(real, {
    get(target, property, receiver) {
      if (property === 'get' && !changing.now) {
        return (key: StoreKey) => new Promise((resolve, reject) => held.push({ read: target.get(key), resolve, reject }));
      }
      const value = Reflect.get(target, property, receiver) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  }) as unknown as Store;
}

/** A client whose `accessTokenLifetime` is its version in the store: what an answer is checked by. */
function clientConfig(clientId: string, version: number): ClientConfig {
  return clientSchema.parse({
    clientId,
    clientSecrets: [{ value: 'K7gNU3sdo+OL0wNhqoVWhr3g6s1xYv72ol/pe/Unols=' }],
    allowedGrantTypes: ['client_credentials'],
    allowedScopes: ['api1'],
    accessTokenLifetime: 60 + version,
  }) as ClientConfig;
}

type Answer =
  | { kind: 'client'; client: RegisteredClient }
  | { kind: 'unknown' }
  | { kind: 'unavailable' }
  | { kind: 'wrong'; detail: string };

interface Request {
  readonly id: string;
  /** The id's store version when the request came: its answer may not be older. */
  readonly versionAtIssue: number;
  readonly answers: Answer[];
}

async function flush(): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
}

async function run(ops: readonly Op[], finalFailures: readonly boolean[]): Promise<void> {
  const real = new MemoryStore();
  const held: HeldGet[] = [];
  let now = 1_000_000;
  const changing = { now: false };
  const registry = new ClientRegistry(holdingStore(real, held, changing), {
    cacheSize,
    negativeCacheSize,
    cacheTtlMs,
    pollIntervalMs: 250,
    maxLookupsInFlight: cap,
    logger: pino({ level: 'silent' }),
    now: () => now,
  });
  /** Per id: its version now, and whether it was present at each version. */
  const version = new Map<string, number>(ids.map((id) => [id, 0]));
  const presentAt = new Map<string, boolean[]>(ids.map((id) => [id, [false]]));
  const requests: Request[] = [];

  const check = (where: string): void => {
    if (registry.lookupsInFlight > cap) throw new Error(`${where}: ${registry.lookupsInFlight} lookups over the cap`);
    if (registry.cachedClients > cacheSize) throw new Error(`${where}: ${registry.cachedClients} cached over ${cacheSize}`);
    if (registry.cachedUnknownIds > negativeCacheSize)
      throw new Error(`${where}: ${registry.cachedUnknownIds} unknown over ${negativeCacheSize}`);
  };
  const change = async (id: string, present: boolean): Promise<void> => {
    const next = (version.get(id) as number) + 1;
    changing.now = true;
    try {
      if (present) await registry.write(clientConfig(id, next));
      else await registry.remove(id);
    } finally {
      changing.now = false;
    }
    version.set(id, next);
    (presentAt.get(id) as boolean[])[next] = present;
  };
  const deliver = async (index: number, fail: boolean): Promise<void> => {
    const [get] = held.splice(index, 1);
    if (get === undefined) return;
    if (fail) get.reject(new StoreUnavailableError('held get failed'));
    else get.resolve(await get.read);
  };

  for (const [step, next] of ops.entries()) {
    switch (next.kind) {
      case 'ask': {
        const id = ids[next.id] as string;
        const request: Request = { id, versionAtIssue: version.get(id) as number, answers: [] };
        requests.push(request);
        // Client authentication's path (gateway/client_authentication/step.ts).
        const cached = registry.cached(id);
        if (cached === null) request.answers.push({ kind: 'unknown' });
        else if (cached !== undefined) request.answers.push({ kind: 'client', client: cached });
        else
          registry.lookup(id).then(
            (client) => request.answers.push(client === undefined ? { kind: 'unknown' } : { kind: 'client', client }),
            (err: unknown) =>
              request.answers.push(err instanceof StoreUnavailableError ? { kind: 'unavailable' } : { kind: 'wrong', detail: String(err) }),
          );
        break;
      }
      case 'deliver':
      case 'fail':
        await deliver(next.which % Math.max(1, held.length), next.kind === 'fail');
        break;
      case 'write':
        await change(ids[next.id] as string, true);
        break;
      case 'remove':
        await change(ids[next.id] as string, false);
        break;
      case 'invalidate':
        registry.invalidate();
        break;
      case 'tick':
        now += next.ms;
        break;
    }
    await flush();
    check(`step ${step} (${next.kind})`);
  }
  // The store answers whatever is still held (a Redis command ends within its bound).
  for (let i = 0; held.length > 0; i++) {
    await deliver(0, finalFailures[i % Math.max(1, finalFailures.length)] === true);
    await flush();
  }
  await flush();
  check('at the end');
  if (registry.lookupsInFlight !== 0) throw new Error(`${registry.lookupsInFlight} lookups left in flight`);
  for (const [i, request] of requests.entries()) {
    if (request.answers.length !== 1) throw new Error(`request ${i} (${request.id}) answered ${request.answers.length} times`);
    const answer = request.answers[0] as Answer;
    if (answer.kind === 'wrong') throw new Error(`request ${i}: ${answer.detail}`);
    if (answer.kind === 'client') {
      if (answer.client.clientId !== request.id) throw new Error(`request ${i} for ${request.id} got ${answer.client.clientId}`);
      const answered = (answer.client.stored?.accessTokenLifetime ?? 0) - 60;
      if (answered < request.versionAtIssue) {
        throw new Error(`request ${i} for ${request.id} got version ${answered}, older than ${request.versionAtIssue} when it came`);
      }
    } else if (answer.kind === 'unknown') {
      const history = presentAt.get(request.id) as boolean[];
      if (!history.slice(request.versionAtIssue).some((present) => !present)) {
        throw new Error(`request ${i} for ${request.id} got "unknown"; it was present from version ${request.versionAtIssue} on`);
      }
    }
  }
}

t.test('every request answered exactly once, never older than a change before it; gauges and bounds hold', async () => {
  await fc.assert(fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 80 }), fc.array(fc.boolean(), { maxLength: 4 }), run), {
    numRuns: 300,
  });
});
