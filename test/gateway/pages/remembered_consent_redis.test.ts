// Remembered consent on a real Redis (the cases: remembered_consent_cases.ts).
import t from 'tap';
import { passwordFixtures } from '../../helpers/password_users.js';
import { startRedisServer } from '../../helpers/redis_server.js';
import { startTestGateway } from '../../helpers/test_gateway.js';
import { patchRememberedConsent, rememberedConsentCases } from './remembered_consent_cases.js';

const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning !== null) t.comment(redis.warning);
const fixtures = await passwordFixtures();
const gw = await startTestGateway(t, {
  patch: (raw) => {
    raw.store = { type: 'redis', url: redis.url, keyPrefix: `consent-${process.pid}:` };
    patchRememberedConsent(raw, fixtures);
  },
});

rememberedConsentCases(t, gw);
