/**
 * `tessera start [--config FILE] [--processes N]`: load the config, start the gateway, serve until
 * a signal; with several processes, supervise that many gateways on one port (./supervisor.ts).
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Logger } from 'pino';
import { ConfigError } from '../config/config_error.js';
import { checkProcesses } from '../config/cross_references.js';
import type { LoadedConfig } from '../config/load.js';
import { createLogger } from '../observability/logger.js';
import { createTessera } from '../start/service_builder.js';
import type { ProcessSlot, RunningGateway } from '../start/server.js';
import { describeSigning } from './check_config_command.js';
import { describeError, ExitCode, UsageError, type CliCommand, type CliIo } from './command.js';
import { processCountVariable, processIndexVariable, superviseProcesses, type ListeningMessage } from './supervisor.js';
import { endpointPaths } from '../endpoints/endpoint_paths.js';

const defaultConfigFile = 'config/demo.json';

// How long a finished graceful stop may wait for stray handles before the process exits anyway.
const exitGraceMs = 2000;

export const startCommand: CliCommand = {
  words: ['start'],
  summary: `Start the gateway (default config: ${defaultConfigFile})`,
  usage: 'tessera start [--config FILE] [--processes N]',
  details: [
    `-c, --config FILE   config file to serve (default: ${defaultConfigFile}, relative to the current folder)`,
    '-p, --processes N   front-end processes sharing the port, each with its own worker threads (default: the',
    '                    config\'s "processes", 1); above 1 needs the Redis store. Process i serves /metrics on',
    '                    management.port + i. A process that dies is restarted (docs/operations.md, "Several processes").',
    '',
    'Stops gracefully: on SIGTERM after shutdown.drainSeconds of /readyz answering 503 (requests still served),',
    'on SIGINT (Ctrl-C) at once; a second signal exits at once. SIGHUP reloads the config file, the TLS files and the signing keys',
    '(docs/operations.md, "Reload"): a config that does not validate is refused and the running one stays.',
  ],
  async run(args, io) {
    const { values } = parseArgs({
      args,
      options: { config: { type: 'string', short: 'c', default: defaultConfigFile }, processes: { type: 'string', short: 'p' } },
      strict: true,
      allowPositionals: false,
    });
    const builder = createTessera(values.config).withEnv(io.env);
    // A ConfigError here is reported by main with exit code 2.
    const config = await builder.loadConfig();
    const slot = supervisedSlot(io.env);
    const processes = slot?.count ?? parseProcesses(values.processes) ?? config.processes;
    const problems = checkProcesses(config, processes);
    if (problems.length > 0) throw new ConfigError(problems, { source: values.config });
    if (slot === undefined && processes > 1) return supervise(values.config, processes, config, io);

    const baseLogger = createLogger(config, { name: 'tessera' });
    const logger = slot === undefined ? baseLogger : baseLogger.child({ process: slot.index });

    let gateway: RunningGateway;
    try {
      if (slot !== undefined) builder.asProcess(slot);
      gateway = await builder.withLogger(logger).start();
    } catch (error) {
      // The gateway may find config problems only it can see (validator grant types): same exit 2.
      if (error instanceof ConfigError) throw error;
      logger.debug({ err: error }, 'start-up failed');
      io.stderr.write(`error: could not start the gateway: ${describeError(error)}\n`);
      return ExitCode.Failure;
    }
    if (slot !== undefined) {
      // The supervisor prints one banner for all; it learns each process's addresses from here.
      const message: ListeningMessage = {
        type: 'tessera:listening',
        index: slot.index,
        pid: process.pid,
        url: gateway.url,
        managementUrl: gateway.managementUrl,
      };
      process.send?.(message);
    } else {
      // On stderr: stdout carries the JSON log (and audit events with events.sink "stdout"), which a
      // collector parses line by line; the banner is for the person at the terminal.
      io.stderr.write(formatBanner(config, gateway));
    }
    return serveUntilSignal(gateway, config.shutdown.drainSeconds, logger, io);
  },
};

/** The slot a supervised child was started in (./supervisor.ts); `undefined` for `tessera start` itself. */
function supervisedSlot(env: NodeJS.ProcessEnv): ProcessSlot | undefined {
  const index = env[processIndexVariable];
  const count = env[processCountVariable];
  // Only a child the supervisor forked has the IPC channel: the variables alone, set by hand, do nothing.
  if (index === undefined || count === undefined || process.send === undefined) return undefined;
  return { index: Number(index), count: Number(count) };
}

