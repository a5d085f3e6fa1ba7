/**
 * Realtime subscriptions (docs/protocol.md#realtime-frames, #client-library-conventions).
 *
 * Realtime is opt-in: nothing here opens a socket until `enableRealtime()` was called. A connection
 * is either scoped (no master key: each subscription acts as its session token, or anonymously) or
 * admin (opened with `useMasterKey: true`: master authority for every subscription on it, with a
 * one-time warning). Scoped and admin streams never share a connection, and a subscription cannot
 * ask for master authority on its own.
 *
 * This module has no Node-only import: the browser uses the global WebSocket, the Node entry
 * installs a fallback (the `ws` package) for runtimes without one (Node 20).
 */
import type { AuthOptions, Client, LogEntry } from './client.ts';
import { ArgumentError, AuthenticationError, RealtimeError } from './errors.ts';
import { FILTERED, scrub } from './scrub.ts';

// ------------------------------------------------------------------------------------------------
// The global switch

let realtimeEnabled = false;

/** Turns realtime on for the process (off until then: docs/protocol.md#client-library-conventions). */
export function enableRealtime(): void {
  realtimeEnabled = true;
}

/** Turns realtime off again: new connections and subscriptions are refused (open ones stay). */
export function disableRealtime(): void {
  realtimeEnabled = false;
}

export function isRealtimeEnabled(): boolean {
  return realtimeEnabled;
}

function requireRealtime(): void {
  if (!realtimeEnabled) {
    throw new RealtimeError(
      'Realtime is off: call enableRealtime() once before opening a realtime connection or subscribing.',
    );
  }
}

// ------------------------------------------------------------------------------------------------
// One-time warnings

const warned = new Set<string>();

function warnOnce(key: string, message: string): void {
  if (warned.has(key)) return;
  warned.add(key);
  console.warn(`[@bds/client] ${message}`);
}

/** For tests: lets the one-time realtime warnings fire again. */
export function resetRealtimeWarnings(): void {
  warned.clear();
}

export const REALTIME_WARNINGS = {
  masterConnection:
    'A realtime connection was opened with the master key (useMasterKey: true): every subscription on ' +
    'it bypasses ACLs and class-level permissions. Use it for admin streams on a server only, never in a client build.',
  perSubscriptionMaster:
    'useMasterKey on subscribe() is ignored: per-subscription master authority does not exist. ' +
    'Open a separate connection with client.realtime({ useMasterKey: true }) for admin streams.',
} as const;

// ------------------------------------------------------------------------------------------------
// WebSocket, timers, backoff

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

