/** `tessera check-config FILE`: validate a config file the way `start` would, and explain it. */
import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigError, type ConfigProblem } from '../config/config_error.js';
import { loadConfigFile, type LoadedConfig } from '../config/load.js';
import { isPlainObject } from '../config/plain_object.js';
import { signingAlgorithms } from '../../core/signing_key.js';
import { checkSigningKeyFiles } from '../config/signing_key_files.js';
import { builtInGrantTypes } from '../../core/grant_types.js';
import { listValidatorFiles, loadValidatorModules, peekGrantTypes } from '../validators/validator_loader.js';
import { ExitCode, onlyArgument, type CliCommand } from './command.js';
import { keyEncryptionEnvName, loadKeyEncryption, type KeyEncryption } from '../keys/key_encryption.js';

export const checkConfigCommand: CliCommand = {
  words: ['check-config'],
  summary: 'Validate a config file and explain what it sets up',
  usage: 'tessera check-config FILE',
  details: [
    'Validates FILE exactly as "tessera start" would (TESSERA_* overrides included), checks that',
    'the signing key files hold private JWKs, and prints a summary. Exit code 2 when invalid.',
  ],
  async run(args, io) {
    const file = onlyArgument(args, 'config FILE');
    // Every check runs, whatever the others found, so that one run lists every problem (issue 32):
    // the validators first, since a module that does not load also makes its grant type unknown
    // to the clients that list it, and that line alone would hide the cause.
    const raw = await readRawConfig(file);
    const configDir = dirname(resolve(file));
    const validators = await checkValidators(resolve(configDir, typeof raw?.validatorsDir === 'string' ? raw.validatorsDir : 'validators'));
    let config: LoadedConfig | undefined;
    const problems: ConfigProblem[] = [...validators.problems];
    try {
      config = await loadConfigFile(file, {
        extraGrantTypes: validators.grantTypes,
        ...(validators.problems.length > 0 ? { validatorsFailed: true } : {}),
        env: io.env,
      });
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      problems.push(...error.problems);
    }
    problems.push(...(await checkSigningKeyFiles(config ?? signingOf(raw, configDir))));
    // The key-encryption key as start reads it: a malformed key or unreadable file stops both.
    let encryption: KeyEncryption | undefined;
    if (config !== undefined) {
      try {
        encryption = await loadKeyEncryption(config, io.env);
      } catch (error) {
        if (!(error instanceof ConfigError)) throw error;
        problems.push(...error.problems);
      }
    }
    if (problems.length > 0 || config === undefined || encryption === undefined) throw new ConfigError(problems, { source: file });
    io.stdout.write(explainConfig(config, file, encryption));
    return ExitCode.Ok;
  },
};

