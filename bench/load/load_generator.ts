/** What the runner asks of a load generator, whichever drives the traffic (wrk or autocannon). */

export interface LoadRequest {
  method: 'GET' | 'POST';
  path: string;
  headers: Readonly<Record<string, string>>;
  body?: string;
}

/** What every response of a run must look like; anything else is counted and voids the run. */
export interface Expectation {
  status: number;
  /** The body must start with this (e.g. `{"access_token":"`). */
  bodyPrefix: string;
  /** The body must also contain each of these (e.g. `"refresh_token":"`). */
  contains?: readonly string[];
  /** …and none of these: in a mix this is what tells one kind of answer from another. */
  lacks?: readonly string[];
}

/**
 * Request bodies that cannot be replayed (a refresh token, a code: one use each) or that must not
 * be sent too often (a pending device code): one body per line of `file`.
 */
export interface LoadFeed {
  file: string;
  /** Lines in the file. */
  count: number;
  /**
   * `once`: each line serves one request; when the lines run out the load generator stops and
   * the run says so (`exhausted`). `cycle`: the lines repeat, from `start`.
   */
  mode: 'once' | 'cycle';
  /** First line to use (0-based): a cycled feed continues where the previous run stopped. */
  start: number;
  /**
   * A header each line sets too (`Authorization`, for requests spread over many clients): each
   * line is then `<the header's value>\t<body>`, and the header replaces the kind's own.
   */
  header?: string;
}

/** One kind of request in a run. A run has one kind, or a weighted mix chosen per request. */
export interface LoadKind {
  /** A short identifier (letters, digits, `_`), used in the report. */
  name: string;
  /** Relative share of the requests. */
  weight: number;
  /** The request; with a `feed`, its body is replaced by the feed's line. */
  request: LoadRequest;
  expect: Expectation;
  feed?: LoadFeed;
}

export interface LoadOptions {
  /** Base URL of the server, `http://127.0.0.1:port` (never anything else). */
  baseUrl: string;
  kinds: readonly LoadKind[];
  connections: number;
  durationS: number;
  /** A folder for the generator's own files (wrk's request spec). */
  workDir: string;
}

export interface LatencyMs {
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

/** Per kind of request: what was sent and what came back as that kind expects. */
export interface KindCount {
  name: string;
  /** Requests written; null when the generator replays one fixed request and does not count them. */
  sent: number | null;
  /** Responses that met this kind's expectation. */
  matched: number;
  /** Feed lines used (a cycled feed's next run starts this much further). */
  taken: number;
}

export interface LoadResult {
  requests: number;
  durationS: number;
  rps: number;
  latencyMs: LatencyMs;
  /** Responses with a status outside 2xx that no kind expected. */
  non2xx: number;
  /** Responses that met no kind's expectation otherwise (wrong status, body). */
  unexpected: number;
  /** Socket-level failures. */
  errors: { connect: number; read: number; write: number; timeout: number };
  /** The first bad response seen (status and start of body), to show in the report. */
  badSample: string | null;
  kinds: KindCount[];
  /** The kind whose `once` feed ran out: the load stopped before the end. */
  exhausted: string | null;
}

export interface LoadRun {
  /** The process generating the load, for its CPU time. */
  readonly pid: number;
  /** Resolves when traffic begins (after the generator's own start-up). */
  readonly started: Promise<void>;
  readonly done: Promise<LoadResult>;
}

export interface LoadGenerator {
  readonly name: 'wrk' | 'autocannon';
  readonly version: string;
  readonly threads: number;
  start(options: LoadOptions): LoadRun;
}

export function errorCount(result: LoadResult): number {
  const e = result.errors;
  return e.connect + e.read + e.write + e.timeout;
}

/** Whether a response meets an expectation (the same test the load generators apply). */
export function meets(expect: Expectation, status: number, body: string): boolean {
  if (status !== expect.status || !body.startsWith(expect.bodyPrefix)) return false;
  for (const text of expect.contains ?? []) if (!body.includes(text)) return false;
  for (const text of expect.lacks ?? []) if (body.includes(text)) return false;
  return true;
}

/** Why a run cannot count as a result, or null when every response was as expected. */
export function invalidReason(result: LoadResult, connections: number): string | null {
  const problems: string[] = [];
  if (result.requests === 0) problems.push('no responses');
  if (result.non2xx > 0) problems.push(`${result.non2xx} non-2xx`);
  if (result.unexpected > 0) problems.push(`${result.unexpected} unexpected bodies`);
  const errors = errorCount(result);
  if (errors > 0) problems.push(`${errors} socket errors`);
  if (result.exhausted !== null) problems.push(`the ${result.exhausted} feed ran out, so the load stopped early (more must be prepared)`);
  // Every request written is answered as its kind expects, except those in flight when the run
  // ended (at most one per connection) and the one wrk builds at start-up to check the script
  // (script_verify_request), which is never sent. Anything else means answers went astray.
  for (const kind of result.kinds) {
    if (kind.sent === null) continue;
    if (kind.matched > kind.sent || kind.sent - kind.matched > connections + 1) {
      problems.push(`${kind.name}: ${kind.sent} sent but ${kind.matched} answered as expected`);
    }
  }
  if (problems.length === 0) return null;
  return problems.join(', ') + (result.badSample === null ? '' : ` (first: ${result.badSample})`);
}
