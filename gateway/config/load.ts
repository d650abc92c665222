/**
 * Loading and validating the config file (SPEC §1, §2): JSON → environment overrides → zod schema
 * → cross-reference checks → resolved paths → deep-frozen {@link LoadedConfig}.
 *
 * Every problem is reported at once, each naming its dotted path
 * (`clients[2].allowedGrantTypes[0]: unknown grant type "pasword"`), so an operator fixes a config
 * in one round instead of one error per restart.
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { importJWK, type JWK } from 'jose';
import { z } from 'zod';
import { isPasswordHash } from '../../workers/crypto/password_hash.js';
import { builtInGrantTypes } from '../../workers/protocol/grant_types.js';
import { configSchema, shippedExtensionGrantTypes, type TesseraConfig } from './schema.js';

/** Recursively readonly view of a plain-data type. */
export type DeepReadonly<T> = T extends (infer E)[]
  ? readonly DeepReadonly<E>[]
  : T extends object
    ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
    : T;

/**
 * A validated config, deep-frozen. Relative `signing.keys[].file` and `validatorsDir` are already
 * resolved against {@link LoadedConfig.configDir}.
 */
export type LoadedConfig = DeepReadonly<TesseraConfig> & {
  /** Absolute folder that relative paths in the config were resolved against. */
  readonly configDir: string;
  /** Absolute path of the config file, when it came from a file. */
  readonly configPath?: string;
  /** Names of the `TESSERA_*` environment variables that overrode the file, in SPEC order. */
  readonly envOverrides: readonly EnvOverrideName[];
};

/**
 * One thing wrong with a config. `path` is the dotted path of the field (`clients[2].redirectUris`),
 * `(root)` for the document itself, `env.TESSERA_PORT` for an environment override, or the file
 * name for a file that cannot be read or parsed.
 */
export interface ConfigProblem {
  path: string;
  message: string;
}

/**
 * Thrown when a config cannot be used; carries every problem found, not just the first.
 *
 * @example
 * ```ts
 * try {
 *   config = await loadConfigFile('config/demo.json');
 * } catch (error) {
 *   if (error instanceof ConfigError) console.error(formatProblems(error.problems));
 *   else throw error;
 * }
 * ```
 */
export class ConfigError extends Error {
  readonly code = 'ERR_TESSERA_CONFIG' as const;
  readonly problems: readonly ConfigProblem[];
  /** The config file as the caller named it, when the config came from a file. */
  readonly source: string | undefined;

  constructor(problems: readonly ConfigProblem[], options: { source?: string } = {}) {
    super(`invalid config${options.source === undefined ? '' : ` ${options.source}`}:\n${formatProblems(problems)}`);
    this.name = 'ConfigError';
    this.problems = problems;
    this.source = options.source;
  }
}

/** The environment variables that override the config file (SPEC §1). */
export const envOverrideNames = [
  'TESSERA_PORT',
  'TESSERA_HOST',
  'TESSERA_REDIS_URL',
  'TESSERA_WORKERS',
  'TESSERA_LOG_LEVEL',
] as const;
export type EnvOverrideName = (typeof envOverrideNames)[number];

export interface ValidateConfigOptions {
  /** Folder that relative paths in the config resolve against (the config file's folder). */
  configDir: string;
  /** Where `TESSERA_*` overrides are read from; defaults to `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Grant types registered by validators beyond the built-in and shipped ones. */
  extraGrantTypes?: readonly string[];
}

export type LoadConfigFileOptions = Omit<ValidateConfigOptions, 'configDir'>;

/**
 * Formats problems one per line as `path: message`.
 *
 * @example
 * ```ts
 * formatProblems([{ path: 'clients[2].allowedGrantTypes[0]', message: 'unknown grant type "pasword"' }]);
 * // 'clients[2].allowedGrantTypes[0]: unknown grant type "pasword"'
 * ```
 */
export function formatProblems(problems: readonly ConfigProblem[]): string {
  return problems.map((problem) => `${problem.path}: ${problem.message}`).join('\n');
}

/**
 * Reads a JSON config file and validates it with {@link validateConfig}; relative paths resolve
 * against the file's folder.
 *
 * @throws {ConfigError} when the file cannot be read, is not JSON, or is not a valid config.
 *
 * @example
 * ```ts
 * const config = await loadConfigFile('config/demo.json', { env: process.env });
 * config.listen.port; // 5000, or TESSERA_PORT
 * config.signing.keys[0]?.file; // absolute path
 * ```
 */
