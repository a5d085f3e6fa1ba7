/**
 * What a realtime connection runs on: a WebSocket (the browser's, Node 22's, or the `ws` fallback
 * the Node entry installs), timers, the reconnect backoff, and the default realtime address.
 */
import { RealtimeError } from '../errors.ts';

/** The part of the WHATWG WebSocket this module uses (the browser's, Node 22's, or `ws`). */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onclose: ((event: { code: number; reason: string }) => void) | null;
  onerror: ((event: unknown) => void) | null;
}

export type WebSocketConstructor = new (url: string) => WebSocketLike;

let fallbackWebSocket: (() => Promise<WebSocketConstructor>) | undefined;

/** Installed by the Node entry: where to get a WebSocket when the runtime has no global one. */
export function installWebSocketFallback(load: () => Promise<WebSocketConstructor>): void {
  fallbackWebSocket = load;
}

/** The WebSocket class to use: the given one, else the global one, else the installed fallback. */
export async function resolveWebSocket(
  given: WebSocketConstructor | undefined,
): Promise<WebSocketConstructor> {
  if (given) return given;
  const global = (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  if (typeof global === 'function') return global;
  if (fallbackWebSocket) return fallbackWebSocket();
  throw new RealtimeError(
    'No WebSocket implementation: this runtime has no global WebSocket. Pass one as the WebSocket option.',
  );
}

export interface Timers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const realTimers: Timers = {
  setTimeout: (fn, ms) => globalThis.setTimeout(fn, ms),
  clearTimeout: (handle) => globalThis.clearTimeout(handle as ReturnType<typeof setTimeout>),
};

export interface BackoffOptions {
  /** Delay before the first reconnect attempt (before jitter). */
  initialMs: number;
  /** Upper bound of a delay. */
  maxMs: number;
  /** Growth per failed attempt. */
  factor: number;
  /** Share of a delay taken off at random (0: none; 0.5: between half and all of it). */
  jitter: number;
  /** Attempts in a row after which the connection gives up (closes with an error). */
  maxAttempts: number;
}

export const DEFAULT_BACKOFF: Readonly<BackoffOptions> = {
  initialMs: 500,
  maxMs: 30_000,
  factor: 2,
  jitter: 0.5,
  maxAttempts: Number.POSITIVE_INFINITY,
};

/**
 * The delay before reconnect attempt `attempt` (0 for the first after a drop): exponential from
 * `initialMs`, capped at `maxMs`, minus a random share of at most `jitter`.
 */
export function backoffDelay(
  attempt: number,
  options: Readonly<BackoffOptions> = DEFAULT_BACKOFF,
  random: () => number = Math.random,
): number {
  const base = Math.min(options.maxMs, options.initialMs * options.factor ** Math.max(0, attempt));
  return Math.max(0, Math.round(base * (1 - options.jitter * random())));
}

/** The default realtime address for a base URL: its origin with `ws:`/`wss:` and `/live`. */
export function defaultLiveURL(serverURL: string): string {
  const url = new URL(serverURL);
  return `${url.protocol === 'https:' ? 'wss:' : 'ws:'}//${url.host}/live`;
}
