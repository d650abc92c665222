import { createRequire } from 'node:module';
import { pino, type Logger } from 'pino';

/** What the application logger is made from (`logLevel`, `logFormat` in docs/configuration.md). */
export interface LoggerSettings {
  readonly logLevel: string;
  readonly logFormat: 'auto' | 'json' | 'pretty';
}

/**
 * The gateway's pino logger: JSON lines for machines, or readable lines through `pino-pretty`
 * (in a transport thread, so formatting never runs on the HTTP thread) when `logFormat` is
 * `pretty`, or `auto` and stdout is a terminal. pino-pretty is an optional dependency: without
 * it the log stays JSON and says so once.
 */
export function createLogger(settings: LoggerSettings, bindings: Record<string, string> = {}): Logger {
  const pretty = settings.logFormat === 'pretty' || (settings.logFormat === 'auto' && process.stdout.isTTY === true);
  if (pretty && prettyAvailable()) {
    return pino({
      level: settings.logLevel,
      ...bindings,
      transport: { target: 'pino-pretty', options: { colorize: process.stdout.isTTY === true, translateTime: 'SYS:HH:MM:ss.l' } },
    });
  }
  const logger = pino({ level: settings.logLevel, ...bindings });
  if (pretty && settings.logFormat === 'pretty')
    logger.warn('logFormat "pretty" needs the pino-pretty package (npm install pino-pretty); logging JSON');
  return logger;
}

function prettyAvailable(): boolean {
  try {
    createRequire(import.meta.url).resolve('pino-pretty');
    return true;
  } catch {
    return false;
  }
}
