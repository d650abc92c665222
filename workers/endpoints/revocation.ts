import type { RegisteredClient } from '../../core/client_model.js';
import { OAuthError, OAuthErrors } from '../../core/oauth_errors.js';
import type { TokenRequestProofs } from '../dpop/token_request_proof.js';
import type { Store } from '../../core/store/store.js';
import { parseRefreshHandle } from '../../core/records/refresh_token_handle.js';
import type { RefreshTokenRecord } from '../tokens/refresh_token_record.js';
import { denyAccessToken, revokeRefreshFamily } from '../../core/records/family_revocation.js';
import type { AccessTokenValidator } from '../tokens/token_validator.js';
import type { FormParams } from '../../wire/token_task.js';
import { noteRevoked } from '../task_facts_recorder.js';
import type { TaskFacts } from '../../wire/task_facts.js';

export interface RevocationServices {
  readonly tokenValidator: AccessTokenValidator;
  readonly store: Store;
  readonly now: () => number;
  readonly clients: ReadonlyMap<string, RegisteredClient>;
  /** Proofs for the revocation endpoint's URL (RFC 9449 §4.3 `htu`). */
  readonly revocationProofs: TokenRequestProofs;
}

/**
 * RFC 7009 §2.1: revokes a refresh token (with its family and the access tokens issued from it)
 * or a JWT access token (its `jti` on the deny list until it expires). The hint orders the
 * attempts but is not trusted. Unknown tokens, tokens already revoked and tokens of other clients
 * all answer 200 (§2.2), and another client's token is left alone. A refresh token bound to a
 * DPoP key is revoked only with `proof` by that key (RFC 9449 §5), one bound to a TLS client
 * certificate only over a connection with that certificate (`x5t`, RFC 8705 §4): else an error,
 * and the token stays. What it revoked is noted on `facts` for the audit events, when the gateway asked for them.
 * @throws OAuthError `invalid_dpop_proof` (or `use_dpop_nonce`) for a bound refresh token without
 * a good proof by its key; `invalid_request` for a certificate-bound one without its certificate.
 */
export async function revoke(
  clientId: string,
  params: FormParams,
  services: RevocationServices,
  facts?: TaskFacts,
  proof?: string,
  x5t?: string,
): Promise<void> {
  const token = params.token ?? '';
  const request = { clientId, proof, x5t };
  if (params.token_type_hint === 'refresh_token') {
    if (!(await revokeRefreshToken(token, request, services, facts))) await revokeAccessToken(token, clientId, services, facts);
  } else if (!(await revokeAccessToken(token, clientId, services, facts))) {
    await revokeRefreshToken(token, request, services, facts);
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
  { clientId, proof, x5t }: { clientId: string; proof: string | undefined; x5t: string | undefined },
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
    await checkKeyBinding(record, clientId, proof, services);
    checkCertificateBinding(record, clientId, x5t, services);
    await revokeRefreshFamily(services.store, handle.family, Math.max(1000, record.absoluteExpiresAt - now), now);
    noteRevoked(facts, 'refresh_token', { subject: record.subject });
  }
  return true;
}

/**
 * RFC 9449 §5: a public client's refresh token is bound to a DPoP key, and its client
 * authentication is only a client id, which anyone who stole the token can send. Revoking it
 * therefore takes a proof by that key, as refreshing it does; without one the family stays (a
 * thief cannot burn it). A confidential client authenticates, so a binding left from when the
 * client was public asks nothing more. Answered as an error rather than RFC 7009's 200: the token
 * is valid and the caller's, and a 200 would tell its owner that the family is gone when it is not
 * (docs/endpoints.md, "Revocation endpoint").
 */
async function checkKeyBinding(
  record: RefreshTokenRecord,
  clientId: string,
  proof: string | undefined,
  services: RevocationServices,
): Promise<void> {
  if (record.jkt === undefined) return;
  const client = services.clients.get(clientId);
  if (client === undefined || client.requireSecret) return;
  if (proof === undefined) throw new OAuthError(OAuthErrors.revocationProofRequired);
  const jkt = await services.revocationProofs.keyOf(proof, client);
  if (jkt !== record.jkt) {
    throw new OAuthError(OAuthErrors.revocationProofRequired, { detail: 'DPoP proof by another key than the refresh token is bound to' });
  }
}

/**
 * RFC 8705 §4: a public client's refresh token may be bound to its TLS client certificate instead
 * (workers/grants/token_issuance.ts), and revoking it takes the same certificate, for the reason
 * the DPoP case above takes a proof, answered the same way (an error, nothing revoked). The
 * gateway sends the thumbprint of a certificate only from a trusted proxy or its own TLS.
 */
function checkCertificateBinding(
  record: RefreshTokenRecord,
  clientId: string,
  x5t: string | undefined,
  services: RevocationServices,
): void {
  if (record.x5t === undefined) return;
  const client = services.clients.get(clientId);
  if (client === undefined || client.requireSecret) return;
  if (x5t !== record.x5t) throw new OAuthError(OAuthErrors.revocationCertificateRequired);
}
