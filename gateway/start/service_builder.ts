import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Logger } from 'pino';
import { ConfigError, type ConfigProblem } from '../config/config_error.js';
import { builtInGrantTypes } from '../../core/grant_types.js';
import { loadConfigFile, validateConfig, type LoadedConfig } from '../config/load.js';
import type { AuditEventHook } from '../observability/events/audit_events.js';
import type { ProcessSlot, RunningGateway } from './server.js';
import { listValidatorFiles, loadValidatorModules, peekGrantTypes } from '../validators/validator_loader.js';

/**
 * Builds and starts a Tessera gateway from code; `tessera start` uses the same builder.
 *
 * @example
 * ```ts
 * import { createTessera } from 'tessera';
 *
 * const gateway = await createTessera('config/tessera.json')
 *   .addExtensionGrantValidator(new URL('./my_grant.ts', import.meta.url))
 *   .start();
 * console.log(`listening on ${gateway.url}`);
 * process.on('SIGTERM', () => gateway.stop());
 * ```
 */
export class TesseraBuilder {
  private readonly validatorModules: string[] = [];
  private logger: Logger | undefined;
  private watch = true;
  private env: NodeJS.ProcessEnv | undefined;
  private loaded: Promise<LoadedConfig> | undefined;
  private eventHook: AuditEventHook | undefined;
  private processSlot: ProcessSlot | undefined;

  constructor(private readonly source: string | LoadedConfig | Record<string, unknown>) {}

  /** Registers one extension-grant validator module (its default export is the validator class). */
  addExtensionGrantValidator(moduleUrl: string | URL): this {
    const url =
      moduleUrl instanceof URL ? moduleUrl.href : moduleUrl.startsWith('file:') ? moduleUrl : pathToFileURL(path.resolve(moduleUrl)).href;
    this.validatorModules.push(url);
    return this;
  }

  withLogger(logger: Logger): this {
    this.logger = logger;
    return this;
  }

  /** Where `TESSERA_*` overrides are read from (default `process.env`). */
  withEnv(env: NodeJS.ProcessEnv): this {
    this.env = env;
    return this;
  }

  /**
   * Calls `hook` with every audit event (docs/operations.md, "Events"), besides the config's
   * `events` sinks. Called after the request is answered, on the gateway's thread: keep it short
   * and hand work off (a queue, a socket). An event never holds a secret, a token or a code.
   *
   * @example
   * ```ts
   * createTessera('config/tessera.json').onEvent((event) => {
   *   if (event.name === 'RefreshTokenReuseDetected') alerts.push(event);
   * });
   * ```
   */
  onEvent(hook: AuditEventHook): this {
    this.eventHook = hook;
    return this;
  }

  /**
   * Starts the gateway as one of `slot.count` processes sharing its port (what `tessera start
   * --processes N` does for each child; docs/operations.md, "Several processes").
   */
  asProcess(slot: ProcessSlot): this {
    this.processSlot = slot;
    return this;
  }

  /** Hot reload of `validatorsDir` is on by default. */
  watchValidators(enabled: boolean): this {
    this.watch = enabled;
    return this;
  }

  /**
   * Validates the config (knowing the grant types of the validators it will load), then starts.
   * @throws ConfigError for an invalid config or validator module (the CLI exits 2).
   */
  async start(): Promise<RunningGateway> {
    const config = await this.loadConfig();
    // Loaded on start only: the builder also validates configs for `tessera check-config`, and
    // every CLI command loads it; none but `start` needs the HTTP server and the worker pool.
    const { startGateway } = await import('./server.js');
    const source = this.source;
    return startGateway({
      config,
      validatorModules: this.validatorModules,
      watchValidators: this.watch,
      // SIGHUP reads the file again, with the same environment overrides.
      ...(typeof source === 'string' ? { reloadConfig: (served) => this.reloadConfigFile(source, served) } : {}),
      ...(this.logger !== undefined ? { logger: this.logger } : {}),
      ...(this.eventHook !== undefined ? { onEvent: this.eventHook } : {}),
      ...(this.processSlot !== undefined ? { process: this.processSlot } : {}),
      // The key-encryption key comes from the same environment as the overrides.
      ...(this.env !== undefined ? { env: this.env } : {}),
    });
  }

  /** The validated config this builder will start with (validated once). */
  loadConfig(): Promise<LoadedConfig> {
    this.loaded ??= this.resolveConfig();
    return this.loaded;
  }

  private async resolveConfig(): Promise<LoadedConfig> {
    const env = this.env === undefined ? {} : { env: this.env };
    if (typeof this.source === 'string') {
      const extraGrantTypes = await this.peekValidatorGrantTypes(this.source);
      try {
        return await loadConfigFile(this.source, { extraGrantTypes, ...env });
      } catch (error) {
        // A validator that does not load makes its grant type unknown to the clients that list
        // it: report the module's own problem first, or that line reads as the cause.
        if (!(error instanceof ConfigError)) throw error;
        const broken = await this.validatorProblems(this.source);
        if (broken.length === 0) throw error;
        const again = await loadConfigFile(this.source, { extraGrantTypes, validatorsFailed: true, ...env }).then(
          () => [],
          (retry: unknown) => (retry instanceof ConfigError ? retry.problems : error.problems),
        );
        throw new ConfigError([...broken, ...again], { source: this.source });
      }
    }
    if ('configDir' in this.source) return this.source as LoadedConfig;
    return validateConfig(this.source, { configDir: process.cwd(), ...env });
  }

  private async reloadConfigFile(configPath: string, served: readonly string[]): Promise<LoadedConfig> {
    const extraGrantTypes = [...new Set([...served, ...(await this.peekValidatorGrantTypes(configPath))])];
    return loadConfigFile(configPath, { extraGrantTypes, ...(this.env === undefined ? {} : { env: this.env }) });
  }

  /** The problems of the validator modules the config file's `validatorsDir` holds, as start finds them. */
  private async validatorProblems(configPath: string): Promise<readonly ConfigProblem[]> {
    try {
      await loadValidatorModules({ dir: await this.validatorsDirOf(configPath), modules: this.validatorModules }, builtInGrantTypes);
      return [];
    } catch (error) {
      return error instanceof ConfigError ? error.problems : [];
    }
  }

  private async validatorsDirOf(configPath: string): Promise<string> {
    let dir = 'validators';
    try {
      const raw = JSON.parse(await readFile(configPath, 'utf8')) as { validatorsDir?: unknown };
      if (typeof raw.validatorsDir === 'string') dir = raw.validatorsDir;
    } catch {
      // loadConfigFile reports the unreadable file
    }
    return path.resolve(path.dirname(configPath), dir);
  }

  // Config validation checks clients' grant types against what is registered, and validators
  // register theirs: read their names first. Problems are reported by the full load in start.
  private async peekValidatorGrantTypes(configPath: string): Promise<string[]> {
    let dir = 'validators';
    try {
      const raw = JSON.parse(await readFile(configPath, 'utf8')) as { validatorsDir?: unknown };
      if (typeof raw.validatorsDir === 'string') dir = raw.validatorsDir;
    } catch {
      return []; // loadConfigFile reports the unreadable file
    }
    const folder = path.resolve(path.dirname(configPath), dir);
    const files = await listValidatorFiles(folder);
    return peekGrantTypes([...files.map((f) => pathToFileURL(f).href), ...this.validatorModules], folder);
  }
}

export function createTessera(config: string | LoadedConfig | Record<string, unknown>): TesseraBuilder {
  return new TesseraBuilder(config);
}

export { ConfigError };
