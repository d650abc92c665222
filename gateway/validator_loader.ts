import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { ExtensionGrantValidator, ResourceOwnerPasswordValidator, ValidatorServices } from '../workers/protocol/validator_api.js';
import { ensureTypeScriptLoader, isTypeScriptModule } from '../workers/typescript_loader.js';
import { ConfigError } from './config/config_error.js';

/** A validator module that loaded and whose grant type is free. */
export interface ValidatorModule {
  /** Absolute path (or the URL as given, for modules that are not files). */
  readonly file: string;
  /** What workers import. */
  readonly url: string;
  /** An extension grant, or the password grant's credential check (which replaces the built-in). */
  readonly kind: 'extension_grant' | 'resource_owner_password';
  /** The grant type it serves (`password` for a password validator). */
  readonly grantType: string;
  /** Modification time, so a reload can tell what changed. */
  readonly version: string;
}

const moduleExtensions = /\.(ts|mts|js|mjs)$/;

/** Files of a validators folder that are validator modules (not types, tests, or docs). */
export async function listValidatorFiles(dir: string): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  return names
    .filter((n) => moduleExtensions.test(n) && !/\.d\.(m)?ts$/.test(n) && !/\.test\./.test(n) && !n.startsWith('.') && !n.startsWith('_'))
    .sort()
    .map((n) => path.join(dir, n));
}

/**
 * Imports every validator module, checks its default export, reads its `grantType` (see
 * {@link inspectValidator}), and refuses collisions. Any problem is a {@link ConfigError} naming
 * the file, so `tessera start` exits 2 (validators/README.md, "Drop it in").
 *
 * Modules are imported with their modification time in the URL so that a reload sees new code.
 */
export async function loadValidatorModules(
  sources: { dir?: string | undefined; modules?: readonly string[] },
  reservedGrantTypes: readonly string[],
): Promise<ValidatorModule[]> {
  const specs: string[] = [];
  if (sources.dir !== undefined) specs.push(...(await listValidatorFiles(sources.dir)));
  specs.push(...(sources.modules ?? []));

  const problems: { path: string; message: string }[] = [];
  const loaded: ValidatorModule[] = [];
  const owners = new Map<string, string>();
  let passwordOwner: string | undefined;
  for (const grantType of reservedGrantTypes) owners.set(grantType, 'a built-in grant');

  for (const spec of specs) {
    const url = spec.startsWith('file:') ? spec : pathToFileURL(spec).href;
    const file = url.startsWith('file:') ? fileURLToPath(url) : url;
    try {
      const version = await versionOf(file);
      const { kind, grantType } = await inspectValidator(url, file, version);
      if (kind === 'resource_owner_password') {
        if (passwordOwner !== undefined) throw new Error(`a password validator is already registered by ${passwordOwner}`);
        passwordOwner = file;
        loaded.push({ file, url, kind, grantType, version });
        continue;
      }
      const owner = owners.get(grantType);
      if (owner !== undefined) throw new Error(`grant type "${grantType}" is already registered by ${owner}`);
      owners.set(grantType, file);
      loaded.push({ file, url, kind, grantType, version });
    } catch (err) {
      problems.push({ path: file, message: (err as Error).message });
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return loaded;
}

/**
 * The grant types of validator modules, read before the config is validated (which needs them).
 * Modules that fail here are skipped: {@link loadValidatorModules} reports them properly later.
 */
export async function peekGrantTypes(urls: readonly string[]): Promise<string[]> {
  const names: string[] = [];
  for (const url of urls) {
    try {
      const file = url.startsWith('file:') ? fileURLToPath(url) : url;
      const inspection = await inspectValidator(url, file, await versionOf(file));
      if (inspection.kind === 'extension_grant') names.push(inspection.grantType);
    } catch {
      // reported by loadValidatorModules
    }
  }
  return names;
}

/** What the main thread learns from a validator class: which grant it serves. */
interface ValidatorInspection {
  readonly kind: ValidatorModule['kind'];
  readonly grantType: string;
}

/**
 * What a validator's constructor gets on the main thread, where the class is only inspected:
 * nothing validates here, so the token validator refuses, and there is no issuer or API resource.
 * The worker threads construct their own instances with the real services.
 */
const inspectionServices: ValidatorServices = Object.freeze({
  tokenValidator: Object.freeze({
    validateAccessToken: async (): Promise<never> => {
      throw new Error('validators validate in the worker threads; the main thread only reads their grantType');
    },
  }),
  logger: Object.freeze({ debug() {}, info() {}, warn() {}, error() {} }),
  issuer: '',
  apiResources: Object.freeze([]),
});

// The main thread constructs each version of a validator module once, whichever asks first: the
// config check before start (peekGrantTypes), the start, or a reload (validators/README.md,
// "Contract reference"). Only successes are kept: a module that failed is tried again, since what
// made it fail (a file its constructor reads, say) may be fixed without the module changing.
const inspections = new Map<string, ValidatorInspection>();

/**
 * Imports a module version (`url?v=version`), constructs its default export once with
 * {@link inspectionServices}, and reads its kind and grant type. Throws an Error whose message
 * says what is wrong, for a {@link ConfigError} naming the file.
 */
async function inspectValidator(url: string, file: string, version: string): Promise<ValidatorInspection> {
  const versionedUrl = `${url}?v=${version}`;
  const known = inspections.get(versionedUrl);
  if (known !== undefined) return known;
  if (isTypeScriptModule(file)) ensureTypeScriptLoader();
  let module: { default?: unknown };
  try {
    module = (await import(versionedUrl)) as { default?: unknown };
  } catch (err) {
    throw new Error(`cannot be imported: ${(err as Error).message.split('\n')[0]}`);
  }
  const Validator = module.default;
  // An arrow function has no prototype and cannot be constructed: not a class either.
  if (typeof Validator !== 'function' || Validator.prototype === undefined)
    throw new Error('has no default export that is a validator class');
  let instance: ExtensionGrantValidator | ResourceOwnerPasswordValidator;
  try {
    instance = new (Validator as new (s: ValidatorServices) => ExtensionGrantValidator)(inspectionServices);
  } catch (err) {
    throw new Error(`its constructor threw: ${(err as Error).message.split('\n')[0]}`);
  }
  if (typeof instance.validate !== 'function') throw new Error('its validator has no validate(context) method');
  let inspection: ValidatorInspection;
  if ('kind' in instance && instance.kind === 'resource_owner_password') {
    inspection = { kind: 'resource_owner_password', grantType: 'password' };
  } else {
    const grantType = (instance as ExtensionGrantValidator).grantType;
    if (typeof grantType !== 'string' || grantType.length === 0) throw new Error('its validator has no grantType');
    inspection = { kind: 'extension_grant', grantType };
  }
  inspections.set(versionedUrl, inspection);
  return inspection;
}

async function versionOf(file: string): Promise<string> {
  try {
    const s = await stat(file);
    return `${Math.floor(s.mtimeMs)}-${s.size}`;
  } catch {
    return '0';
  }
}
