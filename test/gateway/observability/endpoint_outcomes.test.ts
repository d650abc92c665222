// What an answered request becomes (gateway/observability/endpoint_outcomes.ts): its log line and audit events
// name the error code the answer was made with, carried beside the body from where the error was
// made (wire/token_task.ts), never read back out of the body.
import { fileURLToPath } from 'node:url';
import t from 'tap';
import type { AuditEvent } from '../../../gateway/observability/events/audit_event.js';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import { sha256Secret, startTestGateway } from '../../helpers/test_gateway.js';

const echoValidator = fileURLToPath(new URL('../../fixtures/validators/echo.ts', import.meta.url));

t.test('an extension grant refusal whose custom members hold an "error" of their own is counted by its code', async (t) => {
  const events: AuditEvent[] = [];
  const gw = await startTestGateway(t, {
    validatorModules: [echoValidator],
    watchValidators: false,
    patch: (raw) => {
      (raw.clients as unknown[]).push({
        clientId: 'ext',
        clientSecrets: [{ value: sha256Secret('secret') }],
        allowedGrantTypes: ['test_echo'],
        allowedScopes: ['api1'],
      });
    },
    onEvent: (event) => {
      events.push(event);
    },
  });
  // The validator's custom response comes first in the body, so a nested `error` member precedes
  // the body's own (core/oauth_errors.ts, errorBody).
  const res = await fetch(gw.tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basicAuthorization('ext') },
    body: new URLSearchParams({
      grant_type: 'test_echo',
      error: 'invalid_grant',
      error_description: 'The upstream refused.',
      response: JSON.stringify({ upstream: { error: 'upstream_refused' } }),
    }).toString(),
  });
  t.equal(res.status, 400);
  t.same(await res.json(), { upstream: { error: 'upstream_refused' }, error: 'invalid_grant', error_description: 'The upstream refused.' });
  const deadline = Date.now() + 5000;
  let failure: AuditEvent | undefined;
  while ((failure = events.find((e) => e.name === 'TokenIssuedFailure')) === undefined && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 20));
  t.equal(failure?.error, 'invalid_grant', 'the answer’s own code, not the custom member’s');
  t.equal(failure?.grantType, 'test_echo');
});
