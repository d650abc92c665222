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
