// The part of autocannon 9's programmatic API the bench uses (the package ships no types).
declare module 'autocannon' {
  export interface AutocannonRequest {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: string;
    /** Called before each request; returns the request to send (autocannon rebuilds it each time). */
    setupRequest?: (request: AutocannonRequest, context: Record<string, unknown>) => AutocannonRequest;
    onResponse?: (status: number, body: string, context: Record<string, unknown>, headers: Record<string, string>) => void;
  }
  interface AutocannonOptions {
    url: string;
    connections?: number;
    duration?: number;
    pipelining?: number;
    timeout?: number;
    requests?: AutocannonRequest[];
  }
  interface Percentiles {
    p50: number;
    p90: number;
    p99: number;
    max: number;
    mean: number;
  }
  interface AutocannonResult {
    latency: Percentiles;
    requests: Percentiles & { total: number };
    duration: number;
    errors: number;
    timeouts: number;
    non2xx: number;
    mismatches: number;
  }
  interface AutocannonInstance extends PromiseLike<AutocannonResult> {
    stop(): void;
  }
  function autocannon(options: AutocannonOptions): AutocannonInstance;
  export default autocannon;
}
