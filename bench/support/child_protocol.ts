/**
 * The small IPC contract between the bench runner and the server processes it starts
 * (`gateway_process.ts`, `ceiling_process.ts`, `peers/oidc_provider_process.ts`).
 */

/** Child → runner, once, when the server accepts connections. */
export interface ReadyMessage {
  type: 'ready';
  url: string;
  /** Free-form facts worth recording (versions, grant types). */
  detail: Record<string, unknown>;
}

/** Runner → child: stop gracefully and exit. */
export interface StopMessage {
  type: 'stop';
}

/** Runner → child: a request (e.g. seeding) that the child answers with a {@link ReplyMessage}. */
export interface AskMessage {
  type: 'ask';
  id: number;
  request: unknown;
}

/** Child → runner: the answer to the {@link AskMessage} with the same id. */
export interface ReplyMessage {
  type: 'reply';
  id: number;
  ok: boolean;
  value?: unknown;
  error?: string;
}

export function isReplyMessage(message: unknown): message is ReplyMessage {
  return typeof message === 'object' && message !== null && (message as { type?: unknown }).type === 'reply';
}

/** Answers the runner's requests with `handler` (a child that takes requests calls this once). */
export function answerRequests(handler: (request: unknown) => Promise<unknown>): void {
  process.on('message', (message: unknown) => {
    if (typeof message !== 'object' || message === null || (message as { type?: unknown }).type !== 'ask') return;
    const { id, request } = message as AskMessage;
    handler(request).then(
      (value) => process.send?.({ type: 'reply', id, ok: true, value } satisfies ReplyMessage),
      (err: unknown) =>
        process.send?.({
          type: 'reply',
          id,
          ok: false,
          error: err instanceof Error ? (err.stack ?? err.message) : String(err),
        } satisfies ReplyMessage),
    );
  });
}

export function isReadyMessage(message: unknown): message is ReadyMessage {
  return typeof message === 'object' && message !== null && (message as { type?: unknown }).type === 'ready';
}

/** Tells the runner this server is up. Outside the runner (no IPC channel) it prints the URL. */
export function announceReady(url: string, detail: Record<string, unknown> = {}): void {
  const message: ReadyMessage = { type: 'ready', url, detail };
  if (process.send !== undefined) process.send(message);
  else console.log(`listening on ${url}`);
}

/**
 * Stops the server when the runner asks, when the runner goes away (IPC disconnect) or on
 * SIGTERM/SIGINT, then exits: a process that exits normally also writes its `--cpu-prof`.
 */
export function stopOnRequest(stop: () => Promise<void>): void {
  let stopping = false;
  const stopAndExit = (): void => {
    if (stopping) return;
    stopping = true;
    const force = setTimeout(() => process.exit(1), 10_000);
    force.unref();
    stop().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error(err);
        process.exit(1);
      },
    );
  };
  process.on('message', (message: unknown) => {
    if (typeof message === 'object' && message !== null && (message as { type?: unknown }).type === 'stop') stopAndExit();
  });
  process.on('disconnect', stopAndExit);
  process.on('SIGTERM', stopAndExit);
  process.on('SIGINT', stopAndExit);
}
