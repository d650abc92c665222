import { pino, type Logger } from 'pino';

/** What the application logger is made from (`logLevel`, `logFormat` in docs/configuration.md). */
export interface LoggerSettings {
  readonly logLevel: string;
  readonly logFormat: 'auto' | 'json' | 'pretty';
}

/**
 * The gateway's pino logger: JSON lines for machines, or readable lines through `pino-pretty`
 * (in a transport thread, so formatting never runs on the HTTP thread) when `logFormat` is
 * `pretty`, or `auto` and stdout is a terminal. Worker threads keep writing JSON lines: their
 * loggers are their own (docs/operations.md, "Logs").
 */
export function createLogger(settings: LoggerSettings, bindings: Record<string, string> = {}): Logger {
  const pretty = settings.logFormat === 'pretty' || (settings.logFormat === 'auto' && process.stdout.isTTY === true);
  if (pretty) {
    return pino({
      level: settings.logLevel,
      ...bindings,
      transport: { target: 'pino-pretty', options: { colorize: process.stdout.isTTY === true, translateTime: 'SYS:HH:MM:ss.l' } },
    });
  }
  return pino({ level: settings.logLevel, ...bindings });
}
