/**
 * One realtime connection (docs/protocol.md#realtime-frames, #client-library-conventions): one
 * WebSocket, reopened with backoff after a drop, and the subscriptions on it. A connection is
 * either scoped (no master key: each subscription acts as its session token, or anonymously) or
 * admin (opened with `useMasterKey: true`: master authority for every subscription on it, with a
 * one-time warning). Nothing opens a socket until `enableRealtime()` was called (switch.ts).
 *
 * This module has no Node-only import: the browser uses the global WebSocket, the Node entry
 * installs a fallback (the `ws` package) for runtimes without one (Node 20).
 */
import { ArgumentError, AuthenticationError, RealtimeError } from '../errors.ts';
import type { AuthOptions } from '../options.ts';
import { LiveCode } from '../protocol/realtime.ts';
import { Emitter } from './emitter.ts';
import { logFrame } from './frame-log.ts';
import type { RealtimeHost } from './host.ts';
import {
  type BackoffOptions,
  backoffDelay,
  DEFAULT_BACKOFF,
  defaultLiveURL,
  realTimers,
  resolveWebSocket,
  type Timers,
  type WebSocketConstructor,
  type WebSocketLike,
} from './socket.ts';
import { Subscription, type SubscriptionOwner } from './subscription.ts';
import { REALTIME_WARNINGS, requireRealtime, warnOnce } from './switch.ts';
import type {
  ConnectionEvents,
  LiveObject,
  LiveQuerySpec,
  RealtimeOptions,
  SubscribeOptions,
} from './types.ts';

type ConnState = 'idle' | 'connecting' | 'open' | 'waiting' | 'closed';

const EVENT_KINDS = new Set<string>(['create', 'update', 'delete', 'enter', 'leave']);

/**
 * One realtime connection (one WebSocket, reopened with backoff after a drop). Subscriptions are
 * renewed on the new socket, resuming from the last event each one saw (`since`).
 */
export class RealtimeConnection extends Emitter<ConnectionEvents> implements SubscriptionOwner {
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
    readonly client: RealtimeHost,
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
    const spec = specOf(query, 'subscribe');
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
    this.markEnded(sub);
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

  /**
   * @internal The subscription's new query: an `update` frame on an open socket (the service swaps
   * the query in one step: no event falls between the old and the new); otherwise the renewal at
   * the next connect carries it, with `since` = the subscription's resume point.
   */
  _update(sub: Subscription<any>, query: LiveQuerySpec): Promise<void> {
    const spec = specOf(query, 'update');
    if (sub.ended || this.subs.get(sub.requestId) !== sub) {
      return Promise.reject(new RealtimeError('The subscription has ended.'));
    }
    return new Promise<void>((resolve, reject) => {
      const waiter = { resolve, reject };
      sub._setQuery(spec);
      if (this.state === 'open' && this.socket) {
        sub.sent.push({ op: 'update', resume: false, query: spec, waiters: [waiter] });
        this.send(this.subscriptionFrame(sub, 'update'));
      } else sub.unsent.push(waiter);
    });
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

  /** A subscribe or update frame for the subscription's current query, session and include. */
  private subscriptionFrame(sub: Subscription<any>, op: 'subscribe' | 'update'): Record<string, unknown> {
    const frame: Record<string, unknown> = { op, requestId: sub.requestId, query: { ...sub.query } };
    if (sub.sessionToken) frame.sessionToken = sub.sessionToken;
    if (sub.include.length > 0) frame.include = [...sub.include];
    return frame;
  }

  private sendSubscribe(sub: Subscription<any>): void {
    const frame = this.subscriptionFrame(sub, 'subscribe');
    sub.pendingResume = false;
    if (sub.resyncing) frame.snapshot = true;
    else if (sub.lastEventId !== undefined) {
      frame.since = sub.lastEventId;
      sub.pendingResume = true;
    } else if (sub.snapshotOnGap) frame.snapshot = true;
    sub.active = false;
    sub.sent.push({ op: 'subscribe', resume: sub.pendingResume, query: sub.query, waiters: sub.unsent });
    sub.unsent = [];
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
        if (sub && !sub.ended) this.onSubscribed(sub, frame);
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

  /**
   * The service confirmed a subscribe or update frame (the oldest one waiting). Its `eventId` is
   * the service's latest event when the query became active: the resume point of a subscription
   * that did not resume (a resumed one keeps its own, which the replay moves on).
   */
  private onSubscribed(sub: Subscription<any>, frame: Record<string, any>): void {
    const answered = sub.sent.shift();
    sub.active = true;
    if (answered) sub.confirmed = answered.query;
    if (typeof frame.eventId === 'string' && !answered?.resume) sub.lastEventId = frame.eventId;
    for (const waiter of answered?.waiters ?? []) waiter.resolve();
    if (answered?.op !== 'update') sub._emit('open', { resumed: sub.pendingResume });
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
      // Code 5 follows a resuming subscribe's `subscribed` (an update never resumes).
      if (sub.sent[0]?.op === 'update' && error.code !== LiveCode.RESUME_WINDOW_EXCEEDED) {
        // The service refused the update and kept the subscription as it was (docs/protocol.md#realtime-frames).
        const refused = sub.sent.shift()!;
        // A renewal sent since (a resync) carries the update's query: that one answers it.
        const renewal = sub.sent.find((frame) => frame.op === 'subscribe');
        if (renewal) renewal.waiters.push(...refused.waiters);
        else {
          if (sub.sent.length === 0 && sub.unsent.length === 0) sub._setQuery(sub.confirmed);
          for (const waiter of refused.waiters) waiter.reject(error);
        }
        if (error.reconnect) this.dropSocket();
        return;
      }
      if (error.code !== LiveCode.RESUME_WINDOW_EXCEEDED) sub.sent.shift();
      if (error.code === LiveCode.RESUME_WINDOW_EXCEEDED) {
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
      this.markEnded(sub, error);
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
    for (const sub of this.subs.values()) {
      sub.active = false;
      // What waited on this socket is confirmed by the renewal at the next connect.
      sub.unsent = [...sub.sent.flatMap((frame) => frame.waiters), ...sub.unsent];
      sub.sent = [];
    }
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
      this.markEnded(sub);
      sub._emit('close', { reason });
    }
  }

  /** A subscription ends: updates still waiting are refused. */
  private markEnded(sub: Subscription<any>, error?: RealtimeError): void {
    sub.ended = true;
    sub.active = false;
    const waiters = [...sub.sent.flatMap((frame) => frame.waiters), ...sub.unsent];
    sub.sent = [];
    sub.unsent = [];
    for (const waiter of waiters) waiter.reject(error ?? new RealtimeError('The subscription has ended.'));
  }

  private clearTimer(): void {
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** One scrubbed log entry per frame, to the client's logger (method `WS`). */
  private log(direction: 'send' | 'receive', frame: Record<string, any>): void {
    logFrame(this.client.options.logger, this.url, direction, frame);
  }
}

/** A query as a subscription keeps it (its own copy): className, where, keys and watch. */
function specOf(query: LiveQuerySpec, call: 'subscribe' | 'update'): LiveQuerySpec {
  if (!query || typeof query.className !== 'string' || query.className === '') {
    throw new ArgumentError(`${call} needs a query with a className.`);
  }
  const spec: LiveQuerySpec = { className: query.className, where: query.where ?? {} };
  if (query.keys) spec.keys = [...query.keys];
  if (query.watch) spec.watch = [...query.watch];
  return spec;
}
