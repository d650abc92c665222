/**
 * `tessera clients add|list|show|disable|rotate-secret`: the admin API over HTTP
 * (docs/operations.md, "Admin API"). The gateway's management URL comes from `--url` or
 * `TESSERA_ADMIN_URL` (default http://127.0.0.1:9464), the admin token from `--token-file` or
 * `TESSERA_ADMIN_TOKEN`.
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { ExitCode, UsageError, type CliCommand, type CliIo } from './command.js';

const connectionOptions = {
  url: { type: 'string' },
  'token-file': { type: 'string' },
} as const;

const connectionDetails = [
  '--url URL          the management listener of a gateway (default $TESSERA_ADMIN_URL or http://127.0.0.1:9464)',
  '--token-file FILE  the admin token (admin.tokenFile of the gateways; default $TESSERA_ADMIN_TOKEN)',
];

interface AdminConnection {
  readonly url: string;
  readonly token: string;
}

async function connection(values: { url?: string | undefined; 'token-file'?: string | undefined }, io: CliIo): Promise<AdminConnection> {
  const url = (values.url ?? io.env.TESSERA_ADMIN_URL ?? 'http://127.0.0.1:9464').replace(/\/+$/, '');
  const file = values['token-file'];
  const token = file !== undefined ? (await readFile(file, 'utf8')).trim() : io.env.TESSERA_ADMIN_TOKEN;
  if (token === undefined || token === '') throw new UsageError('no admin token: give --token-file FILE or set TESSERA_ADMIN_TOKEN');
  return { url, token };
}

/** One admin API call; a refusal becomes an error naming the gateway's reason. */
async function call(admin: AdminConnection, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${admin.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${admin.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  const json = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
  if (!res.ok) {
    const problems = Array.isArray(json.problems) ? (json.problems as { path: string; message: string }[]) : [];
    const detail =
      problems.length > 0
        ? problems.map((p) => `${p.path}: ${p.message}`).join('; ')
        : String(json.error_description ?? json.error ?? res.statusText);
    throw new Error(`${res.status} ${detail}`);
  }
  return json;
}

const clientPath = (clientId: string): string => `/admin/clients/${encodeURIComponent(clientId)}`;

function print(io: CliIo, value: unknown): void {
  io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export const clientsAddCommand: CliCommand = {
  words: ['clients', 'add'],
  summary: 'Create a store-kept client through the admin API; prints it and its new secret',
  usage: 'tessera clients add (CLIENT_ID --grant-type GT [--scope S]... [--public] | --file CLIENT.json) [--url URL] [--token-file FILE]',
  details: [
    '--grant-type GT    an allowed grant type (repeat for several)',
    '--scope S          an allowed scope (repeat for several)',
    '--public           a public client (requireClientSecret: false): no secret',
    '--file FILE        the whole client as JSON, the fields of a config file client',
    ...connectionDetails,
    '',
    'A confidential client without clientSecrets gets a generated secret, printed once.',
  ],
  async run(args, io) {
    const { values, positionals } = parseArgs({
      args,
      options: {
        ...connectionOptions,
        'grant-type': { type: 'string', multiple: true },
        scope: { type: 'string', multiple: true },
        public: { type: 'boolean' },
        file: { type: 'string' },
      },
      strict: true,
      allowPositionals: true,
    });
    let client: unknown;
    if (values.file !== undefined) {
      if (positionals.length > 0) throw new UsageError('give either --file or CLIENT_ID, not both');
      client = JSON.parse(await readFile(values.file, 'utf8'));
    } else {
      if (positionals.length !== 1) throw new UsageError('expected exactly one CLIENT_ID (or --file)');
      client = {
        clientId: positionals[0],
        allowedGrantTypes: values['grant-type'] ?? [],
        allowedScopes: values.scope ?? [],
        ...(values.public === true ? { requireClientSecret: false } : {}),
      };
    }
    print(io, await call(await connection(values, io), 'POST', '/admin/clients', client));
    return ExitCode.Ok;
  },
};

export const clientsListCommand: CliCommand = {
  words: ['clients', 'list'],
  summary: 'List the store-kept clients by id: id, enabled, grant types, scopes',
  usage: 'tessera clients list [--all] [--limit N] [--cursor CURSOR | --after CLIENT_ID] [--url URL] [--token-file FILE]',
  details: [
    "--all              every page: follows each page's cursor to the end",
    '--limit N          clients per page (default 100, at most 1000)',
    '--cursor CURSOR    the page a "more:" line named (the admin API\'s opaque "next")',
    '--after CLIENT_ID  start after this client id',
    ...connectionDetails,
    '',
    'Without --all, one page, and on stderr the command for the next one. Clients come in client id',
    'order; one added or deleted during a walk shows or not by where its id falls (docs/operations.md).',
  ],
  async run(args, io) {
    const { values } = parseArgs({
      args,
      options: {
        ...connectionOptions,
        all: { type: 'boolean' },
        limit: { type: 'string' },
        cursor: { type: 'string' },
        after: { type: 'string' },
      },
      strict: true,
    });
    if (values.cursor !== undefined && values.after !== undefined) throw new UsageError('give --cursor or --after, not both');
    const admin = await connection(values, io);
    let cursor = values.cursor;
    let first = true;
    for (;;) {
      const query = new URLSearchParams();
      if (values.limit !== undefined) query.set('limit', values.limit);
      if (cursor !== undefined) query.set('cursor', cursor);
      else if (first && values.after !== undefined) query.set('after', values.after);
      const page = await call(admin, 'GET', `/admin/clients${query.size > 0 ? `?${query}` : ''}`);
      printClientRows(io, page.clients as ListedClient[], first);
      first = false;
      const next = typeof page.next === 'string' ? page.next : undefined;
      if (next === undefined) return ExitCode.Ok;
      if (values.all !== true) {
        const limit = values.limit === undefined ? '' : ` --limit ${values.limit}`;
        io.stderr.write(`more: tessera clients list${limit} --cursor ${next}\n`);
        return ExitCode.Ok;
      }
      cursor = next;
    }
  },
};

interface ListedClient {
  clientId: string;
  enabled: boolean;
  allowedGrantTypes: string[];
  allowedScopes: string[];
}

/** One page's rows, aligned within the page; the header with the first. */
function printClientRows(io: CliIo, clients: readonly ListedClient[], header: boolean): void {
  const rows = [
    ...(header ? [['CLIENT_ID', 'ENABLED', 'GRANT_TYPES', 'SCOPES']] : []),
    ...clients.map((c) => [c.clientId, String(c.enabled), c.allowedGrantTypes.join(','), c.allowedScopes.join(' ')]),
  ];
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  for (const row of rows)
    io.stdout.write(
      `${row
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd()}\n`,
    );
}

export const clientsShowCommand: CliCommand = {
  words: ['clients', 'show'],
  summary: 'Print a client as JSON (secrets by id, never their values)',
  usage: 'tessera clients show CLIENT_ID [--url URL] [--token-file FILE]',
  details: connectionDetails,
  async run(args, io) {
    const { values, positionals } = parseArgs({ args, options: connectionOptions, strict: true, allowPositionals: true });
    if (positionals.length !== 1) throw new UsageError('expected exactly one CLIENT_ID');
    print(io, await call(await connection(values, io), 'GET', clientPath(positionals[0] as string)));
    return ExitCode.Ok;
  },
};

export const clientsDisableCommand: CliCommand = {
  words: ['clients', 'disable'],
  summary: 'Disable a store-kept client: refused on every gateway within a second',
  usage: 'tessera clients disable CLIENT_ID [--url URL] [--token-file FILE]',
  details: connectionDetails,
  async run(args, io) {
    const { values, positionals } = parseArgs({ args, options: connectionOptions, strict: true, allowPositionals: true });
    if (positionals.length !== 1) throw new UsageError('expected exactly one CLIENT_ID');
    await call(await connection(values, io), 'PATCH', clientPath(positionals[0] as string), { enabled: false });
    io.stdout.write(`disabled ${positionals[0] as string}\n`);
    return ExitCode.Ok;
  },
};

export const clientsRotateSecretCommand: CliCommand = {
  words: ['clients', 'rotate-secret'],
  summary: 'Add a new secret to a store-kept client and expire its old ones; prints the new secret',
  usage: 'tessera clients rotate-secret CLIENT_ID [--old-expires-in SECONDS] [--url URL] [--token-file FILE]',
  details: ['--old-expires-in SECONDS  how long the old secrets keep working (default 3600; 0: refused at once)', ...connectionDetails],
  async run(args, io) {
    const { values, positionals } = parseArgs({
      args,
      options: { ...connectionOptions, 'old-expires-in': { type: 'string' } },
      strict: true,
      allowPositionals: true,
    });
    if (positionals.length !== 1) throw new UsageError('expected exactly one CLIENT_ID');
    const grace = Number(values['old-expires-in'] ?? '3600');
    if (!Number.isInteger(grace) || grace < 0) throw new UsageError('--old-expires-in must be a whole number of seconds');
    const admin = await connection(values, io);
    const path = clientPath(positionals[0] as string);
    const before = (await call(admin, 'GET', path)).client as { clientSecrets: { id: string; expiration?: string }[] };
    const added = await call(admin, 'POST', `${path}/secrets`, {});
    const expiration = new Date(Date.now() + grace * 1000).toISOString();
    const now = Date.now();
    for (const secret of before.clientSecrets) {
      // Already expired, or expiring sooner than asked: left as it is.
      if (secret.expiration !== undefined && Date.parse(secret.expiration) <= now + grace * 1000) continue;
      await call(admin, 'POST', `${path}/secrets/${encodeURIComponent(secret.id)}/expire`, { expiration });
    }
    print(io, { clientId: positionals[0], secret: added.secret, secretId: added.secretId, oldSecretsExpire: expiration });
    return ExitCode.Ok;
  },
};

export const clientsCommands: readonly CliCommand[] = [
  clientsAddCommand,
  clientsListCommand,
  clientsShowCommand,
  clientsDisableCommand,
  clientsRotateSecretCommand,
];
