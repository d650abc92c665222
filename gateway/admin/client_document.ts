/**
 * A store-kept client's JSON, checked as a config file's client is: the same zod schema
 * (`clientSchema`), then the same cross references against the running config (scopes, grant
 * types, secrets a client needs), each problem naming its field (`allowedGrantTypes[0]`).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { ClientConfig, SecretConfig } from '../../core/worker_config.js';
import type { ConfigProblem } from '../config/config_error.js';
import { checkCrossReferences } from '../config/cross_references.js';
import type { LoadedConfig } from '../config/load.js';
import { clientSchema } from '../config/schema.js';
import { describeIssue, toProblems } from '../config/schema_issues.js';
import type { StoredClientRecord } from '../client_registry/client_registry.js';

export type CheckedClient = { ok: true; client: ClientConfig } | { ok: false; problems: readonly ConfigProblem[] };

const clientPrefix = 'clients[0]';

/** `document` as a client of `config`, or every problem with it. */
export function checkClientDocument(document: unknown, config: LoadedConfig, grantTypes: Iterable<string>): CheckedClient {
  const parsed = clientSchema.safeParse(document, { error: describeIssue });
  if (!parsed.success) return { ok: false, problems: parsed.error.issues.flatMap(toProblems) };
  const client = parsed.data;
  const problems: ConfigProblem[] = [];
  // The listing keeps a client under its id, which ends at U+0000 there (core/store/store.ts,
  // `StoreKey.name`); RFC 6749 Appendix A.1 allows no control character in a client_id anyway.
  if (client.clientId.includes('\u0000')) problems.push({ path: 'clientId', message: 'must not contain U+0000' });
  const crossProblems = checkCrossReferences({ ...config, clients: [client] }, [...grantTypes]);
  for (const problem of crossProblems) {
    if (problem.path === clientPrefix) problems.push({ path: '(root)', message: problem.message });
    else if (problem.path.startsWith(`${clientPrefix}.`)) problems.push({ ...problem, path: problem.path.slice(clientPrefix.length + 1) });
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, client };
}

/** A new client secret: 256 random bits, and its stored form (docs/configuration.md, "Client secrets"). */
export function generateSecret(description?: string, expiration?: string): { secret: string; stored: SecretConfig } {
  const secret = randomBytes(32).toString('base64url');
  const value = createHash('sha256').update(secret, 'utf8').digest('base64');
  return {
    secret,
    stored: {
      value,
      ...(description === undefined ? {} : { description }),
      ...(expiration === undefined ? {} : { expiration }),
    },
  };
}

/**
 * A secret's name in the admin API: the first 12 characters of base64url of its stored hash. It
 * names a secret without being it (SHA-256 of 256 random bits reveals nothing).
 */
export function secretId(stored: SecretConfig): string {
  return Buffer.from(stored.value, 'base64').toString('base64url').slice(0, 12);
}

/** What the admin API shows of secrets (a client's, an API resource's): each one's id, never its value or hash. */
export function secretViews(secrets: readonly SecretConfig[]): Record<string, string>[] {
  return secrets.map((s) => ({
    id: secretId(s),
    ...(s.description === undefined ? {} : { description: s.description }),
    ...(s.expiration === undefined ? {} : { expiration: s.expiration }),
  }));
}

/** Where a record the admin API shows comes from: the store, with its times, or the config file. */
export function sourceView(record: { createdAt: number; updatedAt: number }, source: 'store' | 'config'): Record<string, string> {
  return {
    source,
    ...(source === 'store'
      ? { createdAt: new Date(record.createdAt).toISOString(), updatedAt: new Date(record.updatedAt).toISOString() }
      : {}),
  };
}

/** What the admin API shows of a client: its config with each secret's id instead of its hash. */
export function clientView(record: StoredClientRecord, source: 'store' | 'config' = 'store'): Record<string, unknown> {
  const { clientSecrets, ...rest } = record.config;
  return { ...rest, clientSecrets: secretViews(clientSecrets), ...sourceView(record, source) };
}
