/** Reads the gateway's worker batch histogram from its Prometheus endpoint (gateway/observability/metrics.ts). */

export interface BatchCounter {
  /** Requests sent to the worker pool. */
  sum: number;
  /** Tasks (batches) sent. */
  count: number;
}

function metric(text: string, name: string): number | null {
  const match = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text);
  if (match?.[1] === undefined) return null;
  const value = Number(match[1]);
  return Number.isFinite(value) ? value : null;
}

/** `tessera_worker_batch_size` sum and count from the gateway's `/metrics` URL, or null when it does not answer them. */
export async function readBatchCounter(metricsUrl: string): Promise<BatchCounter | null> {
  try {
    const response = await fetch(metricsUrl, { signal: AbortSignal.timeout(5000) });
    if (response.status !== 200) return null;
    const text = await response.text();
    const sum = metric(text, 'tessera_worker_batch_size_sum');
    const count = metric(text, 'tessera_worker_batch_size_count');
    return sum === null || count === null ? null : { sum, count };
  } catch {
    return null;
  }
}

/** Mean batch size between two readings. */
export function meanBatch(before: BatchCounter | null, after: BatchCounter | null): number | null {
  if (before === null || after === null || after.count <= before.count) return null;
  return (after.sum - before.sum) / (after.count - before.count);
}

/** A gauge's value (its unlabelled series) from the gateway's `/metrics` URL, or null when it is not there. */
export async function readGauge(metricsUrl: string, name: string): Promise<number | null> {
  try {
    const response = await fetch(metricsUrl, { signal: AbortSignal.timeout(5000) });
    if (response.status !== 200) return null;
    const match = new RegExp(`^${name} (\\S+)$`, 'm').exec(await response.text());
    const value = match?.[1] === undefined ? Number.NaN : Number(match[1]);
    return Number.isFinite(value) ? value : null;
  } catch {
    return null;
  }
}
