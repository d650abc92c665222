import t from 'tap';
import { basicAuthorization, basicCredentials } from '../../helpers/basic_authorization.js';
import { startTestGateway } from '../../helpers/test_gateway.js';

// RFC 6749 §2.3.1: Basic credentials are the form-encoded id and secret (Appendix B), joined by a
// colon, in Base64. A header that is not that is a malformed request (400 invalid_request), not
// a failed authentication: no 401 and no challenge to retry with.
const malformed: Record<string, string> = {
  'not Base64': 'Basic !!!not-base64!!!',
  'no credentials': 'Basic',
  'no colon': basicCredentials('m2m'),
  'an empty client id': basicCredentials(':secret'),
  'a bad percent-escape': basicCredentials('m2m:100%'),
  'escapes that are not UTF-8': basicCredentials('m2m:%FF%FE'),
};

t.test('client authentication at the endpoints', async (t) => {
  const gw = await startTestGateway(t);
  const post = async (path: string, body: string, authorization: string) => {
    const res = await fetch(`${gw.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization },
      body,
    });
    return { status: res.status, headers: res.headers, body: (await res.json()) as unknown };
  };

  for (const [what, header] of Object.entries(malformed)) {
    t.test(`a Basic header with ${what} is 400 invalid_request without a challenge`, async (t) => {
      for (const [path, body] of [
        ['/connect/token', 'grant_type=client_credentials'],
        ['/connect/introspect', 'token=abc'],
        ['/connect/revocation', 'token=abc'],
      ] as const) {
        const r = await post(path, body, header);
        t.equal(r.status, 400, path);
        t.same(r.body, { error: 'invalid_request', error_description: 'The Basic credentials are malformed.' }, path);
        t.equal(r.headers.get('www-authenticate'), null, path);
      }
    });
  }

  t.test('a well-formed Basic header with a wrong secret is still 401 with the challenge', async (t) => {
    const r = await post('/connect/token', 'grant_type=client_credentials', basicAuthorization('m2m', 'wrong'));
    t.equal(r.status, 401);
    t.equal(r.headers.get('www-authenticate'), `Basic realm="${gw.config.issuer}"`);
  });

  t.test('another scheme is still 401 invalid_client', async (t) => {
    const r = await post('/connect/token', 'grant_type=client_credentials', 'Bearer abc');
    t.equal(r.status, 401);
    t.same(r.body, { error: 'invalid_client', error_description: 'Client authentication failed.' });
  });

  t.test('the RFC 6749 Appendix B client authenticates with its form-encoded Basic credentials', async (t) => {
    const r = await post(
      '/connect/token',
      'grant_type=client_credentials',
      basicAuthorization('an:identifier', 'some secure & non-standard secret'),
    );
    t.equal(r.status, 200);
  });
});