export async function loadConfigFile(path: string, options: LoadConfigFileOptions = {}): Promise<LoadedConfig> {
  const configPath = resolve(path);
  let text: string;
  try {
    text = await readFile(configPath, 'utf8');
  } catch (error) {
    throw new ConfigError([{ path, message: `cannot read the config file (${describeFsError(error)})` }], { source: path });
  }
  const raw = parseJson(text, path);
  return buildConfig(raw, { ...options, configDir: resolve(configPath, '..') }, { configPath, source: path });
}

/**
 * Validates a config object (already parsed JSON) and returns it with defaults applied, paths
 * resolved and everything frozen.
 *
 * @throws {ConfigError} listing every problem: bad environment overrides, schema violations and,
 * once the schema passes, cross-reference problems (unknown grant types and scopes, duplicates,
 * missing secrets or redirect URIs, inconsistent refresh-token settings).
 *
 * @example
 * ```ts
 * const config = validateConfig(JSON.parse(text), { configDir: '/etc/tessera', env: {} });
 * ```
 */
export function validateConfig(raw: unknown, options: ValidateConfigOptions): LoadedConfig {
  return buildConfig(raw, options, {});
}

function buildConfig(
  raw: unknown,
  options: ValidateConfigOptions,
  { configPath, source }: { configPath?: string; source?: string },
): LoadedConfig {
  const configDir = resolve(options.configDir);
  const overridden = applyEnvOverrides(raw, options.env ?? process.env);
  const parsed = configSchema.safeParse(overridden.raw, { error: describeIssue });
  const problems = [...overridden.problems];
  if (!parsed.success) {
    problems.push(...parsed.error.issues.flatMap(toProblems));
    throw new ConfigError(problems, { source });
  }
  problems.push(...checkCrossReferences(parsed.data, options.extraGrantTypes ?? []));
  if (problems.length > 0) throw new ConfigError(problems, { source });

  const config = parsed.data;
  const loaded = {
    ...config,
    signing: { ...config.signing, keys: config.signing.keys.map((key) => ({ ...key, file: resolve(configDir, key.file) })) },
    validatorsDir: resolve(configDir, config.validatorsDir),
    configDir,
    ...(configPath === undefined ? {} : { configPath }),
    envOverrides: overridden.applied,
  };
  // A copy, so that nothing frozen is shared with zod (its defaults are shallow clones).
  return deepFreeze(structuredClone(loaded));
}

// ---------------------------------------------------------------------------------------------
// JSON

function parseJson(text: string, displayPath: string): unknown {
  // Editors on Windows like to write a BOM, which JSON.parse rejects.
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  try {
    return JSON.parse(body);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new ConfigError([{ path: displayPath, message: `invalid JSON ${describeJsonError(message, body)}` }], { source: displayPath });
  }
}

/**
 * Says where and why a config file is not JSON: "at line 3, column 15: expected a value, found ","".
 * V8's own messages only sometimes carry a position and change between Node versions, so the file
 * is rescanned here; V8's message is the fallback if the scan disagrees.
 */
function describeJsonError(v8Message: string, text: string): string {
  const found = locateJsonError(text);
  if (found === undefined) return `(${v8Message})`;
  const before = text.slice(0, found.offset);
  const line = before.split('\n').length;
  const column = found.offset - before.lastIndexOf('\n');
  return `at line ${line}, column ${column}: ${found.reason}`;
}

class JsonScanError extends Error {
  constructor(
    readonly offset: number,
    readonly reason: string,
  ) {
    super(reason);
  }
}

