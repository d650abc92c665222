/**
 * Calling the user modules of `validatorsDir` (extension-grant and password validators, the
 * profile service) and checking what they hand back: a time limit with the same answers for
 * every module, the read-only view of a client they are given, and their claims, refused when
 * malformed or when they would set a claim the service owns (validators/README.md).
 */
import type { Logger } from 'pino';
import { OAuthError, OAuthErrors } from '../../core/oauth_errors.js';
import type { RegisteredClient } from '../../core/client_model.js';
import type { ClaimValue, ValidatedTokenRequest } from '../../core/validator_api.js';
import { isStoreUnavailable } from '../../core/store/store.js';
import { protectedClaims } from '../tokens/access_token.js';

/**
 * Runs a validator's `validate` within `timeoutMs`. A throw becomes `invalid_grant` (the message
 * is logged, never returned); a timeout `503 temporarily_unavailable`.
 */
export async function runWithTimeout<C>(
  validator: { readonly grantType?: string; validate(context: C): Promise<void> },
  context: C,
  timeoutMs: number,
  logger: Logger,
): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = Symbol('timeout');
  try {
    const outcome = await Promise.race([
      Promise.resolve().then(() => validator.validate(context)),
      new Promise<typeof timedOut>((resolve) => {
        timer = setTimeout(() => resolve(timedOut), timeoutMs);
      }),
    ]);
    if (outcome === timedOut) {
      logger.warn({ grantType: validator.grantType, timeoutMs }, 'validator did not settle in time');
      throw new OAuthError(OAuthErrors.temporarilyUnavailable, { retryAfter: 1 });
    }
  } catch (err) {
    if (err instanceof OAuthError) throw err;
    // The store (e.g. the token validator's deny list) is down: 503, not a rejected grant (docs/endpoints.md, "Error table").
    if (isStoreUnavailable(err)) throw err;
    // The message goes to the log only: it may hold anything (validators/README.md).
    logger.warn({ grantType: validator.grantType, err }, 'validator threw');
    throw new OAuthError(OAuthErrors.invalidGrant);
  } finally {
    clearTimeout(timer);
  }
}

const validatedClients = new WeakMap<RegisteredClient, ValidatedTokenRequest['client']>();

export function validatedClient(client: RegisteredClient): ValidatedTokenRequest['client'] {
  let view = validatedClients.get(client);
  if (view === undefined) {
    view = Object.freeze({
      clientId: client.clientId,
      clientName: client.config.clientName,
      allowedScopes: client.config.allowedScopes,
      allowedGrantTypes: client.config.allowedGrantTypes,
      claims: client.config.claims,
      audiences: client.config.audiences,
      allowClientTokenExchange: client.config.allowClientTokenExchange,
      properties: Object.freeze({ ...client.config.properties }),
    });
    validatedClients.set(client, view);
  }
  return view;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/** A JSON value a claim may hold (`ClaimValue`): no functions, no `undefined`, no NaN. */
function isClaimValue(value: unknown): value is ClaimValue {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value);
    case 'object':
      if (Array.isArray(value)) return value.every((v) => typeof v === 'string');
      if (!isPlainObject(value)) return false;
      try {
        return JSON.stringify(value) !== undefined;
      } catch {
        return false;
      }
    default:
      return false;
  }
}

/**
 * A validator's claims, checked: the right shape (`{ name: value }` or `[{ type, value }]` with
 * string values), and none of the registered claims the service sets (`iss`, `sub`, `aud`, `exp`,
 * `client_id`, `cnf`, `scope`…), except `act`, which delegation exists to add (RFC 8693 §4.1) and
 * which must then be a JSON object. Returns the reason when they are refused.
 */
export function checkedGrantClaims(claims: unknown): Record<string, ClaimValue> | string {
  const out: Record<string, ClaimValue> = {};
  if (claims === undefined) return out;
  const pairs: [string, unknown][] = [];
  if (Array.isArray(claims)) {
    for (const claim of claims as unknown[]) {
      if (!isPlainObject(claim) || typeof claim.type !== 'string' || typeof claim.value !== 'string') {
        return 'validator gave claims that are not { type, value } pairs of strings';
      }
      pairs.push([claim.type, claim.value]);
    }
  } else if (isPlainObject(claims)) {
    pairs.push(...Object.entries(claims));
  } else {
    return 'validator gave claims that are neither an object nor an array of { type, value }';
  }
  for (const [type, value] of pairs) {
    if (type.length === 0) return 'validator gave a claim with an empty name';
    if (type === 'act') {
      if (!isPlainObject(value)) return 'validator gave an act claim that is not an object';
    } else if (protectedClaims.has(type)) {
      return `validator tried to set the protected claim ${type}`;
    }
    if (!isClaimValue(value)) return `validator gave claim ${type} a value that is not a JSON claim value`;
    const existing = out[type];
    if (existing === undefined) out[type] = value;
    else out[type] = [...(Array.isArray(existing) ? existing : [existing]), value] as ClaimValue;
  }
  return out;
}
