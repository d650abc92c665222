import { introspect } from '../endpoints/introspection.js';
import { revoke } from '../endpoints/revocation.js';
import { userInfo } from '../endpoints/userinfo.js';
import { checkAccessToken } from '../endpoints/access_token_check.js';
import { OAuthError } from '../../core/oauth_errors.js';
import type { TaskFacts } from '../../wire/task_facts.js';
import {
  errorResult,
  successResult,
  type AuthorizationRequestItem,
  type TaskItem,
  type TokenItem,
  type TokenTaskResult,
} from '../../wire/token_task.js';
import { isStoreUnavailable } from '../../core/store/store.js';
import { registerStoredClient } from '../../core/client_model.js';
import { timingStoreCommands } from '../task_facts_recorder.js';
import type { BootedWorker } from './boot.js';
import { handleLogin } from './login.js';
import { clientOf } from './task_client.js';
import { serverError, storeFailed, storeUnavailable } from './task_results.js';

/** One request's answer, with what its audit events need when the gateway asked for it. */
export async function answerItem(worker: BootedWorker, item: TaskItem): Promise<TokenTaskResult> {
  const { boot } = worker;
  if (!boot.recordFacts) return handleItem(worker, item, undefined);
  const facts: TaskFacts = {};
  const result = boot.recordTiming
    ? await timingStoreCommands(facts, () => handleItem(worker, item, facts))
    : await handleItem(worker, item, facts);
  // A store failure's answer carries its own (shared) facts: keep what was learned before it.
  if (result.length === 5)
    return result[4] === storeFailed ? [result[0], result[1], result[2], result[3], { ...facts, storeUnavailable: true }] : result;
  return Object.keys(facts).length === 0 ? result : [result[0], result[1], result[2], result[3], facts];
}

/** Sends a request to its endpoint; an error becomes its answer, never a thrown task. */
async function handleItem(worker: BootedWorker, item: TaskItem, facts: TaskFacts | undefined): Promise<TokenTaskResult> {
  try {
    // Client authentication comes before anything else the request does (RFC 6749 §3.2.1).
    if (item.kind !== 'login' && item.kind !== 'userinfo' && item.kind !== 'access_token' && item.clientAssertion !== undefined) {
      await worker.clientAssertions.verify(item.kind === 'introspection' ? item.callerId : item.clientId, item.clientAssertion);
    }
    return await routeItem(worker, item, facts);
  } catch (err) {
    return failedAnswer(worker, item, err);
  }
}

async function routeItem(worker: BootedWorker, item: TaskItem, facts: TaskFacts | undefined): Promise<TokenTaskResult> {
  const { endpoints } = worker;
  switch (item.kind) {
    case 'client_assertion':
      return successResult('');
    case 'authorization_request':
      return await checkAuthorizationRequest(worker, item);
    case 'token':
      return await handleTokenRequest(worker, item, facts);
    case 'introspection':
      return successResult(await introspect(item.caller, item.callerId, item.params, endpoints));
    case 'revocation':
      await revoke(
        item.clientId,
        item.params,
        // The caller is the one client revocation looks up: a store-kept one came with the item.
        item.client === undefined ? endpoints : { ...endpoints, clients: new Map([[item.clientId, registerStoredClient(item.client)]]) },
        facts,
        item.dpop,
        item.x5t,
      );
      return successResult('');
    case 'login':
      return await handleLogin(worker, item, facts);
    case 'userinfo':
      return await userInfo(item, endpoints);
    case 'access_token':
      return await checkAccessToken(item, endpoints);
    default: {
      const unknown: never = item;
      worker.logger.error({ kind: (unknown as { kind?: unknown }).kind }, 'task for an unknown endpoint');
      return serverError;
    }
  }
}

function failedAnswer(worker: BootedWorker, item: TaskItem, err: unknown): TokenTaskResult {
  const { logger } = worker;
  const request = describeItem(item);
  if (err instanceof OAuthError) {
    if (err.detail !== undefined) logger.info({ ...request, detail: err.detail }, 'request rejected');
    return errorResult(err, err.retryAfter ?? null);
  }
  if (isStoreUnavailable(err)) {
    // The gateway logs the outage once with a count (docs/operations.md, "Logs").
    logger.debug(request, 'store unavailable');
    return storeUnavailable;
  }
  logger.error({ ...request, err }, 'request handler failed');
  return serverError;
}

/** What the logs say about a request: never its parameters (passwords, tokens). */
function describeItem(item: TaskItem): Record<string, string> {
  switch (item.kind) {
    case 'token':
      return { kind: item.kind, grantType: item.grantType, clientId: item.clientId };
    case 'introspection':
      return { kind: item.kind, caller: item.caller, callerId: item.callerId };
    case 'userinfo':
    case 'access_token':
      return { kind: item.kind };
    default:
      return { kind: item.kind, clientId: item.clientId };
  }
}

async function handleTokenRequest(
  worker: BootedWorker,
  { grantType, clientId, params, address, dpop, x5t, client: stored }: TokenItem,
  facts: TaskFacts | undefined,
): Promise<TokenTaskResult> {
  const { services } = worker;
  const handler = worker.registry.get(grantType);
  const client = clientOf(worker, clientId, stored);
  if (handler === undefined || client === undefined) {
    worker.logger.error({ grantType }, 'token task for an unknown grant type or client');
    return serverError;
  }
  // RFC 9449 §5: the proof first; the grant then binds its tokens to the proof's key.
  const jkt = dpop === undefined ? undefined : await worker.tokenRequestProofs.keyOf(dpop, client);
  const response = await handler.handle({ grantType, client, params, address, jkt, x5t, facts }, services);
  return successResult(JSON.stringify(response));
}

/**
 * The signature checks of a pushed authorization request or a request object (the assertion ran
 * before, in {@link handleItem}): the DPoP proof, its key's thumbprint the answer (RFC 9449 §10),
 * then the request object (RFC 9101 §6.2).
 */
async function checkAuthorizationRequest(
  worker: BootedWorker,
  { clientId, dpop, requestObject, client: stored }: AuthorizationRequestItem,
): Promise<TokenTaskResult> {
  const client = clientOf(worker, clientId, stored);
  if (client === undefined) {
    worker.logger.error('authorization request task for an unknown client');
    return serverError;
  }
  const jkt = dpop === undefined ? undefined : await worker.pushedRequestProofs.keyOf(dpop, client);
  if (requestObject !== undefined) await worker.clientAssertions.verifyRequestObject(clientId, requestObject);
  return successResult(jkt === undefined ? '{}' : JSON.stringify({ jkt }));
}