/** A strict RFC 8259 scanner that only reports the first error; used after JSON.parse failed. */
function locateJsonError(text: string): { offset: number; reason: string } | undefined {
  let i = 0;
  const here = (): string => (i >= text.length ? 'the end of the file' : JSON.stringify(text[i]));
  const fail = (reason: string): never => {
    throw new JsonScanError(i, reason);
  };
  const skipWhitespace = (): void => {
    while (i < text.length && ' \t\n\r'.includes(text[i] as string)) i++;
  };
  const scanString = (): void => {
    i++;
    while (i < text.length) {
      const code = text.charCodeAt(i);
      if (code === 0x22) {
        i++;
        return;
      }
      if (code === 0x5c) {
        const escape = /^\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})/.exec(text.slice(i, i + 6));
        if (escape === null) fail('invalid escape sequence in a string');
        i += (escape as RegExpExecArray)[0].length;
        continue;
      }
      if (code < 0x20) fail('line break or control character inside a string (escape it, e.g. \\n)');
      i++;
    }
    fail('unterminated string');
  };
  const scanValue = (): void => {
    skipWhitespace();
    const start = text[i];
    if (start === '{') {
      i++;
      skipWhitespace();
      if (text[i] === '}') return void i++;
      for (;;) {
        skipWhitespace();
        if (text[i] !== '"') fail(`expected a property name in double quotes, found ${here()}`);
        scanString();
        skipWhitespace();
        if (text[i] !== ':') fail(`expected ":" after a property name, found ${here()}`);
        i++;
        scanValue();
        skipWhitespace();
        if (text[i] === ',') i++;
        else if (text[i] === '}') return void i++;
        else fail(`expected "," or "}" after a property value, found ${here()}`);
      }
    }
    if (start === '[') {
      i++;
      skipWhitespace();
      if (text[i] === ']') return void i++;
      for (;;) {
        scanValue();
        skipWhitespace();
        if (text[i] === ',') i++;
        else if (text[i] === ']') return void i++;
        else fail(`expected "," or "]" after an array element, found ${here()}`);
      }
    }
    if (start === '"') return scanString();
    const literal = /^(?:true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(text.slice(i, i + 512));
    if (literal === null) fail(`expected a value, found ${here()}`);
    i += (literal as RegExpExecArray)[0].length;
  };
  try {
    scanValue();
    skipWhitespace();
    if (i < text.length) fail(`unexpected ${here()} after the end of the document`);
  } catch (error) {
    if (error instanceof JsonScanError) return { offset: error.offset, reason: error.reason };
    return undefined; // e.g. nesting deep enough to overflow the stack: fall back to V8's message
  }
  return undefined;
}

function describeFsError(error: unknown): string {
  if (error instanceof Error && 'code' in error) {
    switch (error.code) {
      case 'ENOENT':
        return 'no such file';
      case 'EACCES':
      case 'EPERM':
        return 'permission denied';
      case 'EISDIR':
        return 'is a directory';
    }
    return String(error.code);
  }
  return error instanceof Error ? error.message : String(error);
}

// ---------------------------------------------------------------------------------------------
// Environment overrides

interface EnvOverrideResult {
  raw: unknown;
  problems: ConfigProblem[];
  applied: EnvOverrideName[];
}

const logLevels = configSchema.shape.logLevel.unwrap().options;

/**
 * Applies `TESSERA_*` overrides to the raw document before validation, so overridden values go
 * through the same schema. An empty variable counts as unset (what `VAR=` in a compose file means).
 * A variable with a bad value is reported under `env.NAME` and not applied.
 */
