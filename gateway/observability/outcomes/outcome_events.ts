import type { AuditEventInput, AuditEventName } from '../events/audit_event.js';
import type { AuditEvents } from '../events/audit_events.js';
import type { TaskFacts } from '../../../wire/task_facts.js';
import type { AnsweredRequest } from './answered_request.js';

const reuseEvents: Readonly<Record<string, AuditEventName>> = {
  refresh_token: 'RefreshTokenReuseDetected',
  authorization_code: 'AuthorizationCodeReuseDetected',
  device_code: 'AuthorizationCodeReuseDetected',
};

/**
 * An answered request's audit events (docs/operations.md, "Events"): a refused client
 * authentication, a token issued or refused, a reuse, a sign-in, a revocation. Each event written
 * out in full, not spread from a shared object: one object per event.
 */
export function emitOutcomeEvents(events: AuditEvents, answered: AnsweredRequest): void {
  const { clientId, grantType, remoteAddress, path, status, error, facts } = answered;
  if (answered.authFailure !== undefined && answered.authFailure !== 'blocked') {
    events.emit({ name: 'ClientAuthenticationFailure', outcome: 'failure', clientId, grantType, remoteAddress, endpoint: path, error });
  }
  if (answered.endpoint === 'token') {
    const subject = facts?.subject;
    events.emit(
      status === 200
        ? { name: 'TokenIssuedSuccess', outcome: 'success', clientId, grantType, remoteAddress, endpoint: path, subject, jti: facts?.jti }
        : { name: 'TokenIssuedFailure', outcome: 'failure', clientId, grantType, remoteAddress, endpoint: path, subject, error },
    );
  }
  if (facts !== undefined) emitFactEvents(events, answered, facts);
}

/** The events of what the worker learned: a reuse, a sign-in, a revoked token. */
function emitFactEvents(events: AuditEvents, answered: AnsweredRequest, facts: TaskFacts): void {
  const common = {
    clientId: answered.clientId,
    grantType: answered.grantType,
    remoteAddress: answered.remoteAddress,
    endpoint: answered.path,
  };
  if (facts.reuse !== undefined) {
    const reuse: AuditEventInput = {
      name: reuseEvents[facts.reuse] ?? 'RefreshTokenReuseDetected',
      outcome: 'failure',
      ...common,
      subject: facts.subject,
      error: 'invalid_grant',
      details: { item: facts.reuse, familyRevoked: true },
    };
    events.emit(reuse);
  }
  if (facts.login !== undefined) {
    events.emit({
      name: facts.login.success ? 'UserLoginSuccess' : 'UserLoginFailure',
      outcome: facts.login.success ? 'success' : 'failure',
      ...common,
      subject: facts.login.subject,
      username: facts.login.username,
      error: facts.login.reason,
    });
  }
  if (facts.revoked !== undefined && answered.status === 200) {
    events.emit({
      name: 'TokenRevoked',
      outcome: 'success',
      ...common,
      subject: facts.subject,
      jti: facts.jti,
      details: { tokenType: facts.revoked },
    });
  }
}
