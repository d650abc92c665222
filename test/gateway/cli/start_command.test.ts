import t from 'tap';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfigFile, validateConfig } from '../../../gateway/config/load.js';
import { formatBanner } from '../../../gateway/cli/start_command.js';
import { startTestGateway } from '../../helpers/test_gateway.js';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

t.test('the banner shows the issuer, the endpoints and the demo credentials', async (t) => {
  const config = await loadConfigFile(join(repoRoot, 'config/demo.json'), { env: {} });
  const banner = formatBanner(config, { url: 'http://127.0.0.1:5000', managementUrl: 'http://127.0.0.1:9464' });
  const lines = banner.split('\n');
  t.ok(lines.includes('  issuer     http://127.0.0.1:5000'));
  t.ok(lines.includes('  listening  http://127.0.0.1:5000'));
  for (const line of [
    '  token       http://127.0.0.1:5000/connect/token',
    '  authorize   http://127.0.0.1:5000/connect/authorize',
    '  device      http://127.0.0.1:5000/connect/deviceauthorization',
    '  device page http://127.0.0.1:5000/device',
    '  introspect  http://127.0.0.1:5000/connect/introspect',
    '  revocation  http://127.0.0.1:5000/connect/revocation',
    '  discovery   http://127.0.0.1:5000/.well-known/openid-configuration',
    '  jwks        http://127.0.0.1:5000/.well-known/openid-configuration/jwks',
    '  healthz     http://127.0.0.1:5000/healthz',
    '  readyz      http://127.0.0.1:5000/readyz',
    '  metrics     http://127.0.0.1:9464/metrics',
  ]) {
    t.ok(lines.includes(line), line);
  }
  t.match(banner, /^  client +m2m +secret +client_credentials; scopes api1 api2$/m);
  t.match(banner, /^  client +spa +\(none\) +public client/m);
  t.match(banner, /^  user +alice +alice +subject 818727$/m);
  t.match(banner, /^  user +bob +bob +subject 88421113$/m);
  t.match(banner, /^  apiResource +urn:api2 +secret +introspection; in Basic send the id as urn%3Aapi2$/m);
  t.match(banner, /Press Ctrl-C to stop\.\n$/);
});

t.test('the banner has no credentials section without demoCredentials', async (t) => {
  const config = validateConfig({ issuer: 'https://auth.example.com' }, { configDir: '/etc/tessera', env: { TESSERA_PORT: '0' } });
  const banner = formatBanner(config, { url: 'http://127.0.0.1:41234' });
  t.notMatch(banner, /Demo credentials/);
  t.match(banner, /^  listening  http:\/\/127\.0\.0\.1:41234$/m);
  t.match(banner, /^  overrides  TESSERA_PORT$/m);
  t.match(banner, /^  token       https:\/\/auth\.example\.com\/connect\/token$/m);
  t.match(banner, /^  metrics     https:\/\/auth\.example\.com\/metrics \(bearer token\)$/m);
});

t.test('every endpoint the banner lists is served', async (t) => {
  const gw = await startTestGateway(t);
  const urls = [...formatBanner(gw.config, gw).matchAll(/^  [a-z ]{11} (http:\/\/127\.0\.0\.1:\d+\/\S*)$/gm)].map((m) => m[1] as string);
  t.equal(urls.length, 11, 'ten endpoints and the metrics');
  for (const url of urls) {
    const res = await fetch(url);
    await res.arrayBuffer();
    t.not(res.status, 404, `${url} is served`);
  }
});