function applyEnvOverrides(raw: unknown, env: NodeJS.ProcessEnv): EnvOverrideResult {
  const problems: ConfigProblem[] = [];
  const applied: EnvOverrideName[] = [];
  const read = (name: EnvOverrideName): string | undefined => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  const reject = (name: EnvOverrideName, message: string): void => {
    problems.push({ path: `env.${name}`, message });
  };

  // Anything but an object is reported by the schema at (root); overrides have nowhere to go.
  if (!isPlainObject(raw)) return { raw, problems, applied };
  const document: Record<string, unknown> = { ...raw };
  const section = (key: string): Record<string, unknown> | undefined => {
    const value = document[key];
    if (value === undefined) return {};
    // A section of the wrong type is the schema's to report; do not paper over it.
    return isPlainObject(value) ? { ...value } : undefined;
  };

  const port = read('TESSERA_PORT');
  if (port !== undefined) {
    const listen = section('listen');
    if (!/^\d{1,5}$/.test(port) || Number(port) > 65535) {
      reject('TESSERA_PORT', `must be an integer from 0 to 65535 (got ${JSON.stringify(port)})`);
    } else if (listen) {
      document.listen = { ...listen, port: Number(port) };
      applied.push('TESSERA_PORT');
    }
  }

  const host = read('TESSERA_HOST');
  if (host !== undefined) {
    const listen = section('listen');
    if (listen) {
      document.listen = { ...listen, host };
      applied.push('TESSERA_HOST');
    }
  }

  const redisUrl = read('TESSERA_REDIS_URL');
  if (redisUrl !== undefined) {
    if (!/^rediss?:\/\//.test(redisUrl) || !URL.canParse(redisUrl)) {
      // The URL may carry a password: never echo it.
      reject('TESSERA_REDIS_URL', 'must be a redis:// or rediss:// URL');
    } else {
      const store = section('store');
      // Keep tuning the file gave a Redis store (key prefix, timeout); everything else defaults.
      const kept: Record<string, unknown> = {};
      if (store && (store.type === 'redis' || store.type === 'redis-cluster')) {
        if (store.keyPrefix !== undefined) kept.keyPrefix = store.keyPrefix;
        if (store.commandTimeoutMs !== undefined) kept.commandTimeoutMs = store.commandTimeoutMs;
      }
      document.store = { type: 'redis', url: redisUrl, ...kept };
      applied.push('TESSERA_REDIS_URL');
    }
  }

  const workers = read('TESSERA_WORKERS');
  if (workers !== undefined) {
    const workersSection = section('workers');
    if (!/^\d{1,2}$/.test(workers) || Number(workers) < 1 || Number(workers) > 64) {
      reject('TESSERA_WORKERS', `must be an integer from 1 to 64 (got ${JSON.stringify(workers)})`);
    } else if (workersSection) {
      document.workers = { ...workersSection, threads: Number(workers) };
      applied.push('TESSERA_WORKERS');
    }
  }

  const logLevel = read('TESSERA_LOG_LEVEL');
  if (logLevel !== undefined) {
    if (!(logLevels as readonly string[]).includes(logLevel)) {
      reject('TESSERA_LOG_LEVEL', `must be one of ${logLevels.join(', ')} (got ${JSON.stringify(logLevel)})`);
    } else {
      document.logLevel = logLevel;
      applied.push('TESSERA_LOG_LEVEL');
    }
  }

  return { raw: document, problems, applied };
}

// ---------------------------------------------------------------------------------------------
// Schema issues → problems

/**
 * Messages for zod's generic issues, worded for someone editing a JSON file. Messages written in
 * the schema itself take precedence over these.
 */
function describeIssue(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case 'invalid_type':
      if (issue.input === undefined) return 'is required';
      if (issue.expected === 'int') return `must be an integer (got ${JSON.stringify(issue.input)})`;
      return `must be ${article(jsonTypeName(issue.expected))} (got ${jsonTypeName(typeOfJson(issue.input))})`;
    case 'too_small':
      if (issue.origin === 'array') return `must list at least ${String(issue.minimum)} ${issue.minimum === 1 ? 'entry' : 'entries'}`;
      if (issue.origin === 'string') return issue.minimum === 1 ? 'must not be empty' : `must be at least ${String(issue.minimum)} characters long`;
      return issue.inclusive === false ? `must be greater than ${String(issue.minimum)}` : `must be at least ${String(issue.minimum)}`;
    case 'too_big':
      if (issue.origin === 'array') return `must list at most ${String(issue.maximum)} entries`;
      if (issue.origin === 'string') return `must be at most ${String(issue.maximum)} characters long`;
      return issue.inclusive === false ? `must be less than ${String(issue.maximum)}` : `must be at most ${String(issue.maximum)}`;
    case 'invalid_value':
      return `must be ${issue.values.length === 1 ? '' : 'one of '}${issue.values.map((value) => JSON.stringify(value)).join(', ')}`;
    case 'invalid_union': {
      const options: unknown = issue.options;
      if (issue.discriminator !== undefined && Array.isArray(options)) {
        return `must be one of ${options.map((value) => JSON.stringify(value)).join(', ')}`;
      }
      // A union of plain types (a user claim value): name the types instead of "Invalid input".
      const expected = issue.errors.map((branch) => (branch.length === 1 && branch[0]?.code === 'invalid_type' ? branch[0].expected : undefined));
      if (expected.length > 1 && expected.every((type) => type !== undefined)) {
        const names = expected.map((type) => article(jsonTypeName(type)));
        return `must be ${names.slice(0, -1).join(', ')} or ${String(names.at(-1))}`;
      }
      return undefined;
    }
    case 'invalid_format':
      if (issue.format === 'datetime' || issue.format === 'date') return 'must be an ISO 8601 date or date-time';
      if (issue.format === 'url') return 'must be an absolute URL';
      return undefined;
    default:
      return undefined;
  }
}

