/**
 * The scenario contract. One file per scenario in this folder, listed in `index.ts`; a grant that
 * has not landed is a `PendingScenario` until someone writes its requests.
 */
import type { Expectation, LoadRequest } from '../load/load_generator.js';
import type { BenchAlgorithm } from '../support/keys.js';
import type { RequestFloor } from './floor.js';
import type { SeededItem, SeedRequest } from '../support/seed.js';

export type StoreKind = 'memory' | 'redis';

/** The request a load generator repeats, what every response must look like, and a deep check. */
export interface RequestPlan {
  request: LoadRequest;
  expect: Expectation;
  /**
   * Checks one full response before the load starts and after each run (the load generators
   * only check status and text): returns what is wrong, or null.
   */
  verify(status: number, body: string): string | null;
}

/**
 * Bodies for requests that cannot be replayed: one refresh token or code per request (`once`),
 * or a pool of pending device codes polled in turn (`cycle`).
 */
export interface Supply {
  mode: 'once' | 'cycle';
  /** `cycle`: how many distinct bodies [the runner's default]. */
  size?: number;
  /** Makes `count` request bodies (form-encoded), usually by seeding the server's store. */
  make(count: number, server: ServerAccess): Promise<string[]>;
}

/** One kind of request in a workload: a fixed request, or one whose body comes from a supply. */
export interface RequestKind extends RequestPlan {
  /** Letters, digits and `_` (the report and the wrk script use it). */
  name: string;
  /** Relative share of the requests (a mix picks per request). */
  weight: number;
  supply?: Supply;
}

/** What a scenario can do with a contender it prepares. */
export interface ServerAccess {
  readonly url: string;
  /** Sends one request and returns the JSON object answered; throws unless the status is 200. */
  call(request: LoadRequest): Promise<Record<string, unknown>>;
  /** Writes records straight into the server's store (support/seed.ts). */
  seed(request: SeedRequest): Promise<SeededItem[]>;
}

/** A server that is not Tessera, measured back to back with it under the same load. */
export interface PeerDefinition {
  /** Row label, e.g. "node-oidc-provider". */
  name: string;
  /** The `mode` argument of `peers/oidc_provider_process.ts`. */
  mode: 'client_credentials' | 'refresh_token';
  signing: BenchAlgorithm;
  /** One fixed request, or a workload built once the peer runs. */
  plan?: RequestPlan;
  workload?: (server: ServerAccess) => Promise<RequestKind[]>;
  /** A guess of its req/s, to size the first supply [2,000]. */
  expectedRps?: number;
  /**
   * Where its adapter keeps what it issues, when the scenario's requests need it: `memory` (a Map
   * in its own heap) or `redis` (the bench's redis-server, whose CPU is then counted as for Tessera).
   */
  store?: StoreKind;
}

/**
 * A second load beside every run of a Tessera contender (warm-ups included), from its own load
 * generator process and not measured itself: a flood of sign-ins while client_credentials is
 * measured, for example. Each Tessera contender is then measured twice, as two rows: alone, and
 * under this load (runner/background.ts).
 */
export interface BackgroundLoad {
  /** Shown after the contender's label, e.g. "sign-in flood". */
  name: string;
  /** Letters, digits and `_`: the load generator's name for its requests. */
  kind: string;
  /** Its own concurrent connections. */
  connections: number;
  /** The request it repeats and what a served answer looks like (`verify`: once, before the runs). */
  plan: RequestPlan;
  /**
   * The answer it gets when the server sheds it (a 503 from a bounded lane): counted apart, never an
   * error. Any answer that is neither this nor `plan.expect` voids the measured run.
   */
  shed: Expectation;
}

/** Context for {@link ActiveScenario.configure}. */
export interface ConfigureContext {
  /** The checkout whose gateway runs (for `validatorsDir`). */
  gatewayRoot: string;
}

export interface ActiveScenario {
  kind: 'active';
  name: string;
  /** One sentence: what the figure tells you (README and report). */
  measures: string;
  /** `tessera`, or `ceiling` for the trivial uWS endpoint (bench/ceiling_process.ts). */
  server: 'tessera' | 'ceiling';
  /** Stores Tessera is measured on, each as its own contender; `[]` when no request touches a store. */
  stores: readonly StoreKind[];
  /** Tessera's signing algorithm [ES256]. */
  signing?: BenchAlgorithm;
  /** Adds what the scenario needs (clients, users) to the bench config (support/bench_config.ts). */
  configure?: (config: Record<string, unknown>, context: ConfigureContext) => void;
  /** One fixed request, replayed. */
  plan?: RequestPlan;
  /**
   * Or: the kinds of request, built once the server runs (obtaining the tokens they carry) and fed
   * from supplies. The gateway then loads the bench seed grant (support/seed_grant.mjs).
   */
  workload?: (server: ServerAccess) => Promise<RequestKind[]>;
  /**
   * A guess of Tessera's req/s (a little above what it reaches), to size the first warm-up's
   * single-use items and floor the first measured run's [20,000]. Only scenarios that consume
   * items need it.
   */
  expectedRps?: number;
  /** Figures measured before the scenario that belong beside its table (e.g. a hash's cost). */
  notes?: () => Promise<string[]>;
  /**
   * The physical floor of one request's own work (floor.ts): measured in the same run, and each
   * Tessera row is printed as a multiple of it. Absent: no floor (the ceiling is one itself).
   */
  floor?: RequestFloor;
  peers?: readonly PeerDefinition[];
  /** Also measure each Tessera contender under this load, as a row of its own. */
  background?: BackgroundLoad;
}

export interface PendingScenario {
  kind: 'pending';
  name: string;
  measures: string;
  /** Shown as `pending: <reason>`, e.g. "the password grant has not landed". */
  pending: string;
}

export type Scenario = ActiveScenario | PendingScenario;
