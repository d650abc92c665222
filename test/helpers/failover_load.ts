/**
 * Token traffic for the store failover tests (docs/operations.md, "What a failover costs"): one
 * loop per connection, half refreshing a refresh family of their own as a careful client does,
 * half asking for client_credentials tokens. Every answer is recorded with its time, so a test can
 * say what happened before, during and after a failover.
 */
import type { Test } from 'tap';
import { hashPassword } from '../../core/crypto/password_hash.js';
import { basicAuthorization } from './basic_authorization.js';
import { offlineUserClient } from './password_users.js';

/** The client that refreshes (secret `secret`), and the user it signs in. */
export const refreshClientId = 'failover-refresher';
const username = 'failover-user';
const password = 'failover-pw';

/** Longest wait for one answer: beyond it the request counts as a hang. */
export const requestTimeoutMs = 5000;
/** How long a refresh loop waits before retrying after a 503 or no answer. */
const retryPauseMs = 200;

export interface Outcome {
  readonly kind: 'refresh' | 'client_credentials';
  /** Milliseconds since the epoch. */
  readonly started: number;
  readonly ended: number;
  /** The HTTP status; 0 when no answer came (`error` says why, `timeout` for a hang). */
  readonly status: number;
  readonly retryAfter: string | null;
  /** The OAuth `error` of a non-200 answer, or the transport error. */
  readonly error: string | null;
}

/** One refresh family as its client sees it. */
export interface FamilyState {
  readonly index: number;
  /** Successful refreshes (rotations the client saw). */
  rotations: number;
  /** Retries of a token whose refresh got no 200 answer. */
  retries: number;
  /** Set when the chain ended: the answer that ended it and when. */
  lost: { at: number; status: number; error: string | null; description: string | null } | null;
}

export interface LoadRun {
  readonly outcomes: readonly Outcome[];
  readonly families: readonly FamilyState[];
  /** Stops every loop and waits for their last requests. */
  stop(): Promise<void>;
}

/**
 * A config patch that adds the refreshing client and its user (the password hashed once, here).
 * The client may rotate as often as the schema allows (6000 a minute): each loop refreshes its
 * family back to back, some 25 times a second, far past the default 60 a minute, whose 429 would
 * end the chain before the failover is seen; the rate limit has its own tests.
 */
export async function failoverClients(client: Record<string, unknown> = {}): Promise<(raw: Record<string, unknown>) => void> {
  const passwordHash = await hashPassword(password);
  return (raw) => {
    raw.users = [{ subjectId: 'sub-failover', username, passwordHash }];
    (raw.clients as unknown[]).push(offlineUserClient(refreshClientId, { refreshTokenRotationsPerMinute: 6000, ...client }));
  };
}

async function post(
  url: string,
  clientId: string,
  params: Record<string, string>,
): Promise<{ status: number; retryAfter: string | null; body: Record<string, unknown> }> {
  const res = await fetch(`${url}/connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basicAuthorization(clientId) },
    body: new URLSearchParams(params).toString(),
    signal: AbortSignal.timeout(requestTimeoutMs),
  });
  const text = await res.text();
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // a non-JSON answer is recorded by its status
  }
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body };
}

/** Signs the user in `count` times (password grant), a refresh family each. */
export async function obtainRefreshTokens(url: string, count: number): Promise<string[]> {
  const tokens: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const answer = await post(url, refreshClientId, { grant_type: 'password', username, password, scope: 'api1 offline_access' });
    const token = answer.body.refresh_token;
    if (answer.status !== 200 || typeof token !== 'string') throw new Error(`password grant answered ${answer.status}`);
    tokens.push(token);
  }
  return tokens;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Starts `refreshTokens.length` refresh loops and `clientCredentialsLoops` client_credentials
 * loops, each one request at a time (so one connection each). A refresh loop keeps the newest
 * token it was given; after a 503 or no answer it retries the same token (the grace window,
 * docs/storage.md "Refresh grace window", is what lets it); any other answer ends its chain.
 */
export function startFailoverLoad(url: string, refreshTokens: readonly string[], clientCredentialsLoops: number): LoadRun {
  const outcomes: Outcome[] = [];
  let running = true;

  const send = async (kind: Outcome['kind'], clientId: string, params: Record<string, string>) => {
    const started = Date.now();
    try {
      const answer = await post(url, clientId, params);
      const error = typeof answer.body.error === 'string' ? answer.body.error : null;
      outcomes.push({ kind, started, ended: Date.now(), status: answer.status, retryAfter: answer.retryAfter, error });
      return answer;
    } catch (err) {
      const name = err instanceof Error ? err.name : 'error';
      const error = name === 'TimeoutError' ? 'timeout' : err instanceof Error ? err.message : String(err);
      outcomes.push({ kind, started, ended: Date.now(), status: 0, retryAfter: null, error });
      return null;
    }
  };

  const families: FamilyState[] = refreshTokens.map((_, index) => ({ index, rotations: 0, retries: 0, lost: null }));
  const refreshLoop = async (family: FamilyState, first: string): Promise<void> => {
    let token = first;
    while (running) {
      const answer = await send('refresh', refreshClientId, { grant_type: 'refresh_token', refresh_token: token });
      const next = answer?.body.refresh_token;
      if (answer !== null && answer.status === 200 && typeof next === 'string') {
        token = next;
        family.rotations += 1;
      } else if (answer === null || answer.status === 503) {
        family.retries += 1;
        await sleep(retryPauseMs);
      } else {
        const description = typeof answer.body.error_description === 'string' ? answer.body.error_description : null;
        const error = typeof answer.body.error === 'string' ? answer.body.error : null;
        family.lost = { at: Date.now(), status: answer.status, error, description };
        return;
      }
    }
  };
  const clientCredentialsLoop = async (): Promise<void> => {
    while (running) {
      const answer = await send('client_credentials', 'm2m', { grant_type: 'client_credentials', scope: 'api1' });
      if (answer === null || answer.status !== 200) await sleep(retryPauseMs);
    }
  };

  const loops = [
    ...families.map((family, i) => refreshLoop(family, refreshTokens[i] as string)),
    ...Array.from({ length: clientCredentialsLoops }, () => clientCredentialsLoop()),
  ];
  return {
    outcomes,
    families,
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

/** `kind status[/error]: count` lines of the outcomes in [from, to), for `t.comment`. */
export function countOutcomes(outcomes: readonly Outcome[], from = 0, to = Number.POSITIVE_INFINITY): string {
  const counts = new Map<string, number>();
  for (const o of outcomes) {
    if (o.started < from || o.started >= to) continue;
    const key = `${o.kind} ${o.status}${o.error === null ? '' : ` ${o.error}`}${o.status === 503 && o.retryAfter === null ? ' (no Retry-After)' : ''}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, count]) => `${key}: ${count}`)
    .join(', ');
}

