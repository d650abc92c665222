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
}

export interface LoadOptions {
  /** Base URL of the server, `http://127.0.0.1:port` (never anything else). */
  baseUrl: string;
  request: LoadRequest;
  expect: Expectation;
  connections: number;
  durationS: number;
}

export interface LatencyMs {
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

export interface LoadResult {
  requests: number;
  durationS: number;
  rps: number;
  latencyMs: LatencyMs;
  /** Responses with a status outside 2xx. */
  non2xx: number;
  /** 2xx responses with another status than expected or a body that does not start as expected. */
  unexpected: number;
  /** Socket-level failures. */
  errors: { connect: number; read: number; write: number; timeout: number };
  /** The first bad response seen (status and start of body), to show in the report. */
  badSample: string | null;
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

/** Why a run cannot count as a result, or null when every response was as expected. */
export function invalidReason(result: LoadResult): string | null {
  const problems: string[] = [];
  if (result.requests === 0) problems.push('no responses');
  if (result.non2xx > 0) problems.push(`${result.non2xx} non-2xx`);
  if (result.unexpected > 0) problems.push(`${result.unexpected} unexpected bodies`);
  const errors = errorCount(result);
  if (errors > 0) problems.push(`${errors} socket errors`);
  if (problems.length === 0) return null;
  return problems.join(', ') + (result.badSample === null ? '' : ` (first: ${result.badSample})`);
}
