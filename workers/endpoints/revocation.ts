import type { Store } from '../store/store.js';
import { parseRefreshHandle } from '../tokens/refresh_token_handle.js';
import type { RefreshTokenRecord } from '../tokens/refresh_token_record.js';
import { denyAccessToken, revokeRefreshFamily } from '../tokens/token_revocation.js';
import type { AccessTokenValidator } from '../tokens/token_validator.js';
import type { FormParams } from '../protocol/token_task.js';
import { noteRevoked } from '../task_facts_recorder.js';
import type { TaskFacts } from '../protocol/task_facts.js';

export interface RevocationServices {
  readonly tokenValidator: AccessTokenValidator;
  readonly store: Store;
  readonly now: () => number;
}

/**
 * RFC 7009 §2.1: revokes a refresh token (with its family and the access tokens issued from it)
 * or a JWT access token (its `jti` on the deny list until it expires). The hint orders the
 * attempts but is not trusted. Unknown tokens, tokens already revoked and tokens of other clients
 * all answer 200 (§2.2), and another client's token is left alone. What it revoked is noted on
 * `facts` for the audit events, when the gateway asked for them.
 */
export async function revoke(clientId: string, params: FormParams, services: RevocationServices, facts?: TaskFacts): Promise<void> {
  const token = params.token ?? '';
  if (params.token_type_hint === 'refresh_token') {
    if (!(await revokeRefreshToken(token, clientId, services, facts))) await revokeAccessToken(token, clientId, services, facts);
  } else if (!(await revokeAccessToken(token, clientId, services, facts))) {
    await revokeRefreshToken(token, clientId, services, facts);
  }
}

async function revokeAccessToken(
  token: string,
  clientId: string,
  services: RevocationServices,
  facts: TaskFacts | undefined,
): Promise<boolean> {
  if (token.split('.').length !== 3) return false;
  const verified = await services.tokenValidator.verify(token, { checkTime: false });
  if (!verified.ok) return false;
  const { jti, exp, client_id: owner } = verified.payload;
  if (owner !== clientId || typeof jti !== 'string' || typeof exp !== 'number') return true;
  await denyAccessToken(services.store, { jti, exp }, services.now());
  const subject = verified.payload.sub;
  noteRevoked(facts, 'access_token', typeof subject === 'string' ? { jti, subject } : { jti });
  return true;
}

async function revokeRefreshToken(
  token: string,
  clientId: string,
  services: RevocationServices,
  facts: TaskFacts | undefined,
): Promise<boolean> {
  const handle = parseRefreshHandle(token);
  if (handle === undefined) return false;
  const now = services.now();
  let record = await services.store.get<RefreshTokenRecord>(handle.key);
  if (record === null) {
    // A retired token of the family still names the grant to revoke (RFC 7009 §2.1): its chain
    // remembers it (docs/storage.md, "Refresh-token chains"). No grace window: never a retry, so
    // the rate limit given is never consulted.
    const retired = await services.store.chainLookup<RefreshTokenRecord>(handle.key, 0, { limit: 1, windowMs: 60_000, ttlMs: 1000 });
    if (retired.status !== 'replayed') return false;
    record = retired.value;
  }
  if (record.clientId === clientId) {
    await revokeRefreshFamily(services.store, handle.family, Math.max(1000, record.absoluteExpiresAt - now), now);
    noteRevoked(facts, 'refresh_token', { subject: record.subject });
  }
  return true;
}
