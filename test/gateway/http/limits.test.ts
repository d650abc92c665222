import t from 'tap';
import { connect } from 'node:net';
import { rawConversation } from '../../helpers/raw_http.js';
import { startTestGateway } from '../../helpers/test_gateway.js';

// The limits uWebSockets.js enforces in its C++ parser, before any route runs
// (docs/operations.md, "Limits"): a test for each so that an upgrade that changes one is noticed.
const get = (extraHeaders: string) => `GET /healthz HTTP/1.1\r\nHost: x\r\n${extraHeaders}Connection: close\r\n\r\n`;

t.test('HTTP limits', async (t) => {
  const gw = await startTestGateway(t);

  t.test('a header section over 4 KiB is refused with 431 and the connection closed', async (t) => {
    const under = await rawConversation(gw.port, get(`X-Filler: ${'a'.repeat(3_900)}\r\n`));
    t.same(under.statuses, [200], 'just under the limit is answered');
    const over = await rawConversation(gw.port, get(`X-Filler: ${'a'.repeat(4_200)}\r\n`));
    t.same(over.statuses, [431]);
    t.ok(over.closed);
  });

  t.test('more than about 100 header fields are refused with 431', async (t) => {
    const fields = (n: number) => Array.from({ length: n }, (_, i) => `X-F${i}: v\r\n`).join('');
    t.same((await rawConversation(gw.port, get(fields(90)))).statuses, [200], '90 fields are answered');
    const over = await rawConversation(gw.port, get(fields(120)));
    t.same(over.statuses, [431]);
    t.ok(over.closed);
  });

  t.test('a request body over 64 KiB is refused with 413 as it arrives', async (t) => {
    const body = `grant_type=client_credentials&pad=${'a'.repeat(64 * 1024)}`;
    const r = await rawConversation(
      gw.port,
      `POST /connect/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    t.same(r.statuses, [413]);
    t.ok(r.closed);
  });

  // uWS closes a connection that sends no complete request, or stalls in its body, for 10 s.
  // The margin is generous (a loaded machine); what is tested is that the server closes it.
  t.test('slow clients: an unfinished header section and a stalled body are closed by the server', async (t) => {
    const closedWithin = (bytes: string, ms: number) =>
      new Promise<{ closed: boolean; received: string }>((resolve) => {
        const socket = connect(gw.port, '127.0.0.1', () => socket.write(bytes));
        let received = '';
        socket.on('data', (d) => (received += d.toString('latin1')));
        const timer = setTimeout(() => {
          socket.destroy();
          resolve({ closed: false, received });
        }, ms);
        socket.on('error', () => {});
        socket.on('close', () => {
          clearTimeout(timer);
          resolve({ closed: true, received });
        });
      });
    const [headers, body] = await Promise.all([
      closedWithin('GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ', 30_000),
      closedWithin(
        'POST /connect/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\ngrant_type=',
        30_000,
      ),
    ]);
    t.ok(headers.closed, 'the unfinished header section is closed');
    t.equal(headers.received, '', 'and never answered');
    t.ok(body.closed, 'the stalled body is closed');
  });
});
