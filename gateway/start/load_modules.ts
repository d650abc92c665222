import { pathToFileURL } from 'node:url';
import { isGrantModuleExport } from '../../core/grant_module.js';
import { builtInGrantTypes } from '../../core/grant_types.js';
import type { StartOptions } from './start_options.js';
import { loadValidatorModules, type ValidatorModule } from '../validators/validator_loader.js';
import type { ValidatorSources } from '../validators/validator_reload.js';

/** The embedding code's grant modules and the grant types no validator may take. */
export interface GrantModules {
  /** Module URLs every worker loads beside the built-in grants. */
  readonly urls: readonly string[];
  /** Their grant types, served beside the validators'. */
  readonly internalGrantTypes: readonly string[];
  /** The built-ins and the grant modules'. */
  readonly reservedGrantTypes: readonly string[];
}

/** Imports the embedding code's grant modules, each checked to be a grant handler. */
export async function loadGrantModules(options: StartOptions): Promise<GrantModules> {
  const urls = (options.grantModules ?? []).map(toModuleUrl);
  const internalGrantTypes = await grantTypesOfModules(urls);
  const reservedGrantTypes = [...new Set([...builtInGrantTypes, ...internalGrantTypes])];
  return { urls, internalGrantTypes, reservedGrantTypes };
}

/** The validator modules and where they came from, checked once before any worker loads them. */
export interface LoadedValidators {
  readonly sources: ValidatorSources;
  readonly modules: readonly ValidatorModule[];
}

/** Validators are checked here once (exit 2 on a bad module) before every worker loads them. */
export async function loadValidators(options: StartOptions, grants: GrantModules): Promise<LoadedValidators> {
  const sources = { dir: options.config.validatorsDir, modules: (options.validatorModules ?? []).map(toModuleUrl) };
  const modules = await loadValidatorModules(sources, grants.reservedGrantTypes);
  return { sources, modules };
}

/** The grant types of the embedding code's grant modules, each checked to be a grant handler. */
async function grantTypesOfModules(urls: readonly string[]): Promise<string[]> {
  const grantTypes: string[] = [];
  for (const url of urls) {
    const module = (await import(url)) as { default?: unknown };
    if (!isGrantModuleExport(module.default)) throw new Error(`${url}: default export is not a grant handler`);
    grantTypes.push(module.default.grantType);
  }
  return grantTypes;
}

function toModuleUrl(specifier: string): string {
  return specifier.startsWith('file:') ? specifier : pathToFileURL(specifier).href;
}