export interface FailoverScenario {
  /** The gateway under test. */
  readonly url: string;
  /** Refresh loops (one family each) and client_credentials loops: one connection each. */
  readonly refreshLoops: number;
  readonly clientCredentialsLoops: number;
  /** Traffic before the failover starts. */
  readonly warmUpMs: number;
  /** Starts the failover (SENTINEL FAILOVER, a SIGKILL, CLUSTER FAILOVER…). */
  trigger(): Promise<void>;
  /** Resolves once the new master is elected and takes writes. */
  waitForElection(): Promise<void>;
  /** The stated bound: from the election, within this every request answers 200 again. */
  readonly recoveryBoundMs: number;
  /** Traffic kept up after that bound, all of which must answer 200. */
  readonly settledMs: number;
}

/**
 * Runs the traffic through a failover and asserts what docs/operations.md promises of one:
 * client_credentials answers 200 throughout; every other answer is 200 or 503 + Retry-After, none
 * a 500, none missing (a hang); from `recoveryBoundMs` after the election everything answers 200;
 * every refresh family continues. Counts of each outcome go to `t.comment`.
 */
export async function assertFailoverUnderLoad(t: Test, scenario: FailoverScenario): Promise<void> {
  const tokens = await obtainRefreshTokens(scenario.url, scenario.refreshLoops);
  const load = startFailoverLoad(scenario.url, tokens, scenario.clientCredentialsLoops);
  let triggeredAt = 0;
  let electedAt = 0;
  try {
    await sleep(scenario.warmUpMs);
    triggeredAt = Date.now();
    await scenario.trigger();
    await scenario.waitForElection();
    electedAt = Date.now();
    await sleep(scenario.recoveryBoundMs + scenario.settledMs);
  } finally {
    await load.stop();
  }
  const recoveredBy = electedAt + scenario.recoveryBoundMs;
  const { outcomes, families } = load;
  const unavailable = outcomes.filter((o) => o.status !== 200);
  const first503 = unavailable.find((o) => o.status === 503);
  const last503 = unavailable.findLast((o) => o.status === 503);
  t.comment(`election took ${electedAt - triggeredAt} ms after the trigger`);
  t.comment(`before the trigger: ${countOutcomes(outcomes, 0, triggeredAt)}`);
  t.comment(`trigger to election: ${countOutcomes(outcomes, triggeredAt, electedAt)}`);
  t.comment(`election to +${scenario.recoveryBoundMs} ms: ${countOutcomes(outcomes, electedAt, recoveredBy)}`);
  t.comment(`after that: ${countOutcomes(outcomes, recoveredBy)}`);
  if (first503 !== undefined && last503 !== undefined) {
    t.comment(
      `503s from ${first503.started - triggeredAt} ms to ${last503.ended - triggeredAt} ms after the trigger ` +
        `(${last503.ended - first503.started} ms), ${unavailable.length} of ${outcomes.length} requests not 200`,
    );
  } else {
    t.comment(`no 503 at all; ${unavailable.length} of ${outcomes.length} requests not 200`);
  }
  const rotations = families.reduce((sum, f) => sum + f.rotations, 0);
  const retries = families.reduce((sum, f) => sum + f.retries, 0);
  t.comment(`refresh families: ${families.length}, rotations seen ${rotations}, retries ${retries}`);

  t.same(
    countOutcomes(outcomes.filter((o) => o.kind === 'client_credentials' && o.status !== 200)),
    '',
    'client_credentials answers 200 throughout',
  );
  t.same(
    countOutcomes(outcomes.filter((o) => o.status !== 200 && !(o.status === 503 && o.retryAfter !== null))),
    '',
    'every other answer is 200 or 503 with Retry-After: no 500, no hang, no dropped connection',
  );
  t.same(
    countOutcomes(outcomes.filter((o) => o.started >= recoveredBy && o.status !== 200)),
    '',
    `everything answers 200 from ${scenario.recoveryBoundMs} ms after the election`,
  );
  t.ok(
    outcomes.filter((o) => o.started >= recoveredBy && o.kind === 'refresh').length >= scenario.refreshLoops,
    'refreshes were made after the recovery bound',
  );
  const lost = families.filter((f) => f.lost !== null);
  for (const f of lost) {
    t.comment(
      `family ${f.index} ended ${(f.lost?.at ?? 0) - triggeredAt} ms after the trigger, after ${f.rotations} rotations: ` +
        `${f.lost?.status} ${f.lost?.error} ${f.lost?.description ?? ''}`,
    );
  }
  t.equal(lost.length, 0, 'every refresh family continues');
}
