/** `tessera check-config FILE`: validate a config file the way `start` would, and explain it. */
import { isAbsolute, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError } from '../config/config_error.js';
import type { LoadedConfig } from '../config/load.js';
import { checkSigningKeyFiles } from '../config/signing_key_files.js';
import { builtInGrantTypes } from '../../workers/protocol/grant_types.js';
import { createTessera } from '../service_builder.js';
import { loadValidatorModules } from '../validator_loader.js';
import { ExitCode, UsageError, type CliCommand } from './command.js';

export const checkConfigCommand: CliCommand = {
  words: ['check-config'],
  summary: 'Validate a config file and explain what it sets up',
  usage: 'tessera check-config FILE',
  details: [
    'Validates FILE exactly as "tessera start" would (TESSERA_* overrides included), checks that',
    'the signing key files hold private JWKs, and prints a summary. Exit code 2 when invalid.',
  ],
  async run(args, io) {
    const { positionals } = parseArgs({ args, options: {}, strict: true, allowPositionals: true });
    if (positionals.length !== 1) throw new UsageError('expected exactly one config FILE');
    const file = positionals[0] as string;
    // Through the builder, so grant types of the validators in validatorsDir count as known.
    const config = await createTessera(file).withEnv(io.env).loadConfig();
    const keyProblems = await checkSigningKeyFiles(config);
    if (keyProblems.length > 0) throw new ConfigError(keyProblems, { source: file });
    // The validator modules as start loads them: a module that does not compile, or two that
    // claim one grant type, stop start-up and must stop the check too.
    try {
      await loadValidatorModules({ dir: config.validatorsDir }, builtInGrantTypes);
    } catch (error) {
      if (error instanceof ConfigError) throw new ConfigError(error.problems, { source: file });
      throw error;
    }
    io.stdout.write(explainConfig(config, file));
    return ExitCode.Ok;
  },
};

/** A short, human summary of a valid config. */
export function explainConfig(config: LoadedConfig, file: string): string {
  const lines = [
    `${file} is valid.`,
    '',
    `issuer              ${config.issuer}`,
    `listen              ${config.listen.host}:${config.listen.port}`,
    `store               ${describeStore(config.store)}`,
    `workers             ${config.workers.threads} threads, queue limit ${config.workers.maxQueue}`,
    `signing             ${describeSigning(config)}`,
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

function describeSigning(config: LoadedConfig): string {
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
