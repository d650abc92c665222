import { createServer, type Server } from 'node:net';

/**
 * A port that was free a moment ago: for servers whose URL must be known before they start. Drawn
 * below the ephemeral range like {@link freePortRun}: a port from `listen(0)` could be taken by an
 * outgoing connection's local port before the server listens, and a gateway's exclusive listener
 * then refuses it (CI, 2026-11-28: "cannot listen on 127.0.0.1:40081").
 */
export function freePort(): Promise<number> {
  return freePortRun(1);
}

/**
 * The first of `count` consecutive ports that were all free a moment ago, for what listens on a
 * run of ports (`--processes N` gives process i `management.port + i`). Drawn below the kernel's
 * ephemeral range (/proc/sys/net/ipv4/ip_local_port_range, 32768 and up here), where neither
 * `listen(0)` nor an outgoing connection's local port can take one between this check and the
 * listen: a run drawn from `freePort()` once lost its second port to one (CI, 2026-11-26).
 */
export async function freePortRun(count: number): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * (12_000 - count));
    if (await allFree(base, count)) return base;
  }
  throw new Error(`no ${count} consecutive free ports found between 20000 and 32000`);
}

async function allFree(base: number, count: number): Promise<boolean> {
  const servers: Server[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const server = createServer();
      server.unref();
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(base + i, '127.0.0.1', resolve);
      });
      servers.push(server);
    }
    return true;
  } catch {
    return false;
  } finally {
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  }
}