function parseProcesses(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const count = Number(value);
  if (!/^\d+$/.test(value) || count < 1 || count > 64)
    throw new UsageError(`--processes must be a whole number from 1 to 64, not "${value}"`);
  return count;
}

async function supervise(configFile: string, processes: number, config: LoadedConfig, io: CliIo): Promise<number> {
  const logger = createLogger(config, { name: 'tessera' }).child({ supervisor: true });
  const script = process.argv[1];
  if (script === undefined) throw new Error('cannot tell which script to fork');
  return superviseProcesses({
    processes,
    script,
    // Absolute: the children may resolve it after the supervisor's folder has been renamed.
    args: ['start', '--config', path.resolve(configFile)],
    env: io.env,
    logger,
    onListening: (children) => {
      const first = children[0];
      if (first === undefined) return;
      logger.info({ url: first.url, processes, pids: children.map((child) => child.pid) }, 'tessera listening');
      io.stderr.write(formatBanner(config, { url: first.url, managementUrl: first.managementUrl, processes: children }));
    },
  });
}

function serveUntilSignal(gateway: RunningGateway, drainSeconds: number, logger: Logger, io: CliIo): Promise<number> {
  return new Promise((resolveExit) => {
    let stopping = false;
    // A supervised child: its IPC channel must not keep it alive once the gateway has stopped, and
    // its closing means the supervisor is gone (killed): nobody would stop or restart this process.
    if (process.channel !== undefined && process.channel !== null) {
      process.channel.unref();
      process.once('disconnect', () => {
        if (stopping) return;
        logger.warn('the supervisor is gone: stopping');
        onSignal('SIGINT');
      });
    }
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
export function formatBanner(
  config: LoadedConfig,
  gateway: Pick<RunningGateway, 'url'> & { managementUrl?: string | undefined; processes?: readonly ListeningMessage[] },
): string {
  // Endpoints are published under the issuer (that is what discovery advertises), which may be a
  // proxy in front of the listening address.
  const endpoints: [string, string][] = [
    ['token', endpointPaths.token],
    ['authorize', endpointPaths.authorize],
    ['device', endpointPaths.deviceAuthorization],
    ['device page', endpointPaths.devicePage],
    ['introspect', endpointPaths.introspection],
    ['revocation', endpointPaths.revocation],
    ['userinfo', endpointPaths.userinfo],
    ['end session', endpointPaths.endSession],
    ['discovery', endpointPaths.discovery],
    ['jwks', endpointPaths.jwks],
    ['healthz', endpointPaths.healthz],
    ['readyz', endpointPaths.readyz],
  ];
  const lines = ['Tessera is running.', `  issuer     ${config.issuer}`, `  listening  ${gateway.url}`];
  const processes = gateway.processes ?? [];
  if (processes.length > 1) lines.push(`  processes  ${processes.length} (pids ${processes.map((p) => p.pid).join(', ')}), one port`);
  if (config.configPath !== undefined) lines.push(`  config     ${config.configPath}`);
  if (config.envOverrides.length > 0) lines.push(`  overrides  ${config.envOverrides.join(', ')}`);
  // Only the memory store's key is a development key: store-kept keys on Redis are production keys.
  lines.push(`  signing    ${describeSigning(config)}`);
  lines.push('', 'Endpoints:', ...endpoints.map(([name, path]) => `  ${name.padEnd(11)} ${config.issuer}${path}`));
  // Metrics are on the management listener unless kept on the public port behind a token.
  const metricsUrl = gateway.managementUrl === undefined ? `${config.issuer}/metrics (bearer token)` : `${gateway.managementUrl}/metrics`;
  if (processes.length > 1 && gateway.managementUrl !== undefined) {
    // One management listener per process: each /metrics counts its own process only.
    for (const child of processes) lines.push(`  ${'metrics'.padEnd(11)} ${child.managementUrl ?? ''}/metrics (process ${child.index})`);
  } else lines.push(`  ${'metrics'.padEnd(11)} ${metricsUrl}`);

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
