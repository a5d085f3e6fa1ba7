/** The types of the realtime API: what a subscription watches, its events, a connection's options. */
import type { RealtimeError } from '../errors.ts';
import type { BackoffOptions, Timers, WebSocketConstructor } from './socket.ts';

export type LiveEventKind = 'create' | 'update' | 'delete' | 'enter' | 'leave';

/** What a subscription watches (the `query` of a subscribe frame, docs/protocol.md#realtime-frames). */
export interface LiveQuerySpec {
  className: string;
  where?: Record<string, unknown>;
  /** Only these fields in delivered objects. */
  keys?: string[];
  /** An update is delivered only when one of these fields changed. */
  watch?: string[];
}

export interface SubscribeOptions {
  /**
   * Acts as this user. Without it: the ambient session (withSession, imperative login), then the
   * token bound to a user-scoped client, else anonymous (docs/protocol.md#client-library-conventions).
   * Ignored on an admin connection (master authority there).
   */
  sessionToken?: string | null;
  /** Pointer fields expanded in events (each included row is checked for the subscriber). */
  include?: string[] | string;
  /** Ask for the matching rows first (`snapshot` event), then live events. */
  snapshot?: boolean;
  /**
   * Not offered: per-subscription master authority does not exist (docs/protocol.md#realtime-frames). Passing it only warns
   * once; use `client.realtime({ useMasterKey: true })` instead.
   * @deprecated
   */
  useMasterKey?: boolean;
}

export type LiveObject = Record<string, any> & { className: string; objectId: string };

/** One event as delivered. */
export interface LiveEvent<T = LiveObject> {
  kind: LiveEventKind;
  eventId: string;
  object: T;
  original?: T;
  requestId: number;
}

export interface SubscriptionEvents<T = LiveObject> {
  /** The service confirmed the subscription; `resumed` when it resumes from the last event seen. */
  open: (info: { resumed: boolean }) => void;
  create: (object: T, event: LiveEvent<T>) => void;
  update: (object: T, original: T | undefined, event: LiveEvent<T>) => void;
  enter: (object: T, original: T | undefined, event: LiveEvent<T>) => void;
  leave: (object: T, original: T | undefined, event: LiveEvent<T>) => void;
  delete: (object: T, event: LiveEvent<T>) => void;
  /** The matching rows (asked for with `snapshot: true`, or after a `resync`). */
  snapshot: (results: T[]) => void;
  /**
   * Events were missed and cannot be replayed (error code 5: the resume window was exceeded, or
   * the service restarted): the subscription is renewed with a snapshot, which follows; replace
   * what you hold with it.
   */
  resync: (error: RealtimeError) => void;
  /** An error frame about this subscription, or the connection's failure. */
  error: (error: RealtimeError) => void;
  /** The subscription ended: unsubscribed, ended by the service (after an `error`), or its connection closed. */
  close: (info: { reason: 'unsubscribed' | 'error' | 'connection-closed' }) => void;
}

export interface ConnectionEvents {
  /** The service accepted the connect frame. */
  open: (info: { clientId: number | string; reconnected: boolean }) => void;
  /** The socket closed; `reconnectInMs` when a reconnect is scheduled. */
  close: (info: { code: number; reason: string; reconnectInMs?: number }) => void;
  error: (error: RealtimeError) => void;
}

export interface RealtimeOptions {
  /** An admin connection: master authority for every subscription on it (a one-time warning). */
  useMasterKey?: boolean;
  /** The realtime address; default: the server's origin with `ws:`/`wss:` and `/live`. */
  url?: string;
  /** Reconnect backoff; `false` turns automatic reconnect off. */
  reconnect?: Partial<BackoffOptions> | false;
  /** A WebSocket class (default: the global one, or `ws` in Node 20). */
  WebSocket?: WebSocketConstructor;
  /** For tests: the timers that schedule reconnects. */
  timers?: Timers;
  /** For tests: the jitter's random source. */
  random?: () => number;
  /** Check `/serverInfo` `features.liveQuery` before the first connect (default true). */
  probe?: boolean;
}
