import type { Logger } from 'pino';
import type { Exchange } from '../../http/exchange.js';
import type { AnsweredRequest } from './answered_request.js';

/**
 * Whether a request gets an access line: one per token request, per pushed authorization request
 * and per refused client authentication, at info (docs/operations.md, "Logs").
 */
export function wantsAccessLine(logger: Logger, exchange: Exchange, eachRequest: boolean): boolean {
  return (eachRequest || exchange.authFailure !== undefined) && logger.isLevelEnabled('info');
}

const accessMessages: Readonly<Partial<Record<AnsweredRequest['endpoint'], string>>> = {
  token: 'token request',
  pushed_authorization: 'pushed authorization request',
};

/** The access line: never a secret, a token or a code. */
export function writeAccessLine(logger: Logger, answered: AnsweredRequest, durationSeconds: number): void {
  logger.info(
    {
      endpoint: answered.path,
      grantType: answered.grantType,
      clientId: answered.clientId,
      status: answered.status,
      error: answered.error,
      durationMs: Math.round(durationSeconds * 10_000) / 10,
      address: answered.remoteAddress,
    },
    accessMessages[answered.endpoint] ?? 'request refused: client authentication',
  );
}
