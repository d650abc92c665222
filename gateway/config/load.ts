/**
 * Loading and validating the config file (README, "Configuration reference"): JSON → environment overrides → zod schema
 * → cross-reference checks → resolved paths → deep-frozen {@link LoadedConfig}.
 *
 * Every problem is reported at once, each naming its dotted path
 * (`clients[2].allowedGrantTypes[0]: unknown grant type "pasword"`), so an operator fixes a config
 * in one round instead of one error per restart.
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { ConfigError } from './config_error.js';
import { parseJson } from './config_json.js';
import { applyClientProfile } from './client_profiles.js';
import { checkCrossReferences } from './cross_references.js';
import { applyEnvOverrides, type EnvOverrideName } from './env_overrides.js';
import { describeFsError } from './fs_error.js';
import { salvageConfig } from './salvage.js';
import { describeIssue, toProblems } from './schema_issues.js';
import { configSchema, type DeepReadonly, type TesseraConfig } from './schema.js';

/**
 * A validated config, deep-frozen. Relative `signing.keys[].file`, `keyEncryption.keyFile`, `tls` files and `validatorsDir` are already
 * resolved against {@link LoadedConfig.configDir}.
 */
export type LoadedConfig = TesseraConfig & {
  /** Absolute folder that relative paths in the config were resolved against. */
  readonly configDir: string;
  /** Absolute path of the config file, when it came from a file. */
  readonly configPath?: string;
  /** Names of the `TESSERA_*` environment variables that overrode the file, in the documented order. */
  readonly envOverrides: readonly EnvOverrideName[];
};

export interface ValidateConfigOptions {
  /** Folder that relative paths in the config resolve against (the config file's folder). */
  configDir: string;
  /** Where `TESSERA_*` overrides are read from; defaults to `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Grant types registered by validators beyond the built-in and shipped ones. */
  extraGrantTypes?: readonly string[];
  /**
   * Some validator module did not load (its problems are reported beside these): an unknown grant
   * type may be the one it would have registered, and its problem says so.
   */
  validatorsFailed?: boolean;
}

export type LoadConfigFileOptions = Omit<ValidateConfigOptions, 'configDir'>;

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
 * @throws {ConfigError} listing every problem: bad environment overrides, schema violations and
 * cross-reference problems (unknown grant types and scopes, duplicates, missing secrets or
 * redirect URIs, inconsistent refresh-token settings), the latter for the entries that pass the
 * schema when some do not.
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
    // The cross references of what does pass, so that one run reports both kinds.
    const salvaged = salvageConfig(overridden.raw, parsed.error.issues);
    if (salvaged !== undefined)
      problems.push(...salvaged.keep(checkCrossReferences(salvaged.config, options.extraGrantTypes ?? [], options.validatorsFailed)));
    throw new ConfigError(problems, { source });
  }
  problems.push(...checkCrossReferences(parsed.data, options.extraGrantTypes ?? [], options.validatorsFailed));
  if (problems.length > 0) throw new ConfigError(problems, { source });

  const config = parsed.data;
  const loaded = {
    ...config,
    clients: config.clients.map(applyClientProfile),
    signing: { ...config.signing, keys: config.signing.keys.map((key) => ({ ...key, file: resolve(configDir, key.file) })) },
    validatorsDir: resolve(configDir, config.validatorsDir),
    keyEncryption:
      config.keyEncryption.keyFile === undefined ? config.keyEncryption : { keyFile: resolve(configDir, config.keyEncryption.keyFile) },
    ...(config.tls === undefined
      ? {}
      : { tls: { certFile: resolve(configDir, config.tls.certFile), keyFile: resolve(configDir, config.tls.keyFile) } }),
    mtls: config.mtls.caFile === undefined ? config.mtls : { ...config.mtls, caFile: resolve(configDir, config.mtls.caFile) },
    events: config.events.file === undefined ? config.events : { ...config.events, file: resolve(configDir, config.events.file) },
    admin: config.admin.tokenFile === undefined ? config.admin : { ...config.admin, tokenFile: resolve(configDir, config.admin.tokenFile) },
    dynamicClientRegistration:
      config.dynamicClientRegistration.initialAccessTokenFile === undefined
        ? config.dynamicClientRegistration
        : {
            ...config.dynamicClientRegistration,
            initialAccessTokenFile: resolve(configDir, config.dynamicClientRegistration.initialAccessTokenFile),
          },
    configDir,
    ...(configPath === undefined ? {} : { configPath }),
    envOverrides: overridden.applied,
  };
  // A copy, so that nothing frozen is shared with zod (its defaults are shallow clones).
  return deepFreeze(structuredClone(loaded));
}

function deepFreeze<T>(value: T): DeepReadonly<T> {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value as DeepReadonly<T>;
}