/** The file as JSON, for the checks that run beside the schema; `undefined` when it is not an object (the load says why). */
async function readRawConfig(file: string): Promise<Record<string, unknown> | undefined> {
  try {
    const raw: unknown = JSON.parse(await readFile(file, 'utf8'));
    return isPlainObject(raw) ? raw : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The validator modules as start loads them (a module that does not compile, or two that claim
 * one grant type, stop start-up and must fail the check too), and the grant types of those that load.
 */
async function checkValidators(dir: string): Promise<{ problems: readonly ConfigProblem[]; grantTypes: string[] }> {
  try {
    const modules = await loadValidatorModules({ dir }, builtInGrantTypes);
    return { problems: [], grantTypes: modules.filter((m) => m.kind === 'extension_grant').map((m) => m.grantType) };
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    const files = await listValidatorFiles(dir);
    const failed = new Set(error.problems.map((problem) => problem.path));
    const loaded = files.filter((f) => !failed.has(f)).map((f) => pathToFileURL(f).href);
    return { problems: error.problems, grantTypes: await peekGrantTypes(loaded, dir) };
  }
}

/** The signing key files of a config that did not pass, as far as the file names them. */
function signingOf(raw: Record<string, unknown> | undefined, configDir: string): Parameters<typeof checkSigningKeyFiles>[0] {
  const signing = isPlainObject(raw?.signing) ? raw.signing : {};
  const keys = Array.isArray(signing.keys) ? signing.keys : [];
  const files = keys.map((key: unknown) => (isPlainObject(key) && typeof key.file === 'string' && key.file !== '' ? key.file : undefined));
  const algorithm = signingAlgorithms.find((name) => name === signing.algorithm);
  return {
    signing: {
      ...(algorithm === undefined ? {} : { algorithm }),
      keys: files.flatMap((f) => (f === undefined ? [] : [{ file: resolve(configDir, f) }])),
    },
  };
}

/** A short, human summary of a valid config. */
export function explainConfig(config: LoadedConfig, file: string, encryption?: KeyEncryption): string {
  const lines = [
    `${file} is valid.`,
    '',
    `issuer              ${config.issuer}`,
    `listen              ${config.listen.host}:${config.listen.port}`,
    `store               ${describeStore(config.store)}`,
    `workers             ${config.workers.threads} threads, queue limit ${config.workers.maxQueue}`,
    `signing             ${describeSigning(config)}`,
    ...(encryption === undefined ? [] : [`key encryption      ${describeKeyEncryption(config, encryption)}`]),
    `validators          ${displayPath(config.validatorsDir)}`,
    `log level           ${config.logLevel}`,
  ];
  if (config.envOverrides.length > 0) lines.push(`env overrides       ${config.envOverrides.join(', ')}`);
  lines.push(
    `identity resources  ${listOrNone(config.identityResources.map((resource) => resource.name))}`,
    `API scopes          ${listOrNone(config.apiScopes.map((scope) => scope.name))}`,
    '',
    `API resources (${config.apiResources.length}):`,
  );
  for (const resource of config.apiResources) {
    const secrets = resource.secrets.length === 0 ? '' : `; ${plural(resource.secrets.length, 'secret')}`;
    lines.push(`  ${resource.name}: scopes ${listOrNone(resource.scopes, ' ')}${secrets}`);
  }
  lines.push('', `clients (${config.clients.length}):`);
  for (const client of config.clients) {
    const traits = [
      client.allowedGrantTypes.join(', '),
      `scopes ${listOrNone(client.allowedScopes, ' ')}`,
      client.requireClientSecret ? plural(client.clientSecrets.length, 'secret') : 'public client',
      ...(client.redirectUris.length > 0 ? [`redirect ${client.redirectUris.join(' ')}`] : []),
      ...(client.enabled ? [] : ['DISABLED']),
    ];
    lines.push(`  ${client.clientId}: ${traits.join('; ')}`);
  }
  lines.push('', `users: ${config.users.length}`);
  if ((config.demoCredentials?.length ?? 0) > 0) {
    lines.push('', 'note: demoCredentials are printed by "tessera start"; keep them out of production configs.');
  }
  return `${lines.join('\n')}\n`;
}

function describeStore(store: LoadedConfig['store']): string {
  switch (store.type) {
    case 'memory':
      return 'memory (one process; state is lost on restart)';
    case 'redis':
      return `redis ${redactUrl(store.url)} (key prefix "${store.keyPrefix}")`;
    case 'redis-cluster':
      return `redis-cluster ${store.nodes.map(redactUrl).join(' ')} (key prefix "${store.keyPrefix}")`;
    case 'redis-sentinel': {
      // Which passwords are set, never what they are.
      const auth = [
        ...(store.password === undefined ? [] : ['Redis password']),
        ...(store.sentinelPassword === undefined ? [] : ['Sentinel password']),
        ...(store.tls ? ['TLS'] : []),
        ...(store.waitForReplicas > 0
          ? [`each write waits for ${store.waitForReplicas} replica${store.waitForReplicas === 1 ? '' : 's'}`]
          : []),
      ];
      return `redis-sentinel master "${store.name}" via ${store.sentinels.join(' ')} (key prefix "${store.keyPrefix}"${auth.map((a) => `, ${a}`).join('')})`;
    }
  }
}

function describeKeyEncryption(config: LoadedConfig, encryption: KeyEncryption): string {
  if (!encryption.enabled) {
    if (config.store.type === 'memory') return 'none (the memory store keeps nothing at rest)';
    return `none: WARNING the page secret and store-kept signing keys are kept in the store in plaintext; set ${keyEncryptionEnvName} or keyEncryption.keyFile (docs/security.md, "Keys at rest")`;
  }
  const where = encryption.source === 'keyEncryption.keyFile' ? displayPath(config.keyEncryption.keyFile ?? '') : keyEncryptionEnvName;
  const [first, ...older] = encryption.ids;
  return `AES-256-GCM under ${where}: key ${first} encrypts${older.length > 0 ? `, ${older.join(', ')} decrypt only` : ''}`;
}

/** Where the signing keys come from and how they rotate; the start banner says the same. */
export function describeSigning(config: LoadedConfig): string {
  const { algorithm, keys, rotation } = config.signing;
  if (keys.length === 0) {
    const schedule = rotation === undefined ? 'rotated by "tessera keys rotate"' : `rotated every ${rotation.every} s`;
    if (config.store.type === 'memory') {
      return `${algorithm} with a development key (generated under .tessera/ at first start; not for production), ${schedule}`;
    }
    return `${algorithm} with keys kept in the store and generated by Tessera, ${schedule}`;
  }
  const files = keys.map((key, i) => `${displayPath(key.file)}${i === 0 ? ' (signs)' : ' (published)'}`);
  return `${algorithm} with ${files.join(', ')}`;
}

// A Redis URL may carry a password; never print it.
function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return url;
  }
}

function displayPath(path: string): string {
  const fromCwd = relative(process.cwd(), path);
  return fromCwd !== '' && !fromCwd.startsWith('..') && !isAbsolute(fromCwd) ? fromCwd : path;
}

function listOrNone(items: readonly string[], separator = ', '): string {
  return items.length === 0 ? '(none)' : items.join(separator);
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
