// The signed consent interaction (gateway/pages/consent_interaction.ts) on its own: what opens
// it and what does not, on a clock the test sets.
import t from 'tap';
import type { AuthorizeRequest } from '../../../gateway/pages/authorize_request.js';
import {
  consentFormSeconds,
  narrowedQuery,
  openConsentInteraction,
  sealConsentInteraction,
} from '../../../gateway/pages/consent_interaction.js';
import { PageSecrets, type Session } from '../../../gateway/pages/session.js';

const secrets = new PageSecrets('a'.repeat(43), 'http://127.0.0.1', false, 3_600_000);
const query = 'client_id=web&redirect_uri=http%3A%2F%2F127.0.0.1%2Fcb&response_type=code&scope=openid+api1&state=s';
const request = {
  query,
  client: { clientId: 'web', config: { allowRememberConsent: true } },
  redirectUri: 'http://127.0.0.1/cb',
  scopes: { scopes: ['openid', 'api1'] },
  origin: { pushed: false, signed: false },
} as unknown as AuthorizeRequest;
const session: Session = { sub: 'sub-alice', sid: 'sid-1', claims: { auth_time: 1_700_000_000 }, exp: Number.MAX_SAFE_INTEGER };
const shownAt = 1_700_000_100_000;

t.test('opens for the session it was shown to, until it expires', async (t) => {
  const sealed = sealConsentInteraction(secrets, request, session, shownAt);
  const opened = openConsentInteraction(secrets, sealed, session, shownAt + 1000);
  t.match(opened, { query, clientId: 'web', scopes: ['openid', 'api1'], sid: 'sid-1', authTime: 1_700_000_000, remember: true });
  t.ok(openConsentInteraction(secrets, sealed, session, shownAt + consentFormSeconds * 1000 - 1), 'open until the end');
  t.equal(openConsentInteraction(secrets, sealed, session, shownAt + consentFormSeconds * 1000), undefined, 'expired');
});

t.test('refused: another session, another sign-in, no session, a forgery, another secret', async (t) => {
  const sealed = sealConsentInteraction(secrets, request, session, shownAt);
  const at = shownAt + 1000;
  t.equal(openConsentInteraction(secrets, sealed, { ...session, sid: 'sid-2' }, at), undefined, 'another sid');
  t.equal(
    openConsentInteraction(secrets, sealed, { ...session, claims: { auth_time: 1_700_000_050 } }, at),
    undefined,
    'another auth_time',
  );
  t.equal(openConsentInteraction(secrets, sealed, undefined, at), undefined, 'signed out');
  const [payload, mac] = sealed.split('.') as [string, string];
  const wider = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
  wider.scopes = ['openid', 'api1', 'offline_access'];
  const forged = `${Buffer.from(JSON.stringify(wider)).toString('base64url')}.${mac}`;
  t.equal(openConsentInteraction(secrets, forged, session, at), undefined, 'edited scopes');
  const other = new PageSecrets('b'.repeat(43), 'http://127.0.0.1', false, 3_600_000);
  t.equal(openConsentInteraction(other, sealed, session, at), undefined, "another issuer's secret");
  for (const junk of [undefined, '', '.', 'x.y', `${payload}.`, 'e30.e30'])
    t.equal(openConsentInteraction(secrets, junk, session, at), undefined, `junk ${String(junk)}`);
});

t.test('narrowedQuery: the shown scopes or fewer', async (t) => {
  const interaction = openConsentInteraction(secrets, sealConsentInteraction(secrets, request, session, shownAt), session, shownAt);
  if (interaction === undefined) throw new Error('not opened');
  t.equal(narrowedQuery(interaction, undefined), query, 'no scope member: the request as shown');
  t.equal(new URLSearchParams(narrowedQuery(interaction, 'api1')).get('scope'), 'api1');
  t.equal(new URLSearchParams(narrowedQuery(interaction, 'api1')).get('state'), 's', 'the rest unchanged');
  t.equal(narrowedQuery(interaction, 'api1 offline_access'), undefined);
  t.equal(narrowedQuery(interaction, ' '), undefined);
});
