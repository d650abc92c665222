import { connect, type Socket } from 'node:net';

/** What a burst of connections got: answers by status, and what went wrong. */
export interface BurstOutcome {
  readonly sent: number;
  /** Answers by HTTP status. */
  readonly statuses: Readonly<Record<number, number>>;
  /** Connections with no complete answer by the deadline (or closed without one). */
  readonly unanswered: number;
  /** 503s without a `Retry-After` header. */
  readonly unavailableWithoutRetryAfter: number;
  /** Connections that got more than one answer to their one request. */
  readonly answeredTwice: number;
  /** Milliseconds from the burst's start to its last answer. */
  readonly lastAnswerMs: number;
  /** The bodies of the 200 answers, in connection order (undefined where none). */
  readonly bodies: readonly (string | undefined)[];
  /** Each connection's first answer, in connection order (undefined where none). */
  readonly answers: readonly (BurstAnswer | undefined)[];
}

/** One connection's answer: its status, body and headers, and when it came. */
export interface BurstAnswer {
  readonly status: number;
  /** Milliseconds from the burst's start. */
  readonly ms: number;
  readonly body: string;
  readonly retryAfter: string | undefined;
  /** The `Location` header (a page's redirect). */
  readonly location: string | undefined;
  /** Every header, by lower-case name (the last of a repeated one). */
  readonly headers: ReadonlyMap<string, string>;
}

/**
 * Opens one connection per request, all at once, and sends each request in one write as soon as
 * its connection is up (as a flood of clients does; not held back like release_at_once.ts). Every
 * connection is read until its answer is complete and a little longer, to see a second answer;
 * none is waited for beyond `deadlineMs` from the start.
 */
export async function burst(port: number, requests: readonly Buffer[], deadlineMs = 30_000): Promise<BurstOutcome> {
  const started = performance.now();
  const statuses: Record<number, number> = {};
  let unanswered = 0;
  let unavailableWithoutRetryAfter = 0;
  let answeredTwice = 0;
  let lastAnswerMs = 0;
  const bodies: (string | undefined)[] = new Array(requests.length).fill(undefined);
  const firstAnswers: (BurstAnswer | undefined)[] = new Array(requests.length).fill(undefined);
  await Promise.all(
    requests.map(
      (request, i) =>
        new Promise<void>((resolve) => {
          const socket: Socket = connect(port, '127.0.0.1');
          let received = Buffer.alloc(0);
          let answers = 0;
          let settled = false;
          const finish = (): void => {
            if (settled) return;
            settled = true;
            clearTimeout(deadline);
            socket.destroy();
            if (answers === 0) unanswered++;
            resolve();
          };
          const deadline = setTimeout(finish, Math.max(0, deadlineMs - (performance.now() - started)));
          socket.on('connect', () => socket.write(request));
          socket.on('data', (chunk: Buffer) => {
            received = Buffer.concat([received, chunk]);
            for (;;) {
              const answer = takeAnswer(received);
              if (answer === undefined) break;
              received = received.subarray(answer.length);
              answers++;
              if (answers > 1) {
                answeredTwice++;
                continue;
              }
              lastAnswerMs = Math.max(lastAnswerMs, performance.now() - started);
              statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
              if (answer.status === 503 && answer.retryAfter === undefined) unavailableWithoutRetryAfter++;
              if (answer.status === 200) bodies[i] = answer.body;
              firstAnswers[i] = {
                status: answer.status,
                ms: performance.now() - started,
                body: answer.body,
                retryAfter: answer.retryAfter,
                location: answer.location,
                headers: answer.headers,
              };
              // A second answer on the same connection would come right behind the first.
              setTimeout(finish, 20);
            }
          });
          socket.on('error', finish);
          socket.on('close', finish);
        }),
    ),
  );
  return {
    sent: requests.length,
    statuses,
    unanswered,
    unavailableWithoutRetryAfter,
    answeredTwice,
    lastAnswerMs,
    bodies,
    answers: firstAnswers,
  };
}

/** One complete HTTP/1.1 answer at the start of `bytes`, if it has arrived. */
function takeAnswer(bytes: Buffer):
  | {
      status: number;
      retryAfter: string | undefined;
      location: string | undefined;
      headers: ReadonlyMap<string, string>;
      body: string;
      length: number;
    }
  | undefined {
  const end = bytes.indexOf('\r\n\r\n');
  if (end === -1) return undefined;
  const [statusLine, ...lines] = bytes.subarray(0, end).toString('latin1').split('\r\n');
  const headers = new Map(
    lines.map((line) => [line.slice(0, line.indexOf(':')).trim().toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
  );
  const length = Number(headers.get('content-length') ?? 0);
  if (bytes.length < end + 4 + length) return undefined;
  return {
    status: Number(statusLine?.split(' ')[1]),
    retryAfter: headers.get('retry-after'),
    location: headers.get('location'),
    headers,
    body: bytes.subarray(end + 4, end + 4 + length).toString('utf8'),
    length: end + 4 + length,
  };
}

/** A gauge's value as the gateway's `/metrics` shows it now (the unlabelled series). */
export async function readGauge(metricsUrl: string, name: string): Promise<number> {
  const text = await (await fetch(metricsUrl)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  if (line === undefined) throw new Error(`${name} not in ${metricsUrl}`);
  return Number(line.slice(name.length + 1));
}
