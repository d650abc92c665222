/**
 * `tessera start --processes N` (docs/operations.md, "Several processes"): this process serves
 * nothing itself; it forks N copies of `tessera start`, each a whole gateway (uWS thread, worker
 * pool, management listener) listening on the same port with SO_REUSEPORT, so the kernel spreads
 * new connections over them. It forwards the stop and reload signals, restarts a child that dies
 * on its own (with a growing pause), and exits once every child has stopped after a stop signal.
 */
import { fork, type ChildProcess } from 'node:child_process';
import type { Logger } from 'pino';
import { ExitCode } from './command.js';

/** The variables a supervised child finds its slot in (set by the supervisor only). */
export const processIndexVariable = 'TESSERA_PROCESS_INDEX';
export const processCountVariable = 'TESSERA_PROCESSES';

/** What a child tells the supervisor over its IPC channel once it listens. */
export interface ListeningMessage {
  readonly type: 'tessera:listening';
  readonly index: number;
  readonly pid: number;
  readonly url: string;
  readonly managementUrl: string | undefined;
}

export function isListeningMessage(message: unknown): message is ListeningMessage {
  return typeof message === 'object' && message !== null && (message as { type?: unknown }).type === 'tessera:listening';
}

export interface SupervisorOptions {
  readonly processes: number;
  /** The script each child runs (the CLI's entry point) and its arguments (`start --config FILE`). */
  readonly script: string;
  readonly args: readonly string[];
  readonly env: NodeJS.ProcessEnv;
  readonly logger: Logger;
  /** Called once, when every child listens for the first time. */
  readonly onListening: (children: readonly ListeningMessage[]) => void;
  /** Restart pauses: the first one, doubled after each quick death up to the last. */
  readonly restartDelayMs?: { readonly first: number; readonly max: number };
}

// A child that lived this long before dying is not crash-looping: its next restart is quick again.
const stableAfterMs = 30_000;

interface Slot {
  readonly index: number;
  child: ChildProcess | undefined;
  listening: ListeningMessage | undefined;
  startedAt: number;
  /** Deaths in a row, each within `stableAfterMs` of its start. */
  quickDeaths: number;
  restartTimer: NodeJS.Timeout | undefined;
}

/**
 * Runs the children until a stop signal has stopped them all, and resolves the exit code: 0 when
 * every child stopped cleanly; a child's own code when one failed to start the first time (2 for
 * a config it refused), after stopping the others.
 */
export function superviseProcesses(options: SupervisorOptions): Promise<number> {
  const { logger, processes } = options;
  const delays = options.restartDelayMs ?? { first: 200, max: 30_000 };
  const slots: Slot[] = Array.from({ length: processes }, (_, index) => ({
    index,
    child: undefined,
    listening: undefined,
    startedAt: 0,
    quickDeaths: 0,
    restartTimer: undefined,
  }));
  let allListening = false;
  let stopping = false;
  let exitCode: number = ExitCode.Ok;

  return new Promise((resolveExit) => {
    const finishIfAllStopped = (): void => {
      if (!stopping || slots.some((slot) => slot.child !== undefined)) return;
      process.off('SIGINT', onStopSignal);
      process.off('SIGTERM', onStopSignal);
      process.off('SIGHUP', onHangup);
      logger.info({ exitCode }, 'all processes stopped');
      resolveExit(exitCode);
    };

    const forward = (signal: NodeJS.Signals): void => {
      for (const slot of slots) {
        if (slot.child?.pid !== undefined && slot.child.exitCode === null) slot.child.kill(signal);
      }
    };

    const stopAll = (signal: NodeJS.Signals): void => {
      stopping = true;
      for (const slot of slots) {
        clearTimeout(slot.restartTimer);
        slot.restartTimer = undefined;
      }
      forward(signal);
      finishIfAllStopped();
    };

    // A second stop signal is forwarded too: each child then exits at once, as a lone one would.
    const onStopSignal = (signal: NodeJS.Signals): void => {
      logger.info(
        { signal, processes },
        stopping ? 'stopping: forwarding the signal again' : 'stopping: forwarding the signal to every process',
      );
      stopAll(signal);
    };
    const onHangup = (): void => {
      if (stopping) return;
      logger.info({ signal: 'SIGHUP', processes }, 'reload: forwarding SIGHUP to every process');
      forward('SIGHUP');
    };

    const start = (slot: Slot): void => {
      slot.restartTimer = undefined;
      slot.listening = undefined;
      slot.startedAt = Date.now();
      const child = fork(options.script, [...options.args], {
        env: { ...options.env, [processIndexVariable]: String(slot.index), [processCountVariable]: String(processes) },
        execArgv: process.execArgv,
        // Its own process group: Ctrl-C at a terminal reaches the supervisor alone, which forwards
        // it once (a child seeing it twice would take it as "stop at once").
        detached: true,
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      slot.child = child;
      logger.info({ process: slot.index, childPid: child.pid }, 'process started');
      child.on('message', (message: unknown) => {
        if (!isListeningMessage(message) || slot.child !== child) return;
        slot.listening = message;
        if (slot.quickDeaths > 0) logger.info({ process: slot.index, childPid: message.pid }, 'process restarted and listening');
        if (!allListening && slots.every((s) => s.listening !== undefined)) {
          allListening = true;
          options.onListening(slots.map((s) => s.listening as ListeningMessage));
        }
      });
      // A fork that cannot spawn, or a message that cannot be sent: logged, never thrown into the supervisor.
      child.on('error', (err) => logger.error({ process: slot.index, err }, 'process error'));
      child.on('exit', (code, signal) => onExit(slot, child, code, signal));
    };

    const onExit = (slot: Slot, child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void => {
      if (slot.child !== child) return;
      slot.child = undefined;
      const wasListening = slot.listening !== undefined;
      slot.listening = undefined;
      if (stopping) {
        if (code !== 0 && exitCode === ExitCode.Ok) exitCode = code ?? ExitCode.Failure;
        finishIfAllStopped();
        return;
      }
      if (!allListening && !wasListening) {
        // The first start failed (a taken port, a config only the gateway can refuse): the child
        // said why on stderr. Start-up is all or nothing, as with one process.
        logger.error({ process: slot.index, code, signal }, 'a process failed to start: stopping the others');
        exitCode = code === null || code === 0 ? ExitCode.Failure : code;
        stopAll('SIGINT');
        return;
      }
      slot.quickDeaths = Date.now() - slot.startedAt >= stableAfterMs ? 1 : slot.quickDeaths + 1;
      const delayMs = Math.min(delays.max, delays.first * 2 ** (slot.quickDeaths - 1));
      logger.warn(
        { process: slot.index, childPid: child.pid, code, signal, restartInMs: delayMs, deathsInARow: slot.quickDeaths },
        'a process exited unexpectedly: restarting it',
      );
      slot.restartTimer = setTimeout(() => start(slot), delayMs);
    };

    process.on('SIGINT', onStopSignal);
    process.on('SIGTERM', onStopSignal);
    process.on('SIGHUP', onHangup);
    for (const slot of slots) start(slot);
  });
}
