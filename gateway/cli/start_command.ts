/** `tessera start [--config FILE]`: load the config, start the gateway, serve until a signal. */
import { parseArgs } from 'node:util';
import type { Logger } from 'pino';
import { ConfigError } from '../config/config_error.js';
import type { LoadedConfig } from '../config/load.js';
import { createLogger } from '../logger.js';
import { createTessera } from '../service_builder.js';
import type { RunningGateway } from '../server.js';
import { describeError, ExitCode, type CliCommand, type CliIo } from './command.js';

const defaultConfigFile = 'config/demo.json';

// How long a finished graceful stop may wait for stray handles before the process exits anyway.
const exitGraceMs = 2000;

export const startCommand: CliCommand = {
  words: ['start'],
  summary: `Start the gateway (default config: ${defaultConfigFile})`,
  usage: 'tessera start [--config FILE]',
  details: [
    `-c, --config FILE   config file to serve (default: ${defaultConfigFile}, relative to the current folder)`,
    '',
    'Stops gracefully: on SIGTERM after shutdown.drainSeconds of /readyz answering 503 (requests still served),',
    'on SIGINT (Ctrl-C) at once; a second signal exits at once. SIGHUP reloads the config file, the TLS files and the signing keys',
    '(docs/operations.md, "Reload"): a config that does not validate is refused and the running one stays.',
  ],
  async run(args, io) {
    const { values } = parseArgs({
      args,
      options: { config: { type: 'string', short: 'c', default: defaultConfigFile } },
      strict: true,
      allowPositionals: false,
    });
    const builder = createTessera(values.config).withEnv(io.env);
    // A ConfigError here is reported by main with exit code 2.
    const config = await builder.loadConfig();
    const logger = createLogger(config, { name: 'tessera' });

    let gateway: RunningGateway;
    try {
      gateway = await builder.withLogger(logger).start();
    } catch (error) {
      // The gateway may find config problems only it can see (validator grant types): same exit 2.
      if (error instanceof ConfigError) throw error;
      logger.debug({ err: error }, 'start-up failed');
      io.stderr.write(`error: could not start the gateway: ${describeError(error)}\n`);
      return ExitCode.Failure;
    }
    // On stderr: stdout carries the JSON log (and audit events with events.sink "stdout"), which a
    // collector parses line by line; the banner is for the person at the terminal.
    io.stderr.write(formatBanner(config, gateway));
    return serveUntilSignal(gateway, config.shutdown.drainSeconds, logger, io);
  },
};

function serveUntilSignal(gateway: RunningGateway, drainSeconds: number, logger: Logger, io: CliIo): Promise<number> {
  return new Promise((resolveExit) => {
    let stopping = false;
    const onSignal = (signal: NodeJS.Signals): void => {
      if (stopping) {
        // The operator insists: do not wait for in-flight requests any longer.
        process.exit(128 + (signal === 'SIGINT' ? 2 : 15));
      }
      stopping = true;
      // SIGTERM is how orchestrators stop a service behind a load balancer: fail readiness first
      // and keep serving until it has stopped sending. Ctrl-C is a person, who wants it gone now.
      const drain = signal === 'SIGTERM' ? drainSeconds : 0;
      logger.info({ signal, drainSeconds: drain }, 'stopping: finishing in-flight requests');
      gateway.stop({ drainSeconds: drain }).then(
        () => {
          logger.info('stopped');
          setTimeout(() => process.exit(ExitCode.Ok), exitGraceMs).unref();
          resolveExit(ExitCode.Ok);
        },
        (error: unknown) => {
          io.stderr.write(`error: the gateway did not stop cleanly: ${describeError(error)}\n`);
          setTimeout(() => process.exit(ExitCode.Failure), exitGraceMs).unref();
          resolveExit(ExitCode.Failure);
        },
      );
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    // Node's default for SIGHUP ends the process; here it reloads, and never stops anything.
    let reloading: Promise<void> = Promise.resolve();
    process.on('SIGHUP', () => {
      if (stopping) return;
      reloading = reloading.then(() => reloadOnHangup(gateway, logger));
    });
  });
}

/**
 * Everything SIGHUP reloads, in one place (docs/operations.md, "Reload"). Each step logs its own
 * outcome; a refused step leaves what runs as it was.
 */
async function reloadOnHangup(gateway: RunningGateway, logger: Logger): Promise<void> {
  logger.info({ signal: 'SIGHUP' }, 'SIGHUP: reloading the config');
  try {
    // The config file, and with it the TLS certificate and key.
    await gateway.reload();
    // Then the signing keys: the key files the config now lists, read again, or the store polled
    // now (docs/operations.md, "Signing keys and rotation"). Each logs its own failure.
    await gateway.reloadKeys(gateway.config);
  } catch (error) {
    logger.error({ err: error }, 'reload failed; the running config stays in service');
  }
}

/**
 * What `tessera start` prints once the gateway listens: where it is, its endpoints and, for demo
 * configs, the credentials to try it with.
 */
export function formatBanner(config: LoadedConfig, gateway: Pick<RunningGateway, 'url'> & { managementUrl?: string | undefined }): string {
  // Endpoints are published under the issuer (that is what discovery advertises), which may be a
  // proxy in front of the listening address.
  const endpoints: [string, string][] = [
    ['token', '/connect/token'],
    ['authorize', '/connect/authorize'],
    ['device', '/connect/deviceauthorization'],
    ['device page', '/device'],
    ['introspect', '/connect/introspect'],
    ['revocation', '/connect/revocation'],
    ['discovery', '/.well-known/openid-configuration'],
    ['jwks', '/.well-known/openid-configuration/jwks'],
    ['healthz', '/healthz'],
    ['readyz', '/readyz'],
  ];
  const lines = ['Tessera is running.', `  issuer     ${config.issuer}`, `  listening  ${gateway.url}`];
  if (config.configPath !== undefined) lines.push(`  config     ${config.configPath}`);
  if (config.envOverrides.length > 0) lines.push(`  overrides  ${config.envOverrides.join(', ')}`);
  if (config.signing.keys.length === 0) lines.push('  signing    development key (do not use in production)');
  lines.push('', 'Endpoints:', ...endpoints.map(([name, path]) => `  ${name.padEnd(11)} ${config.issuer}${path}`));
  // Metrics are on the management listener unless kept on the public port behind a token.
  const metricsUrl = gateway.managementUrl === undefined ? `${config.issuer}/metrics (bearer token)` : `${gateway.managementUrl}/metrics`;
  lines.push(`  ${'metrics'.padEnd(11)} ${metricsUrl}`);

  const credentials = config.demoCredentials ?? [];
  if (credentials.length > 0) {
    const idWidth = Math.max(...credentials.map((credential) => credential.id.length));
    const secretWidth = Math.max(...credentials.map((credential) => displaySecret(credential.secret).length));
    lines.push('', 'Demo credentials (public by design: for trying Tessera out, never for production):');
    for (const credential of credentials) {
      const note = credential.note === undefined ? '' : `  ${credential.note}`;
      lines.push(
        `  ${credential.kind.padEnd(12)} ${credential.id.padEnd(idWidth)}  ${displaySecret(credential.secret).padEnd(secretWidth)}${note}`.trimEnd(),
      );
    }
  }
  lines.push('', 'Press Ctrl-C to stop.');
  return `${lines.join('\n')}\n`;
}

function displaySecret(secret: string): string {
  return secret === '' ? '(none)' : secret;
}
