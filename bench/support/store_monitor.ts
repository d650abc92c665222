/**
 * The store commands one request really sends, seen with Redis `MONITOR` during a preflight, set
 * against the ones its scenario's floor declares (scenarios/floor.ts): a change to the store that
 * adds or removes a command shows up beside the table instead of silently skewing the floor.
 */
import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { redisStoreScripts } from '../../core/store/redis_store.js';
import type { RequestFloor, StoreCommand } from '../scenarios/floor.js';

/** Every gateway the bench starts prefixes its keys with this (runner/contenders.ts). */
const gatewayKeys = 'bench:';

const scripts: [name: string, lua: string][] = Object.entries(redisStoreScripts);
const scriptBySha = new Map(scripts.map(([name, lua]) => [createHash('sha1').update(lua).digest('hex'), name]));
const scriptByText = new Map(scripts.map(([name, lua]) => [lua, name]));

const escapes: Record<string, string> = { n: '\n', r: '\r', t: '\t', a: '\x07', b: '\b', '"': '"', '\\': '\\' };

/** MONITOR quotes arguments as Redis's `sdscatrepr` does (`\n`, `\xHH`, …); ioredis hands them on as quoted. */
function unquote(arg: string): string {
  return arg.replace(/\\(x[0-9a-fA-F]{2}|[nrtab"\\])/g, (_, escape: string) =>
    escape.startsWith('x') ? String.fromCharCode(Number.parseInt(escape.slice(1), 16)) : (escapes[escape] ?? escape),
  );
}

/**
 * A monitored command as the floor names it, or null when it is not a gateway's (another client,
 * a command a script runs). ioredis sends EVAL instead of EVALSHA when the server does not know the
 * script yet: the same command.
 */
export function seenCommandName(args: readonly string[], source: string): string | null {
  if (source === 'lua') return null;
  const [name = '', first = '', , firstKey = ''] = args;
  const command = name.toLowerCase();
  if (command === 'evalsha' || command === 'eval') {
    if (!firstKey.startsWith(gatewayKeys)) return null;
    const script = command === 'evalsha' ? scriptBySha.get(first.toLowerCase()) : scriptByText.get(unquote(first));
    return `EVALSHA ${script ?? 'unknown script'}`;
  }
  return first.startsWith(gatewayKeys) ? command.toUpperCase() : null;
}

/** The command names of a floor's store part, once per count (a whole request's, so integer counts). */
export function declaredCommandNames(floor: RequestFloor): string[] {
  const name = (command: StoreCommand): string => {
    switch (command.op) {
      case 'get':
        return 'GET';
      case 'del':
        return 'DEL';
      case 'increment':
        return 'EVALSHA tesseraIncrement';
      case 'write':
        return 'EVALSHA tesseraWrite';
      case 'rotate':
        return 'EVALSHA tesseraRotate';
      case 'redeemChain':
        return 'EVALSHA tesseraRedeemChain';
      case 'redeemRecord':
        return 'EVALSHA tesseraRedeemRecord';
    }
  };
  return floor.store.flatMap(({ command, count }) => Array.from({ length: Math.round(count) }, () => name(command)));
}

/** The line beside the table: as declared, or what differs. */
export function formatSeenCommands(floor: RequestFloor, seen: readonly string[]): string {
  const declared = declaredCommandNames(floor);
  const sorted = (names: readonly string[]): string => [...names].sort().join(', ') || 'none';
  const list = seen.join(', ') || 'none';
  return sorted(declared) === sorted(seen)
    ? `Store commands of one request on Redis, seen with MONITOR in the preflight: ${list}, as its floor declares`
    : `**Store commands of one request on Redis, seen with MONITOR in the preflight: ${list}; its floor declares ${declared.join(', ') || 'none'}: the floor is out of date (bench/scenarios/)**`;
}

/** Runs `during` with a MONITOR connection open and resolves the gateway commands it saw, in order. */
export async function seeStoreCommands(redisUrl: string, during: () => Promise<void>): Promise<string[]> {
  const client = new Redis(redisUrl, { connectionName: 'tessera-bench-monitor' });
  try {
    const monitor = await client.monitor();
    const seen: string[] = [];
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      const name = seenCommandName(args, source);
      if (name !== null) seen.push(name);
    });
    try {
      await during();
      // Replies can reach the gateway before MONITOR's copy of the command reaches us: an ECHO on
      // another connection, seen by the monitor after them, marks the end.
      const marker = new Redis(redisUrl);
      const done = new Promise<void>((resolve) =>
        monitor.on('monitor', (_time: string, args: string[]) => {
          if (args[0]?.toLowerCase() === 'echo' && args[1] === 'tessera-bench-monitor-end') resolve();
        }),
      );
      await marker.echo('tessera-bench-monitor-end');
      marker.disconnect();
      await Promise.race([done, new Promise((resolve) => setTimeout(resolve, 1000))]);
    } finally {
      monitor.disconnect();
    }
    return seen;
  } finally {
    client.disconnect();
  }
}
