import type { Exchange } from './exchange.js';

/** Token-endpoint bodies are at most 64 KiB (docs/operations.md, "Limits"). */
export const maxBodyBytes = 64 * 1024;

/** Where {@link readBody} hands the body, or says it was too large. */
export interface BodyReceiver {
  /** The whole body; valid only during this synchronous call when it arrived in one chunk. */
  onBody(body: Uint8Array): void;
  onTooLarge(): void;
}

/**
 * Collects a request body from uWS `onData`. uWS reuses each chunk's memory after the callback
 * returns, so non-final chunks are copied; a body that arrives in one chunk (the common case) is
 * handed over without a copy and `onBody` must not keep a reference past its synchronous run.
 *
 * `onTooLarge` runs once when the declared or received size passes `limit`; no more data is
 * delivered after it, nor after the client aborts.
 */
export function readBody(exchange: Exchange, limit: number, receiver: BodyReceiver): void {
  let chunks: Buffer[] | undefined;
  let total = 0;
  let finished = false;
  exchange.res.onData(function receiveBodyChunk(chunk, isLast) {
    if (finished || !exchange.open) return;
    total += chunk.byteLength;
    if (total > limit) {
      finished = true;
      receiver.onTooLarge();
      return;
    }
    if (isLast) {
      finished = true;
      if (chunks === undefined) {
        receiver.onBody(new Uint8Array(chunk));
      } else {
        chunks.push(Buffer.from(new Uint8Array(chunk)));
        receiver.onBody(Buffer.concat(chunks, total));
      }
      return;
    }
    (chunks ??= []).push(Buffer.from(new Uint8Array(chunk)));
  });
}
