import { userPolicy } from '../../core/rules/scope_rules.js';
import type { TaskFacts } from '../../wire/task_facts.js';
import { successResult, type LoginItem, type TokenTaskResult } from '../../wire/token_task.js';
import type { BootedWorker } from './boot.js';
import { serverError } from './task_results.js';
import { clientOf } from './task_client.js';

// The login pages' credential check: the password grant's, so both share validator and throttle.
export async function handleLogin(
  worker: BootedWorker,
  { clientId, params, address, client: stored }: LoginItem,
  facts: TaskFacts | undefined,
): Promise<TokenTaskResult> {
  const { services } = worker;
  const client = clientOf(worker, clientId, stored);
  if (client === undefined) return serverError;
  const request = { grantType: 'authorization_code', client, params, address, facts };
  const scopes = services.scopes.resolve(client, params.scope, userPolicy);
  const user = await worker.authenticateResourceOwner(request, services, scopes);
  return successResult(JSON.stringify(user));
}
