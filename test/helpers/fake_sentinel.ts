/**
 * A scripted Redis Sentinel for the `redis-sentinel` store's tests: it names a fixed master,
 * answers `SENTINEL get-master-addr-by-name` after a delay the test sets, and publishes
 * `+switch-master` when the test says so. Real Sentinels decide these moments themselves, so a
 * race between a client asking for the master and a failover notice (docs/operations.md, "Redis
 * Sentinel") can only be hit reliably with this one. Speaks just enough RESP2 for ioredis.
 */
import { createServer } from 'node:net';
import type { Server, Socket } from 'node:net';

export interface FakeSentinel {
  /** `127.0.0.1:port`, as the store's `sentinels` list takes it. */
  readonly address: string;
  /** The port `get-master-addr-by-name` names. */
  masterPort: number;
  /** How long `get-master-addr-by-name` waits before it answers. */
  replyDelayMs: number;
  /** How many connections subscribed to `+switch-master` are open. */
  subscribers(): number;
  /** Resolves at the next `get-master-addr-by-name` that arrives. */
  nextMasterQuery(): Promise<void>;
  /** Sends `+switch-master` to every subscriber. */
  publishSwitchMaster(oldPort: number, newPort: number): void;
  close(): Promise<void>;
}

function bulk(value: string): string {
  return `$${Buffer.byteLength(value)}\r\n${value}\r\n`;
}

/** Splits complete RESP arrays of bulk strings off the front of `buffer`. */
function readCommands(buffer: Buffer): { commands: string[][]; rest: Buffer } {
  const commands: string[][] = [];
  let at = 0;
  for (;;) {
    const start = at;
    const header = buffer.indexOf('\r\n', at);
    if (header === -1 || buffer[at] !== 0x2a) return { commands, rest: buffer.subarray(start) };
    const count = Number(buffer.subarray(at + 1, header).toString());
    at = header + 2;
    const args: string[] = [];
    for (let i = 0; i < count; i += 1) {
      const lengthEnd = buffer.indexOf('\r\n', at);
      if (lengthEnd === -1) return { commands, rest: buffer.subarray(start) };
      const length = Number(buffer.subarray(at + 1, lengthEnd).toString());
      if (buffer.length < lengthEnd + 2 + length + 2) return { commands, rest: buffer.subarray(start) };
      args.push(buffer.subarray(lengthEnd + 2, lengthEnd + 2 + length).toString());
      at = lengthEnd + 2 + length + 2;
    }
    commands.push(args);
  }
}

export async function startFakeSentinel(options: { name: string; masterPort: number }): Promise<FakeSentinel> {
  const subscribed = new Set<Socket>();
  const sockets = new Set<Socket>();
  let queryWaiters: (() => void)[] = [];
  const fake = {
    masterPort: options.masterPort,
    replyDelayMs: 0,
  };

  const answer = (socket: Socket, args: string[]): void => {
    const [command = '', sub = '', name = ''] = args.map((a, i) => (i < 2 ? a.toLowerCase() : a));
    if (command === 'hello') {
      // ioredis then downgrades to RESP2.
      socket.write('-NOPROTO unsupported protocol version\r\n');
    } else if (command === 'sentinel' && sub === 'get-master-addr-by-name') {
      const waiters = queryWaiters;
      queryWaiters = [];
      for (const resolve of waiters) resolve();
      const reply = name === options.name ? `*2\r\n${bulk('127.0.0.1')}${bulk(String(fake.masterPort))}` : '*-1\r\n';
      setTimeout(() => {
        if (!socket.destroyed) socket.write(reply);
      }, fake.replyDelayMs);
    } else if (command === 'sentinel' && sub === 'sentinels') {
      socket.write('*0\r\n');
    } else if (command === 'subscribe') {
      subscribed.add(socket);
      socket.write(`*3\r\n${bulk('subscribe')}${bulk(args[1] ?? '')}:1\r\n`);
    } else if (command === 'ping') {
      socket.write('+PONG\r\n');
    } else {
      // CLIENT SETNAME / SETINFO, QUIT and the like.
      socket.write('+OK\r\n');
    }
  };

  const server: Server = createServer((socket) => {
    sockets.add(socket);
    let pending: Buffer = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      const { commands, rest } = readCommands(Buffer.concat([pending, chunk]));
      pending = rest;
      for (const args of commands) answer(socket, args);
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      sockets.delete(socket);
      subscribed.delete(socket);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as { port: number };

  return Object.assign(fake, {
    address: `127.0.0.1:${port}`,
    subscribers: () => subscribed.size,
    nextMasterQuery: () => new Promise<void>((resolve) => queryWaiters.push(resolve)),
    publishSwitchMaster(oldPort: number, newPort: number) {
      const payload = `${options.name} 127.0.0.1 ${oldPort} 127.0.0.1 ${newPort}`;
      for (const socket of subscribed) socket.write(`*3\r\n${bulk('message')}${bulk('+switch-master')}${bulk(payload)}`);
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  });
}