function toProblems(issue: z.core.$ZodIssue): ConfigProblem[] {
  // One problem per unknown field, at the field's own path: that is where the typo is.
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((key) => ({ path: formatPath([...issue.path, key]), message: 'unknown field' }));
  }
  return [{ path: formatPath(issue.path), message: issue.message }];
}

/** `['clients', 2, 'allowedGrantTypes', 0]` → `clients[2].allowedGrantTypes[0]`; `[]` → `(root)`. */
function formatPath(path: readonly PropertyKey[]): string {
  if (path.length === 0) return '(root)';
  let text = '';
  for (const key of path) {
    if (typeof key === 'number') text += `[${key}]`;
    else if (typeof key === 'string' && /^[A-Za-z_$][\w$]*$/.test(key)) text += text === '' ? key : `.${key}`;
    else text += `[${JSON.stringify(String(key))}]`;
  }
  return text;
}

function typeOfJson(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

function jsonTypeName(type: string): string {
  return type === 'record' ? 'object' : type;
}

function article(noun: string): string {
  return noun === 'null' ? 'null' : /^[aeiou]/.test(noun) ? `an ${noun}` : `a ${noun}`;
}

// ---------------------------------------------------------------------------------------------
// Cross-reference checks (need the whole, schema-valid document)

function checkCrossReferences(config: TesseraConfig, extraGrantTypes: readonly string[]): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const report = (path: string, message: string): void => {
    problems.push({ path, message });
  };

  // Identity resources and API scopes share one namespace: the `scope` parameter.
  const scopeOwners = new Map<string, string>();
  const registerScope = (name: string, path: string): void => {
    if (name === 'offline_access') {
      report(path, '"offline_access" is built in and cannot be registered');
      return;
    }
    const first = scopeOwners.get(name);
    if (first !== undefined) report(path, `duplicate scope name "${name}" (also ${first})`);
    else scopeOwners.set(name, path);
  };
  config.identityResources.forEach((resource, i) => registerScope(resource.name, `identityResources[${i}].name`));
  const apiScopeNames = new Set<string>();
  config.apiScopes.forEach((scope, i) => {
    registerScope(scope.name, `apiScopes[${i}].name`);
    apiScopeNames.add(scope.name);
  });

  const resourceNames = new Map<string, string>();
  config.apiResources.forEach((resource, i) => {
    const first = resourceNames.get(resource.name);
    if (first !== undefined) report(`apiResources[${i}].name`, `duplicate API resource name "${resource.name}" (also ${first})`);
    else resourceNames.set(resource.name, `apiResources[${i}].name`);
    resource.scopes.forEach((scope, j) => {
      if (!apiScopeNames.has(scope)) report(`apiResources[${i}].scopes[${j}]`, `unknown API scope "${scope}"`);
    });
  });

  const knownGrantTypes = new Set<string>([...builtInGrantTypes, ...shippedExtensionGrantTypes, ...extraGrantTypes]);
  const clientIds = new Map<string, string>();
  config.clients.forEach((client, i) => {
    const at = `clients[${i}]`;
    const first = clientIds.get(client.clientId);
    if (first !== undefined) report(`${at}.clientId`, `duplicate client id "${client.clientId}" (also ${first})`);
    else clientIds.set(client.clientId, `${at}.clientId`);

    if (client.requireClientSecret && client.clientSecrets.length === 0) {
      report(`${at}.clientSecrets`, 'must list at least one secret when requireClientSecret is true');
    }
    client.allowedGrantTypes.forEach((grantType, j) => {
      if (!knownGrantTypes.has(grantType)) report(`${at}.allowedGrantTypes[${j}]`, `unknown grant type "${grantType}"`);
    });
    if (client.allowedGrantTypes.includes('authorization_code') && client.redirectUris.length === 0) {
      report(`${at}.redirectUris`, 'must list at least one redirect URI for the authorization_code grant');
    }
    client.allowedScopes.forEach((scope, j) => {
      if (scope === 'offline_access') {
        if (!client.allowOfflineAccess) report(`${at}.allowedScopes[${j}]`, '"offline_access" requires allowOfflineAccess: true');
      } else if (!scopeOwners.has(scope)) {
        report(`${at}.allowedScopes[${j}]`, `unknown scope "${scope}"`);
      }
    });
    if (client.slidingRefreshTokenLifetime > client.absoluteRefreshTokenLifetime) {
      report(
        `${at}.slidingRefreshTokenLifetime`,
        `must not exceed absoluteRefreshTokenLifetime (${client.slidingRefreshTokenLifetime} > ${client.absoluteRefreshTokenLifetime})`,
      );
    }
  });

  // A username is unique within its tenant and identity provider.
  const usernames = new Map<string, string>();
  config.users.forEach((user, i) => {
    const key = JSON.stringify([user.username, user.tenant ?? null, user.idp]);
    const first = usernames.get(key);
    if (first !== undefined) report(`users[${i}].username`, `duplicate user "${user.username}"${describeRealm(user)} (also ${first})`);
    else usernames.set(key, `users[${i}].username`);
    if (!isPasswordHash(user.passwordHash)) {
      report(`users[${i}].passwordHash`, 'must be an argon2id or scrypt PHC string as printed by "tessera hash-password"');
    }
  });

  return problems;
}

