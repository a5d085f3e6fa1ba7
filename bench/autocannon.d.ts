/** The part of autocannon's programmatic API the bench uses (the package ships no types). */
declare module 'autocannon' {
  namespace autocannon {
    interface RequestData {
      method: string;
      path: string;
      headers: Record<string, string>;
      body?: string | Buffer;
      [key: string]: unknown;
    }

    interface RequestSpec {
      method?: string;
      path?: string;
      headers?: Record<string, string>;
      body?: string | Buffer;
      setupRequest?: (req: RequestData, context: Record<string, unknown>) => RequestData | null | undefined;
      onResponse?: (status: number, body: string, context: Record<string, unknown>) => void;
    }

    interface Options {
      /** Several: the connections are spread over them. */
      url: string | string[];
      connections?: number;
      duration?: number;
      pipelining?: number;
      timeout?: number;
      method?: string;
      headers?: Record<string, string>;
      body?: string | Buffer;
      requests?: RequestSpec[];
      title?: string;
      /** A first, unrecorded run with these settings. */
      warmup?: { connections?: number; duration?: number };
    }

    interface Histogram {
      average: number;
      mean: number;
      stddev: number;
      min: number;
      max: number;
      total: number;
      p50: number;
      p90: number;
      p97_5: number;
      p99: number;
      [key: string]: number;
    }

    interface Result {
      title?: string;
      url: string;
      requests: Histogram;
      latency: Histogram;
      throughput: Histogram;
      duration: number;
      errors: number;
      timeouts: number;
      mismatches: number;
      non2xx: number;
      resets: number;
      statusCodeStats: Record<string, { count: number }>;
      '1xx': number;
      '2xx': number;
      '3xx': number;
      '4xx': number;
      '5xx': number;
    }

    interface Instance extends PromiseLike<Result> {
      stop(): void;
      on(event: string, listener: (...args: unknown[]) => void): this;
    }
  }

  function autocannon(opts: autocannon.Options): autocannon.Instance;
  export = autocannon;
}
