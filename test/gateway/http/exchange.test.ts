import t from 'tap';
import { rawConversation, splitFirstResponse } from '../../helpers/raw_http.js';
import { startTestGateway } from '../../helpers/test_gateway.js';

// RFC 9110 §9.3.2: a HEAD answer has the header fields GET would have and no content. Each HEAD is
// followed by a GET on the same connection: a body after the HEAD answer would be read as the
// start of the next response, as a proxy reusing the connection would read it. The last request
// of each conversation asks the server to close the connection after its answer.
t.test('HEAD answers carry no body', async (t) => {
  const gw = await startTestGateway(t);
  const request = (method: string, path: string) => `${method} ${path} HTTP/1.1\r\nHost: x\r\n\r\n`;
  const last = (method: string, path: string) => `${method} ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`;

  const managementPort = Number(new URL(gw.managementUrl ?? '').port);
  for (const [port, path] of [
    [gw.port, '/.well-known/openid-configuration'],
    [gw.port, '/.well-known/openid-configuration/jwks'],
    [gw.port, '/healthz'],
    [managementPort, '/metrics'],
    [gw.port, '/nowhere'],
  ] as const) {
    t.test(`HEAD ${path}: GET's headers, no content`, async (t) => {
      const get = await rawConversation(port, last('GET', path));
      const head = await rawConversation(port, request('HEAD', path) + last('GET', '/healthz'));
      t.equal(head.statuses.length, 2, 'the HEAD answer, then the GET answer');
      t.equal(head.statuses[0], get.statuses[0]);
      const getAnswer = splitFirstResponse(get.text);
      const headAnswer = splitFirstResponse(head.text);
      t.ok(headAnswer.rest.startsWith('HTTP/1.1 200 OK\r\n'), 'the next response follows the HEAD headers at once');
      for (const name of ['content-type', 'cache-control']) t.equal(headAnswer.headers[name], getAnswer.headers[name], name);
      if (path === '/metrics') t.ok(Number(headAnswer.headers['content-length']) > 1000, 'the length of the metrics GET would send');
      else t.equal(headAnswer.headers['content-length'], getAnswer.headers['content-length'], 'the length GET sends');
    });
  }

  t.test('HEAD on a POST-only endpoint: 405 with Allow, no content', async (t) => {
    const head = await rawConversation(gw.port, request('HEAD', '/connect/token') + last('GET', '/healthz'));
    t.same(head.statuses, [405, 200]);
    const { headers, rest } = splitFirstResponse(head.text);
    t.equal(headers.allow, 'POST');
    t.ok(rest.startsWith('HTTP/1.1 200 OK\r\n'));
  });

  t.test('HEAD on a page: no content', async (t) => {
    const head = await rawConversation(gw.port, request('HEAD', '/device') + last('GET', '/healthz'));
    t.equal(head.statuses.length, 2);
    t.ok(splitFirstResponse(head.text).rest.startsWith('HTTP/1.1 200 OK\r\n'));
  });
});
