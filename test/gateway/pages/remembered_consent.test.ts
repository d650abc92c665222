// Remembered consent on the memory store (the cases: remembered_consent_cases.ts), and its audit
// events.
import t from 'tap';
import type { AuditEvent } from '../../../gateway/observability/events/audit_event.js';
import { passwordFixtures } from '../../helpers/password_users.js';
import { startTestGateway } from '../../helpers/test_gateway.js';
import { isConsentPage, params, patchRememberedConsent, rememberedConsentCases } from './remembered_consent_cases.js';
import { AuthorizeFlow } from '../../helpers/authorize_flow.js';

const fixtures = await passwordFixtures();
const events: AuditEvent[] = [];
const gw = await startTestGateway(t, {
  patch: (raw) => patchRememberedConsent(raw, fixtures),
  onEvent: (event) => events.push(event),
});

rememberedConsentCases(t, gw);

t.test('consent decisions and revocations are audit events', async (t) => {
  const names = (name: string) => events.filter((e) => e.name === name && e.subject === 'sub-alice');
  const remembered = names('ConsentGranted').find((e) => e.clientId === 'skip');
  t.match(remembered, { category: 'Grants', outcome: 'success', details: { scopes: ['openid', 'api1'], remembered: true } });
  const forged = names('ConsentGranted').find((e) => e.clientId === 'ask');
  t.match(forged, { details: { remembered: false } }, 'a forged remember=on is not remembered');
  t.match(names('GrantsRevoked'), [{ category: 'Grants', clientId: 'revoke', details: { consent: true, families: 1 } }]);
});

// Last: it reloads the config.
t.test('a page shown without the checkbox remembers nothing, even once the client allows it', async (t) => {
  const flow = new AuthorizeFlow(gw);
  const page = await flow.login(await flow.authorize(params('ask-later')), 'alice', 'alice-pw');
  t.notMatch(page.body, 'remember');
  const reloaded = await gw.reloadWith((raw) => {
    const client = (raw.clients as Record<string, unknown>[]).find((c) => c.clientId === 'ask-later');
    if (client !== undefined) client.allowRememberConsent = true;
  });
  t.equal(reloaded.applied, true);
  t.equal((await flow.decide(page, 'allow', { remember: 'on' })).status, 302, 'the earlier page still decides');
  t.ok(isConsentPage(await flow.authorize(params('ask-later'))), 'but its forged remember=on was ignored');
});
