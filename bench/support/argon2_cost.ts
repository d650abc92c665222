/**
 * What one password verification costs on this machine: the bench user's hash (argon2id at the
 * cost new hashes get) verified one at a time with @node-rs/argon2, as the workers verify it.
 */
import { verify } from '@node-rs/argon2';
import { benchUser, type BenchUser } from './bench_config.js';

export interface HashCost {
  params: string;
  verifies: number;
  /** Wall milliseconds per verify. */
  wallMs: number;
  /** CPU milliseconds per verify (this process, all threads). */
  cpuMs: number;
}

/**
 * `concurrency` verifies at a time (the password lane runs `workers.passwordConcurrency` [4] at
 * once, and argon2's memory makes concurrent verifies cost more CPU each than one alone).
 */
export async function measureHashCost(verifies = 20, concurrency = 1, user: BenchUser = benchUser): Promise<HashCost> {
  const params = /^\$argon2id\$v=19\$(m=\d+,t=\d+,p=\d+)\$/.exec(user.passwordHash)?.[1] ?? '?';
  if (!(await verify(user.passwordHash, user.password))) throw new Error(`the hash of ${user.username} does not verify its password`);
  const cpu = process.cpuUsage();
  const start = performance.now();
  let started = 0;
  const verifyInTurn = async (): Promise<void> => {
    while (started++ < verifies) await verify(user.passwordHash, user.password);
  };
  await Promise.all(Array.from({ length: concurrency }, verifyInTurn));
  const wallMs = (performance.now() - start) / verifies;
  const used = process.cpuUsage(cpu);
  return { params, verifies, wallMs, cpuMs: (used.user + used.system) / 1000 / verifies };
}

export function describeHashCost(cost: HashCost, cores: number): string {
  return (
    `Hash cost: argon2id ${cost.params} (the bench user's hash): ${cost.wallMs.toFixed(1)} ms per verify one at a time on this machine ` +
    `(${cost.cpuMs.toFixed(1)} ms CPU, ${cost.verifies} verifies), so ${cores} cores verify at most about ${Math.round((cores * 1000) / cost.cpuMs)} passwords/s`
  );
}