function describeRealm(user: TesseraConfig['users'][number]): string {
  const parts = [...(user.tenant === undefined ? [] : [`tenant "${user.tenant}"`]), `idp "${user.idp}"`];
  return ` in ${parts.join(', ')}`;
}

// ---------------------------------------------------------------------------------------------
// Signing key files (checked by `tessera check-config`; the gateway imports them itself)

const keyTypeByAlgorithm: Record<TesseraConfig['signing']['algorithm'], { kty: string; crv?: string }> = {
  ES256: { kty: 'EC', crv: 'P-256' },
  EdDSA: { kty: 'OKP', crv: 'Ed25519' },
  RS256: { kty: 'RSA' },
  PS256: { kty: 'RSA' },
};

/**
 * Checks that every `signing.keys[].file` exists and holds a private JWK usable for signing; the
 * first key (the one that signs) must match `signing.algorithm`.
 *
 * @example
 * ```ts
 * const problems = await checkSigningKeyFiles(config);
 * if (problems.length > 0) throw new ConfigError(problems);
 * ```
 */
export async function checkSigningKeyFiles(config: LoadedConfig): Promise<ConfigProblem[]> {
  const problems: ConfigProblem[] = [];
  for (const [i, key] of config.signing.keys.entries()) {
    const path = `signing.keys[${i}].file`;
    const problem = await checkSigningKeyFile(key.file, i === 0 ? config.signing.algorithm : undefined);
    if (problem !== undefined) problems.push({ path, message: problem });
  }
  return problems;
}

async function checkSigningKeyFile(file: string, requiredAlgorithm: string | undefined): Promise<string | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    return `cannot read ${JSON.stringify(file)} (${describeFsError(error)})`;
  }
  let jwk: unknown;
  try {
    jwk = JSON.parse(text);
  } catch {
    return `${JSON.stringify(file)} is not JSON (expected a private JWK from "tessera keys generate")`;
  }
  if (!isPlainObject(jwk) || typeof jwk.kty !== 'string') return `${JSON.stringify(file)} is not a JWK`;
  if (typeof jwk.d !== 'string') return `${JSON.stringify(file)} holds a public key; a private JWK is needed to sign`;
  const algorithm = typeof jwk.alg === 'string' ? jwk.alg : requiredAlgorithm;
  if (requiredAlgorithm !== undefined && algorithm !== requiredAlgorithm) {
    return `the signing key's algorithm "${String(algorithm)}" does not match signing.algorithm "${requiredAlgorithm}"`;
  }
  if (algorithm === undefined) return `${JSON.stringify(file)} has no "alg"; add one so the key can be published`;
  const expected = keyTypeByAlgorithm[algorithm as keyof typeof keyTypeByAlgorithm];
  if (expected === undefined) return `unsupported algorithm "${algorithm}"`;
  if (jwk.kty !== expected.kty || (expected.crv !== undefined && jwk.crv !== expected.crv)) {
    return `a ${algorithm} key must be kty "${expected.kty}"${expected.crv ? ` with crv "${expected.crv}"` : ''}`;
  }
  try {
    await importJWK(jwk as JWK, algorithm);
  } catch (error) {
    return `${JSON.stringify(file)} is not a valid ${algorithm} key (${error instanceof Error ? error.message : String(error)})`;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Helpers

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function deepFreeze<T>(value: T): DeepReadonly<T> {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value as DeepReadonly<T>;
}
