import { OAuthErrors } from '../../core/oauth_errors.js';
import type { TaskFacts } from '../../wire/task_facts.js';
import { errorResult, type TokenTaskResult } from '../../wire/token_task.js';

export const serverError: TokenTaskResult = errorResult(OAuthErrors.serverError);

// Marked, so that the gateway logs a store outage once rather than once per request.
export const storeFailed: TaskFacts = Object.freeze({ storeUnavailable: true as const });

export const storeUnavailable: TokenTaskResult = [
  OAuthErrors.temporarilyUnavailable.status,
  OAuthErrors.temporarilyUnavailable.body,
  2,
  OAuthErrors.temporarilyUnavailable.error,
  storeFailed,
];
