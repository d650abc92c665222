import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type {
  ExtensionGrantValidator,
  ProfileService,
  ResourceOwnerPasswordValidator,
  ValidatorServices,
} from '../../core/validator_api.js';
import { ensureTypeScriptLoader, isTypeScriptModule } from '../../core/typescript_loader.js';
import { ConfigError } from '../config/config_error.js';

/** A validator module that loaded and whose grant type is free. */
export interface ValidatorModule {
  /** Absolute path (or the URL as given, for modules that are not files). */
  readonly file: string;
  /** What workers import. */
  readonly url: string;
  /**
   * An extension grant, the password grant's credential check (which replaces the built-in), or
   * the profile service (users' claims and whether they are active).
   */
  readonly kind: 'extension_grant' | 'resource_owner_password' | 'profile_service';
  /**
   * The grant type it serves (`password` for a password validator); `profile_service` for the
   * profile service, which serves none, so that reload log lines name it.
   */
  readonly grantType: string;
  /**
   * Modification times of the module, of the other files in its folder (helper modules, data) and
   * of the data files it declares, so a reload can tell what changed.
   */
  readonly version: string;
  /** Absolute paths of the data files the module declares (`export const dataFiles`), watched too. */
  readonly dataFiles: readonly string[];
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
  const support = await supportVersions(sources.dir);

  const problems: { path: string; message: string }[] = [];
  const inspected: ValidatorModule[] = [];
  for (const spec of specs) {
    const url = spec.startsWith('file:') ? spec : pathToFileURL(spec).href;
    const file = url.startsWith('file:') ? fileURLToPath(url) : url;
    try {
      const importVersion = await importVersionOf(file, support);
      const { kind, grantType, dataFiles } = await inspectValidator(url, file, importVersion);
      const dataVersions = await Promise.all(dataFiles.map(versionOf));
      inspected.push({ file, url, kind, grantType, version: [importVersion, ...dataVersions].join('+'), dataFiles });
    } catch (err) {
      problems.push({ path: file, message: (err as Error).message });
    }
  }
  problems.push(...collisionsOf(inspected, new Set(reservedGrantTypes)));
  if (problems.length > 0) throw new ConfigError(problems);
  return inspected;
}

/**
 * Two modules that claim one grant type (or the password check) are both at fault, whichever
 * sorts first: each is named with the other(s), so the file just added is among those named.
 */
