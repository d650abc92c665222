/**
 * What the bench needs of the shared redis-server helper (bench/runner/context.ts): the process
 * id whose CPU time it reads, and the server's version from a whole `INFO` bulk reply.
 */
import { readFileSync } from 'node:fs';
import t from 'tap';
import { sendRedisCommand, startRedisServer } from '../../test/helpers/redis_server.js';

t.test('gives the pid of the redis-server it runs, and null once stopped', async (t) => {
  const redis = await startRedisServer();
  t.teardown(() => redis.stop());
  if (!redis.managed) {
    t.comment(redis.warning ?? '');
    t.equal(redis.pid, null, 'a server it does not own has no pid');
    return;
  }
  const pid = redis.pid;
  t.type(pid, 'number');
  t.match(readFileSync(`/proc/${pid}/cmdline`, 'latin1'), /redis-server/, 'the pid is the redis-server');
  await redis.stop();
  t.equal(redis.pid, null);
});

t.test('reads a whole bulk reply, not only its first packet', async (t) => {
  const redis = await startRedisServer();
  t.teardown(() => redis.stop());
  const info = await sendRedisCommand(redis.port, 'INFO server', 1000);
  t.match(info, /^\$\d+\r\n/, 'a bulk reply');
  t.match(info, /redis_version:\d+\.\d+/);
  t.match(info, /\r\n$/, 'up to its closing CRLF');
  t.equal(await sendRedisCommand(redis.port, 'PING'), '+PONG\r\n');
});