async function resolveWebSocket(given: WebSocketConstructor | undefined): Promise<WebSocketConstructor> {
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

const realTimers: Timers = {
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

// ------------------------------------------------------------------------------------------------
// Types of the API

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

/** The default realtime address for a base URL: its origin with `ws:`/`wss:` and `/live`. */
export function defaultLiveURL(serverURL: string): string {
  const url = new URL(serverURL);
  return `${url.protocol === 'https:' ? 'wss:' : 'ws:'}//${url.host}/live`;
}

// ------------------------------------------------------------------------------------------------
// A tiny typed emitter

class Emitter<E extends { [K in keyof E]: (...args: any[]) => void }> {
  private readonly handlers = new Map<keyof E, Set<E[keyof E]>>();

  on<K extends keyof E>(event: K, fn: E[K]): this {
    let set = this.handlers.get(event);
    if (!set) {
      set = new Set();
      this.handlers.set(event, set);
    }
    set.add(fn);
    return this;
  }

  once<K extends keyof E>(event: K, fn: E[K]): this {
    const wrapper = ((...args: Parameters<E[K]>) => {
      this.off(event, wrapper);
      fn(...args);
    }) as E[K];
    return this.on(event, wrapper);
  }

  off<K extends keyof E>(event: K, fn: E[K]): this {
    this.handlers.get(event)?.delete(fn);
    return this;
  }

  protected listens(event: keyof E): boolean {
    return (this.handlers.get(event)?.size ?? 0) > 0;
  }

  protected emit<K extends keyof E>(event: K, ...args: Parameters<E[K]>): void {
    const set = this.handlers.get(event);
    if (!set) return;
    for (const fn of [...set]) {
      try {
        fn(...args);
      } catch (err) {
        // A throwing handler never breaks the stream of the others.
        console.error(`[@bds/client] a realtime ${String(event)} handler threw`, err);
      }
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Subscription

export class Subscription<T = LiveObject> extends Emitter<SubscriptionEvents<T>> {
  /** The id of the event last delivered to it (the resume point after a reconnect). */
  lastEventId: string | undefined;
  /** The service confirmed it on the current socket. */
  active = false;
  /** Ended: no more events. */
  ended = false;
  /** @internal Waiting for a snapshot after a resync. */
  resyncing = false;
  /** @internal A snapshot is asked again after a gap with no known resume point. */
  snapshotOnGap: boolean;
  /** @internal What the last subscribe frame asked for. */
  pendingResume = false;

  constructor(
    private readonly connection: RealtimeConnection,
    readonly requestId: number,
    readonly query: Readonly<LiveQuerySpec>,
    readonly sessionToken: string | undefined,
    readonly include: readonly string[],
    readonly snapshot: boolean,
  ) {
    super();
    this.snapshotOnGap = snapshot;
  }

  /** Ends the subscription; answers when the service confirmed it (at once when not connected). */
  unsubscribe(): Promise<void> {
    if (this.ended) return Promise.resolve();
    return this.connection._unsubscribe(this as Subscription<any>);
  }

  /** Resolves once the service confirmed the subscription (at once if it is); rejects when it errs or ends first. */
  opened(): Promise<{ resumed: boolean }> {
    return new Promise((resolve, reject) => {
      if (this.ended) return reject(new RealtimeError('The subscription has ended.'));
      if (this.active) return resolve({ resumed: this.pendingResume });
      const cleanup = () => {
        this.off('open', onOpen);
        this.off('error', onError);
        this.off('close', onClose);
      };
      const onOpen = (info: { resumed: boolean }) => {
        cleanup();
        resolve(info);
      };
      const onError = (err: RealtimeError) => {
        cleanup();
        reject(err);
      };
      const onClose = () => {
        cleanup();
        reject(new RealtimeError('The subscription has ended.'));
      };
      this.on('open', onOpen);
      this.on('error', onError);
      this.on('close', onClose);
    });
  }

  /** @internal */
  _emit<K extends keyof SubscriptionEvents<T>>(
    event: K,
    ...args: Parameters<SubscriptionEvents<T>[K]>
  ): void {
    this.emit(event, ...args);
  }

  /** @internal */
  _listens(event: keyof SubscriptionEvents<T>): boolean {
    return this.listens(event);
  }

  /** @internal An event frame: duplicates (an id at or before the last one seen) are dropped. */
  _event(frame: Record<string, any>): void {
    if (this.ended) return;
    const eventId = typeof frame.eventId === 'string' ? frame.eventId : undefined;
    if (eventId !== undefined) {
      if (this.lastEventId !== undefined && eventId <= this.lastEventId) return;
      this.lastEventId = eventId;
    }
    const kind = frame.op as LiveEventKind;
    const event: LiveEvent<T> = {
      kind,
      eventId: eventId ?? '',
      object: frame.object as T,
      ...(frame.original !== undefined ? { original: frame.original as T } : {}),
      requestId: this.requestId,
    };
    if (kind === 'create' || kind === 'delete') this.emit(kind, event.object, event);
    else this.emit(kind, event.object, event.original, event);
  }
}

// ------------------------------------------------------------------------------------------------
// Connection

type ConnState = 'idle' | 'connecting' | 'open' | 'waiting' | 'closed';

const EVENT_KINDS = new Set<string>(['create', 'update', 'delete', 'enter', 'leave']);
/** Connect-frame fields that hold a credential but are not among its secret keys (scrubbed as well). */
const FRAME_SECRETS = ['restAPIKey'];
const RESUME_WINDOW_EXCEEDED = 5;

/** The frame as it may be logged: docs/protocol.md#log-scrubbing, plus the REST key field. */
export function scrubFrame(frame: Record<string, unknown>): unknown {
  let out = frame;
  for (const key of FRAME_SECRETS) if (key in out) out = { ...out, [key]: FILTERED };
  return scrub(out);
}

/**
 * One realtime connection (one WebSocket, reopened with backoff after a drop). Subscriptions are
 * renewed on the new socket, resuming from the last event each one saw (`since`).
 */
export class RealtimeConnection extends Emitter<ConnectionEvents> {
  readonly master: boolean;
  readonly url: string;
  /** The service's id of the current socket, once connected. */
  clientId: number | string | undefined;
  private state: ConnState = 'idle';
  private socket: WebSocketLike | null = null;
  /** Bumped per socket: callbacks of an older socket are ignored. */
  private generation = 0;
  private readonly subs = new Map<number, Subscription<any>>();
  private readonly unsubscribing = new Map<number, () => void>();
  private nextRequestId = 1;
  private attempt = 0;
  private timer: unknown;
  private everConnected = false;
  private probed = false;
  private readonly backoff: BackoffOptions | null;
  private readonly timers: Timers;
  private readonly random: () => number;

  private readonly options: RealtimeOptions;

  constructor(
    readonly client: Client,
    options: RealtimeOptions = {},
  ) {
    super();
    requireRealtime();
    if (options && 'opts' in options) {
      throw new ArgumentError('Pass realtime options directly (useMasterKey), not nested inside `opts`.');
    }
    this.options = { ...client.options.realtime, ...options };
    this.master = options.useMasterKey === true;
    if (this.master && !client.canUseMasterKey) {
      throw new AuthenticationError(
        'A realtime connection with useMasterKey requires a master key: this client has none (or runs in client mode).',
      );
    }
    this.url = this.options.url ?? client.options.liveQueryURL ?? defaultLiveURL(client.serverURL);
    const o = this.options;
    this.backoff = o.reconnect === false ? null : { ...DEFAULT_BACKOFF, ...o.reconnect };
    this.timers = o.timers ?? realTimers;
    this.random = o.random ?? Math.random;
  }

  /** `idle` (no socket), `connecting`, `open`, `waiting` (a reconnect is scheduled) or `closed`. */
  get status(): ConnState {
    return this.state;
  }

  /** The live subscriptions of this connection. */
  get subscriptions(): Subscription<any>[] {
    return [...this.subs.values()];
  }

  /**
   * Subscribes to the rows of `query.className` matching `query.where`. The subscription acts as
   * its session (explicit `sessionToken`, else the ambient one, else the client's bound token,
   * else anonymous) on a scoped connection, as master on an admin connection.
   */
  subscribe<T = LiveObject>(query: LiveQuerySpec, options: SubscribeOptions = {}): Subscription<T> {
    requireRealtime();
    if (this.state === 'closed') throw new RealtimeError('This realtime connection is closed.');
    if (!query || typeof query.className !== 'string' || query.className === '') {
      throw new ArgumentError('subscribe needs a query with a className.');
    }
    if (options && 'opts' in options) {
      throw new ArgumentError('Pass auth as direct options (sessionToken), not nested inside `opts`.');
    }
    if (options.useMasterKey !== undefined)
      warnOnce('perSubscriptionMaster', REALTIME_WARNINGS.perSubscriptionMaster);
    let token: string | undefined;
    if (!this.master) {
      const auth: AuthOptions =
        options.sessionToken !== undefined ? { sessionToken: options.sessionToken } : {};
      const resolved = this.client.resolveAuth(auth, false);
      token = resolved.kind === 'session' ? resolved.token : undefined;
    }
    const include =
      typeof options.include === 'string'
        ? options.include
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean)
        : [...(options.include ?? [])];
    const spec: LiveQuerySpec = { className: query.className, where: query.where ?? {} };
    if (query.keys) spec.keys = [...query.keys];
    if (query.watch) spec.watch = [...query.watch];
    const sub = new Subscription<T>(
      this,
      this.nextRequestId++,
      spec,
      token,
      include,
      options.snapshot === true,
    );
    this.subs.set(sub.requestId, sub);
    if (this.state === 'open') this.sendSubscribe(sub);
    else this.ensureOpen();
    return sub;
  }

  /** Closes the socket for good: every subscription ends (`close` with `connection-closed`). */
  close(): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.clearTimer();
    const socket = this.socket;
    this.socket = null;
    this.generation++;
    this.endAll('connection-closed');
    for (const resolve of this.unsubscribing.values()) resolve();
    this.unsubscribing.clear();
    if (socket) {
      try {
        socket.close(1000, 'client closed');
      } catch {
        // already closing
      }
    }
  }

  /** @internal */
  _unsubscribe(sub: Subscription<any>): Promise<void> {
    sub.ended = true;
    sub.active = false;
    this.subs.delete(sub.requestId);
    const wait =
      this.state === 'open'
        ? new Promise<void>((resolve) => {
            this.unsubscribing.set(sub.requestId, resolve);
            this.send({ op: 'unsubscribe', requestId: sub.requestId });
          })
        : Promise.resolve();
    sub._emit('close', { reason: 'unsubscribed' });
    return wait;
  }

  // --- socket ---------------------------------------------------------------------------------

  private ensureOpen(): void {
    if (this.state === 'idle') void this.open();
  }

  private async open(): Promise<void> {
    const generation = ++this.generation;
    this.state = 'connecting';
    let Ctor: WebSocketConstructor;
    try {
      if (!this.probed && this.options.probe !== false) {
        this.probed = true;
        if (!(await this.client.serverSupports('liveQuery'))) {
          throw new RealtimeError('The server does not offer realtime (its features.liveQuery is false).');
        }
      }
      Ctor = await resolveWebSocket(this.options.WebSocket);
    } catch (err) {
      if (generation !== this.generation) return;
      return this.fail(
        err instanceof RealtimeError ? err : new RealtimeError((err as Error).message, { cause: err }),
      );
    }
    // close() and fail() bump the generation.
    if (generation !== this.generation) return;
    let socket: WebSocketLike;
    try {
      socket = new Ctor(this.url);
    } catch (err) {
      return this.fail(
        new RealtimeError(`Cannot open ${this.url}: ${(err as Error).message}`, { cause: err }),
      );
    }
    this.socket = socket;
    const current = () => generation === this.generation && this.socket === socket;
    socket.onopen = () => {
      if (current()) this.sendConnect();
    };
    socket.onmessage = (event) => {
      if (current()) this.onFrame(event.data);
    };
    socket.onerror = () => {
      // A close event follows.
    };
    socket.onclose = (event) => {
      if (current()) this.onSocketClosed(event?.code ?? 1006, String(event?.reason ?? ''));
    };
  }

  private sendConnect(): void {
    const o = this.client.options;
    const frame: Record<string, unknown> = { op: 'connect', applicationId: this.client.applicationId };
    if (o.restAPIKey) frame.restAPIKey = o.restAPIKey;
    if (o.javaScriptKey) frame.javascriptKey = o.javaScriptKey;
    if (o.clientKey) frame.clientKey = o.clientKey;
    if (o.installationId) frame.installationId = o.installationId;
    if (this.master) {
      // Checked again at every (re)connect: client mode may have been turned on since.
      if (!this.client.canUseMasterKey || !o.masterKey) {
        this.fail(
          new RealtimeError('This admin realtime connection cannot send a master key (client mode or none).'),
        );
        return;
      }
      warnOnce('masterConnection', REALTIME_WARNINGS.masterConnection);
      frame.masterKey = o.masterKey;
    }
    this.send(frame);
  }

  private send(frame: Record<string, unknown>): void {
    const socket = this.socket;
    if (!socket) return;
    this.log('send', frame);
    try {
      socket.send(JSON.stringify(frame));
    } catch {
      // The close event follows and reconnects.
    }
  }

  private sendSubscribe(sub: Subscription<any>): void {
    const frame: Record<string, unknown> = {
      op: 'subscribe',
      requestId: sub.requestId,
      query: { ...sub.query },
    };
    if (sub.sessionToken) frame.sessionToken = sub.sessionToken;
    if (sub.include.length > 0) frame.include = [...sub.include];
    sub.pendingResume = false;
    if (sub.resyncing) frame.snapshot = true;
    else if (sub.lastEventId !== undefined) {
      frame.since = sub.lastEventId;
      sub.pendingResume = true;
    } else if (sub.snapshotOnGap) frame.snapshot = true;
    sub.active = false;
    this.send(frame);
  }

  private onFrame(data: unknown): void {
    let frame: Record<string, any>;
    try {
      frame = JSON.parse(typeof data === 'string' ? data : String(data));
    } catch {
      return;
    }
    if (frame === null || typeof frame !== 'object') return;
    this.log('receive', frame);
    const sub = frame.requestId !== undefined ? this.subs.get(frame.requestId) : undefined;
    switch (frame.op) {
      case 'connected':
        this.onConnected(frame.clientId);
        return;
      case 'subscribed':
        if (sub && !sub.ended) {
          sub.active = true;
          sub._emit('open', { resumed: sub.pendingResume });
        }
        return;
      case 'unsubscribed': {
        const resolve = this.unsubscribing.get(frame.requestId);
        this.unsubscribing.delete(frame.requestId);
        resolve?.();
        return;
      }
      case 'snapshot':
        if (sub && !sub.ended) {
          if (sub.resyncing) {
            sub.resyncing = false;
            sub.snapshotOnGap = true;
          }
          sub._emit('snapshot', Array.isArray(frame.results) ? frame.results : []);
        }
        return;
      case 'error':
        this.onErrorFrame(frame, sub);
        return;
      default:
        if (EVENT_KINDS.has(frame.op) && sub) sub._event(frame);
    }
  }

  private onConnected(clientId: number | string): void {
    this.state = 'open';
    this.clientId = clientId;
    this.attempt = 0;
    const reconnected = this.everConnected;
    this.everConnected = true;
    this.emit('open', { clientId, reconnected });
    for (const sub of [...this.subs.values()]) if (!sub.ended) this.sendSubscribe(sub);
  }

  private onErrorFrame(frame: Record<string, any>, sub: Subscription<any> | undefined): void {
    const error = new RealtimeError(String(frame.error ?? 'realtime error'), {
      code: typeof frame.code === 'number' ? frame.code : undefined,
      reconnect: frame.reconnect === true,
      requestId: frame.requestId,
    });
    if (frame.requestId !== undefined) {
      const pending = this.unsubscribing.get(frame.requestId);
      if (pending) {
        this.unsubscribing.delete(frame.requestId);
        pending();
        return;
      }
      if (!sub || sub.ended) return;
      if (error.code === RESUME_WINDOW_EXCEEDED) {
        // The missed events are gone: renew with a snapshot and tell the app.
        sub.resyncing = true;
        sub.lastEventId = undefined;
        sub._emit('resync', error);
        if (this.state === 'open' && !sub.ended) this.sendSubscribe(sub);
        return;
      }
      this.reportError(sub, error);
      if (error.reconnect) {
        this.dropSocket();
        return;
      }
      // The service ended this subscription (its session ended, its query was refused, ...).
      sub.ended = true;
      sub.active = false;
      this.subs.delete(sub.requestId);
      sub._emit('close', { reason: 'error' });
      return;
    }
    if (this.state !== 'open' && !error.reconnect) {
      // The connect frame was refused (keys, session): retrying would not help.
      this.fail(error);
      return;
    }
    this.emitConnectionError(error);
    if (error.reconnect) this.dropSocket();
  }

  private reportError(sub: Subscription<any>, error: RealtimeError): void {
    if (sub._listens('error')) sub._emit('error', error);
    else this.emitConnectionError(error);
  }

  private emitConnectionError(error: RealtimeError): void {
    if (this.listens('error')) this.emit('error', error);
    else console.warn(`[@bds/client] realtime error ${error.code ?? ''}: ${error.message}`);
  }

  /** Closes the current socket; its close event schedules the reconnect. */
  private dropSocket(): void {
    const socket = this.socket;
    if (!socket) return;
    try {
      socket.close(4000, 'reconnect');
    } catch {
      this.onSocketClosed(1006, '');
    }
  }

  private onSocketClosed(code: number, reason: string): void {
    this.socket = null;
    this.generation++;
    for (const sub of this.subs.values()) sub.active = false;
    for (const resolve of this.unsubscribing.values()) resolve();
    this.unsubscribing.clear();
    if (this.state === 'closed') return;
    if (this.subs.size === 0) {
      // Nothing to renew: the next subscribe opens a new socket.
      this.state = 'idle';
      this.emit('close', { code, reason });
      return;
    }
    if (!this.backoff) {
      this.emit('close', { code, reason });
      this.state = 'closed';
      this.endAll('connection-closed');
      return;
    }
    if (this.attempt >= this.backoff.maxAttempts) {
      this.emit('close', { code, reason });
      this.fail(new RealtimeError(`Realtime reconnect gave up after ${this.attempt} attempts.`));
      return;
    }
    const delay = backoffDelay(this.attempt, this.backoff, this.random);
    this.attempt++;
    this.state = 'waiting';
    this.emit('close', { code, reason, reconnectInMs: delay });
    this.timer = this.timers.setTimeout(() => {
      this.timer = undefined;
      if (this.state === 'waiting') void this.open();
    }, delay);
  }

  /** Gives up: every subscription gets the error and ends; the connection is closed. */
  private fail(error: RealtimeError): void {
    if (this.state === 'closed') return;
    const subs = [...this.subs.values()];
    this.state = 'closed';
    this.clearTimer();
    const socket = this.socket;
    this.socket = null;
    this.generation++;
    if (socket) {
      try {
        socket.close(1000, 'client gave up');
      } catch {
        // already closed
      }
    }
    let heard = this.listens('error');
    if (heard) this.emit('error', error);
    for (const sub of subs) {
      if (!sub._listens('error')) continue;
      heard = true;
      sub._emit('error', error);
    }
    if (!heard) console.warn(`[@bds/client] realtime error ${error.code ?? ''}: ${error.message}`);
    this.endAll('connection-closed');
  }

  private endAll(reason: 'connection-closed'): void {
    const subs = [...this.subs.values()];
    this.subs.clear();
    for (const sub of subs) {
      sub.ended = true;
      sub.active = false;
      sub._emit('close', { reason });
    }
  }

  private clearTimer(): void {
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** One scrubbed log entry per frame, to the client's logger (method `WS`). */
  private log(direction: 'send' | 'receive', frame: Record<string, any>): void {
    const logger = this.client.options.logger;
    if (!logger) return;
    const objectId = frame.object?.objectId;
    const entry: LogEntry = {
      method: 'WS',
      path: pathOf(this.url),
      realtime: direction,
      ...(typeof objectId === 'string' ? { objectId } : {}),
      ...(frame.op === 'error' && typeof frame.code === 'number' ? { code: frame.code } : {}),
      headers: {},
      ...(direction === 'send' ? { body: scrubFrame(frame) } : { response: scrubFrame(frame) }),
      durationMs: 0,
    };
    try {
      logger(entry);
    } catch {
      // A logger's failure is not the stream's.
    }
  }
}

function pathOf(url: string): string {
  try {
    return new URL(url).pathname;
  } catch {
    return url;
  }
}
