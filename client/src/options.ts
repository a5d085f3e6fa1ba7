/**
 * What a client and each of its calls are given, and what a call answers: the client's options,
 * the auth options of a call, the request options of the request core, the result shapes, and the
 * entry the logger receives.
 */
import { ArgumentError } from './errors.ts';
import type { RealtimeOptions } from './realtime/types.ts';

export interface LogEntry {
  method: string;
  path: string;
  objectId?: string;
  status?: number;
  code?: number;
  headers: Record<string, string>;
  body?: unknown;
  response?: unknown;
  durationMs: number;
  /** Realtime frames (method `WS`): whether the frame was sent or received. */
  realtime?: 'send' | 'receive';
}

export interface ClientOptions {
  /** Base URL including the mount path, e.g. `http://localhost:1337/api`. */
  serverURL: string;
  applicationId: string;
  restAPIKey?: string;
  javaScriptKey?: string;
  clientKey?: string;
  /** Never ship a master key in a client build: leave it `null`/absent there. */
  masterKey?: string | null;
  /** Binds the client to a user (lowest-priority credential). */
  sessionToken?: string | null;
  installationId?: string;
  /** Receives one scrubbed entry per request. */
  logger?: (entry: LogEntry) => void;
  /** Opt-in response cache for reads of `/classes/...`. */
  cache?: boolean | { ttlMs?: number };
  silenceVersionWarning?: boolean;
  /** Server versions below this are warned about once. */
  minimumServerVersion?: string;
  fetch?: typeof fetch;
  /** The realtime address (default: the server's origin with `ws:`/`wss:` and `/live`). */
  liveQueryURL?: string;
  /** Defaults for this client's realtime connections (reconnect backoff, WebSocket class). */
  realtime?: Omit<RealtimeOptions, 'useMasterKey' | 'url'>;
}

/** Auth passed as direct options. */
export interface AuthOptions {
  /** Explicit session token; a blank one sends the call anonymously. */
  sessionToken?: string | null;
  /** `true` forces the master key (if configured and not in client mode); `false` refuses it. */
  useMasterKey?: boolean;
  installationId?: string;
}

/** A file's bytes: a Blob (browsers), bytes, or a stream (web ReadableStream or a Node Readable). */
export type FileBody =
  | Blob
  | ArrayBuffer
  | Uint8Array
  | ReadableStream<Uint8Array>
  | AsyncIterable<Uint8Array>;

export interface RequestOptions extends AuthOptions {
  body?: unknown;
  /** Raw bytes sent as they are (file uploads) instead of a JSON `body`. */
  rawBody?: FileBody;
  contentType?: string;
  /** Receives the answer's headers (X-Backend-Push-Status-Id, the job status id of POST /jobs). */
  onHeaders?: (headers: Headers) => void;
  query?: Record<string, unknown>;
  headers?: Record<string, string>;
}

export type Success<T> = { success: true; status: number; data: T };
export type Failure = { success: false; status: number; code: number; error: string };
export type Result<T = any> = Success<T> | Failure;

export type ResolvedAuth = { kind: 'master' } | { kind: 'session'; token: string } | { kind: 'none' };

const AUTH_KEYS = new Set(['sessionToken', 'useMasterKey', 'installationId']);

/**
 * Rejects an options object that nests auth inside `opts`; auth must be passed as direct options.
 * Returns the direct auth options.
 */
export function checkAuthOptions(options: object | undefined): AuthOptions {
  if (!options) return {};
  if ('opts' in options) {
    throw new ArgumentError(
      'Pass auth as direct options (sessionToken, useMasterKey), not nested inside `opts`.',
    );
  }
  const out: AuthOptions = {};
  for (const k of AUTH_KEYS) if (k in options) (out as any)[k] = (options as any)[k];
  return out;
}