function collisionsOf(modules: readonly ValidatorModule[], reserved: ReadonlySet<string>): { path: string; message: string }[] {
  const claims = new Map<string, ValidatorModule[]>();
  for (const module of modules) {
    // Keys no grant type can be: one password validator and one profile service at most.
    const key = module.kind === 'extension_grant' ? module.grantType : `\u0000${module.kind}`;
    claims.set(key, [...(claims.get(key) ?? []), module]);
  }
  const problems: { path: string; message: string }[] = [];
  for (const [grantType, claimants] of claims) {
    if (!grantType.startsWith('\u0000') && reserved.has(grantType)) {
      for (const { file } of claimants)
        problems.push({ path: file, message: `grant type "${grantType}" is already registered by a built-in grant` });
      continue;
    }
    if (claimants.length < 2) continue;
    for (const { file } of claimants) {
      const others = claimants.filter((other) => other.file !== file).map((other) => other.file);
      const what =
        grantType === '\u0000resource_owner_password'
          ? 'a password validator'
          : grantType === '\u0000profile_service'
            ? 'a profile service'
            : `grant type "${grantType}"`;
      problems.push({ path: file, message: `${what} is also registered by ${others.join(', ')}` });
    }
  }
  return problems.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/**
 * The grant types of validator modules, read before the config is validated (which needs them).
 * Modules that fail here are skipped: {@link loadValidatorModules} reports them properly later.
 */
export async function peekGrantTypes(urls: readonly string[], dir?: string): Promise<string[]> {
  const names: string[] = [];
  const support = await supportVersions(dir);
  for (const url of urls) {
    try {
      const file = url.startsWith('file:') ? fileURLToPath(url) : url;
      const inspection = await inspectValidator(url, file, await importVersionOf(file, support));
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
  readonly dataFiles: readonly string[];
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
  let module: { default?: unknown; dataFiles?: unknown };
  try {
    module = (await import(versionedUrl)) as { default?: unknown; dataFiles?: unknown };
  } catch (err) {
    throw new Error(`cannot be imported: ${describeImportFailure(err, file)}`);
  }
  const Validator = module.default;
  // An arrow function has no prototype and cannot be constructed: not a class either.
  if (typeof Validator !== 'function' || Validator.prototype === undefined)
    throw new Error('has no default export that is a validator class');
  let instance: ExtensionGrantValidator | ResourceOwnerPasswordValidator | ProfileService;
  try {
    instance = new (Validator as new (s: ValidatorServices) => ExtensionGrantValidator)(inspectionServices);
  } catch (err) {
    throw new Error(`its constructor threw: ${(err as Error).message.split('\n')[0]}`);
  }
  const dataFiles = declaredDataFiles(module.dataFiles, file);
  if ('kind' in instance && instance.kind === 'profile_service') {
    const service = instance as Partial<ProfileService>;
    if (typeof service.getProfileData !== 'function' || typeof service.isActive !== 'function') {
      throw new Error('its profile service lacks getProfileData(context) or isActive(context)');
    }
    const inspection: ValidatorInspection = { kind: 'profile_service', grantType: 'profile_service', dataFiles };
    inspections.set(versionedUrl, inspection);
    return inspection;
  }
  if (!('validate' in instance) || typeof instance.validate !== 'function')
    throw new Error('its validator has no validate(context) method');
  let inspection: ValidatorInspection;
  if ('kind' in instance && instance.kind === 'resource_owner_password') {
    inspection = { kind: 'resource_owner_password', grantType: 'password', dataFiles };
  } else {
    const grantType = (instance as ExtensionGrantValidator).grantType;
    if (typeof grantType !== 'string' || grantType.length === 0) throw new Error('its validator has no grantType');
    inspection = { kind: 'extension_grant', grantType, dataFiles };
  }
  inspections.set(versionedUrl, inspection);
  return inspection;
}

/**
 * The first line of what went wrong, and where, for a module that does not compile. tsx (esbuild)
 * reports `Transform failed with 1 error:` and the file, line and column on the next line; Node
 * reports a JavaScript syntax error of an ES module without its line, which `node --check` prints
 * (run only on this failure path).
 */
function describeImportFailure(err: unknown, file: string): string {
  const message = err instanceof Error ? err.message : String(err);
  const lines = message.split('\n');
  if (lines[0]?.startsWith('Transform failed')) {
    const located = /:(\d+):(\d+): ERROR: (.*)$/.exec(lines[1] ?? '');
    if (located !== null) return `line ${located[1]}, column ${located[2]}: ${located[3]}`;
  }
  // `node --check` cannot read TypeScript: its complaint names a line of Node's own files, not this one's.
  if (err instanceof SyntaxError && path.isAbsolute(file) && !isTypeScriptModule(file)) {
    const check = spawnSync(process.execPath, ['--check', file], { encoding: 'utf8', timeout: 10_000 });
    const where = /^(.*):(\d+)$/m.exec(check.stderr ?? '');
    if (where !== null && where[1] === file) return `line ${where[2]}: ${lines[0]}`;
  }
  // Outside this package's folder the validator API resolves only through a node_modules/tessera
  // beside the module or above it (validators/README.md, "Outside the package folder").
  const code = (err as { code?: unknown } | undefined)?.code;
  if (code === 'ERR_MODULE_NOT_FOUND' && /Cannot find package 'tessera'/.test(lines[0] ?? '')) {
    return `${lines[0]} (tessera/validator must resolve from the validator's folder: see validators/README.md, "Outside the package folder")`;
  }
  // A `.ts` file with no `"type": "module"` package.json above it is compiled as CommonJS, where
  // `import type` and `export` are syntax errors that carry no line.
  if (err instanceof SyntaxError && file.endsWith('.ts')) {
    return `${lines[0]} (a .ts module is an ES module only under a package.json with "type": "module": see validators/README.md, "Outside the package folder")`;
  }
  return lines[0] ?? '';
}

/**
 * `export const dataFiles = ['./partners.json']`: files the validator reads, relative to the module
 * (validators/README.md, "Hot reload"); a change to one reloads the validators as a change to the
 * module would.
 */
function declaredDataFiles(declared: unknown, file: string): string[] {
  if (declared === undefined) return [];
  if (!Array.isArray(declared) || !declared.every((entry) => typeof entry === 'string' && entry.length > 0)) {
    throw new Error('its dataFiles export is not a list of file paths');
  }
  const base = path.isAbsolute(file) ? path.dirname(file) : process.cwd();
  return declared.map((entry: string) => path.resolve(base, entry));
}

/** The version a module is imported with: its own, and for a module of `validatorsDir` its folder's. */
async function importVersionOf(file: string, support: SupportVersions): Promise<string> {
  const own = await versionOf(file);
  return support.modules.has(file) ? `${own}${support.version}` : own;
}

interface SupportVersions {
  /** The validator modules of the folder. */
  readonly modules: ReadonlySet<string>;
  /** The version of everything else in it, `''` when there is nothing else. */
  readonly version: string;
}

/**
 * A helper module or data file in `validatorsDir` may change while the validator files do not: its
 * version is part of every validator's there (which validator imports which helper is not worth
 * parsing for). Without a folder there is nothing to add.
 */
async function supportVersions(dir: string | undefined): Promise<SupportVersions> {
  if (dir === undefined) return { modules: new Set(), version: '' };
  const modules = new Set(await listValidatorFiles(dir));
  return { modules, version: await supportFilesVersion(dir, modules) };
}

/**
 * The versions of every file under `dir` but the validator modules themselves: helper modules
 * (in subfolders too) and data. Dot files and `node_modules` are left out.
 */
async function supportFilesVersion(dir: string, modules: ReadonlySet<string>): Promise<string> {
  let entries: string[];
  try {
    entries = (await readdir(dir, { recursive: true })).sort();
  } catch {
    return '';
  }
  const files = entries.filter((entry) => !entry.split(path.sep).some((part) => part.startsWith('.') || part === 'node_modules'));
  const versions: string[] = [];
  for (const entry of files) {
    const full = path.join(dir, entry);
    if (modules.has(full)) continue;
    try {
      const info = await stat(full);
      if (info.isFile()) versions.push(`${entry}:${Math.floor(info.mtimeMs)}-${info.size}`);
    } catch {
      // removed while listing: the next change event reloads again
    }
  }
  return versions.length === 0 ? '' : `.${createHash('sha256').update(versions.join('\n')).digest('base64url').slice(0, 16)}`;
}

async function versionOf(file: string): Promise<string> {
  try {
    const s = await stat(file);
    return `${Math.floor(s.mtimeMs)}-${s.size}`;
  } catch {
    return '0';
  }
}
