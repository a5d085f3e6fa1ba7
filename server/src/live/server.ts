import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { type RawData, type WebSocket, WebSocketServer } from 'ws';
import { decideAcl } from '../access/acl.ts';
import { decideClass } from '../access/class.ts';
import type { CallerResolver } from '../auth/caller.ts';
import type { ServiceOptions } from '../config/options.ts';
import type { Data } from '../data/data.ts';
import { resolveForMemory } from '../data/resolve.ts';
import type { Caller } from '../kernel/caller.ts';
import { ctxOf } from '../kernel/context.ts';
import { BdsError, ErrorCode } from '../kernel/errors.ts';
import type { WriteEvent } from '../kernel/events.ts';
import { safeEqual } from '../kernel/ids.ts';
import type { Logger } from '../kernel/log.ts';
import { classNameProblem } from '../kernel/names.ts';
import type { QueryNode } from '../kernel/query.ts';
import type { Row } from '../kernel/records.ts';
import type { ClassSchema } from '../kernel/schema.ts';
import { compileMatcher, type RowMatcher } from '../query/match.ts';
import { parseWhere } from '../query/parse.ts';
import {
  type ErrorFrame,
  errorFrame,
  FrameError,
  LiveCode,
  LiveText,
  parseFrame,
  parseSubscription,
  type RequestId,
  requestIdOf,
  type SubscriptionRequest,
} from './frames.ts';
import { EventIds, type LiveEvent, Retention } from './retention.ts';
import { type DeliveredKind, DeliveryTrace, type FilterReason, type TraceEntry } from './trace.ts';

type LiveOptions = ServiceOptions['liveQuery'];

/** A connection past this many bytes waiting to be sent is dropped (a client that does not read). */
const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;

interface Connection {
  readonly id: number;
  readonly ws: WebSocket;
  connected: boolean;
  master: boolean;
  sessionToken: string | undefined;
  installationId: string | null;
  /** By requestId: pending (being prepared) and active subscriptions. */
  readonly subs: Map<RequestId, Subscription>;
  lastFrameAt: number;
  alive: boolean;
  closed: boolean;
  /** Frames of a connection are handled one after the other, so its answers come in frame order. */
  chain: Promise<void>;
  connecting: boolean;
}

/** What a subscription holds once its query is checked for its caller. */
interface Prepared {
  request: SubscriptionRequest;
  caller: Caller;
  /** The where as parsed (re-secured when the caller changes). */
  parsed: QueryNode;
  /** Schema the matchers were compiled for; recompiled when the class's schema changes. */
  schema: ClassSchema | undefined;
  matcher: RowMatcher;
  /** The class-level row condition (pointer permissions), compiled; null when none. */
  clpMatcher: RowMatcher | null;
}

interface Subscription {
  readonly conn: Connection;
  readonly requestId: RequestId;
  /** Set once prepared; replaced by an update. */
  state: Prepared | undefined;
  /** The token the caller was resolved from (null: anonymous or master). */
  token: string | null;
  /** The caller generation it was resolved at. */
  generation: number;
  active: boolean;
  ended: boolean;
}

/** Sizes of the registry, for tests and the memory check. */
export interface LiveSizes {
  connections: number;
  subscriptions: number;
  classes: number;
  tokens: number;
  retained: number;
}

const EMPTY_SCHEMA = (className: string): ClassSchema => ({
  className,
  fields: {},
  classLevelPermissions: {},
  indexes: {},
});

/**
 * Realtime subscriptions (LiveQuery): a WebSocket server on the service's HTTP server. Every write
 * event of the bus is decided per subscriber with the access deciders (docs/architecture.md
 * "Realtime"), in one ordered queue, so that each connection sees events in the order of the
 * application's sequence.
 */
export class LiveQuery {
  private readonly wss: WebSocketServer;
  private readonly connections = new Set<Connection>();
  private readonly byClass = new Map<string, Set<Subscription>>();
  private readonly byToken = new Map<string, Set<Subscription>>();
  private readonly ids = new EventIds();
  private readonly retention: Retention;
  readonly trace: DeliveryTrace;
  /** Bumped by `_Role` and `_Session` changes: subscriptions resolve their caller again before the next event. */
  private generation = 0;
  private nextClientId = 1;
  private queue: Promise<void> = Promise.resolve();
  private readonly timers: NodeJS.Timeout[] = [];
  private unsubscribe: (() => void) | undefined;
  private closing: Promise<void> | undefined;
  private readonly opts: LiveOptions;
  private readonly log: Logger;

  constructor(
    private readonly data: Data,
    private readonly callers: CallerResolver,
  ) {
    const { options, log } = data.core;
    this.opts = options.liveQuery;
    this.log = log;
    this.retention = new Retention(this.opts.retentionMaxEvents, this.opts.retentionMs);
    this.trace = new DeliveryTrace(this.opts.traceSize);
    this.wss = new WebSocketServer({
      noServer: true,
      // Frames up to 16x the limit are read and answered 155; larger ones close the socket (1009).
      maxPayload: this.opts.maxFrameBytes * 16,
      perMessageDeflate: false,
    });
    this.unsubscribe = data.core.events.subscribe((event) => this.onWrite(event));
    if (this.opts.pingIntervalMs > 0) {
      this.timers.push(setInterval(() => this.heartbeat(), this.opts.pingIntervalMs).unref());
    }
    if (this.opts.idleTimeoutMs > 0) {
      const every = Math.max(10, Math.min(this.opts.idleTimeoutMs / 4, 30_000));
      this.timers.push(setInterval(() => this.closeIdle(), every).unref());
    }
  }

  get enabled(): boolean {
    return this.opts.classNames.length > 0;
  }

  sizes(): LiveSizes {
    let subscriptions = 0;
    for (const conn of this.connections) subscriptions += conn.subs.size;
    return {
      connections: this.connections.size,
      subscriptions,
      classes: this.byClass.size,
      tokens: this.byToken.size,
      retained: this.retention.size,
    };
  }

  /** The `upgrade` of the HTTP server: takes requests for `liveQuery.path`. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const path = (req.url ?? '').split('?')[0];
    if (path !== this.opts.path || !this.enabled) return false;
    if (this.closing) {
      socket.end('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return true;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => this.onConnection(ws));
    return true;
  }

  // --- connections and frames ---------------------------------------------------------------

  private onConnection(ws: WebSocket): void {
    if (this.closing) {
      ws.close(1001, LiveText.shuttingDown);
      return;
    }
    const conn: Connection = {
      id: this.nextClientId++,
      ws,
      connected: false,
      master: false,
      sessionToken: undefined,
      installationId: null,
      subs: new Map(),
      lastFrameAt: Date.now(),
      alive: true,
      closed: false,
      chain: Promise.resolve(),
      connecting: false,
    };
    this.connections.add(conn);
    ws.on('pong', () => {
      conn.alive = true;
    });
    ws.on('message', (data, isBinary) => this.onMessage(conn, data, isBinary));
    ws.on('error', () => this.drop(conn));
    ws.on('close', () => this.drop(conn));
  }

  private send(conn: Connection, frame: unknown): void {
    if (conn.closed || conn.ws.readyState !== conn.ws.OPEN) return;
    if (conn.ws.bufferedAmount > MAX_BUFFERED_BYTES) {
      this.log.warn({ clientId: conn.id }, 'realtime client does not read its events; dropped');
      conn.ws.terminate();
      this.drop(conn);
      return;
    }
    conn.ws.send(JSON.stringify(frame));
  }

  private sendError(conn: Connection, frame: ErrorFrame): void {
    this.send(conn, frame);
  }

  private onMessage(conn: Connection, data: RawData, isBinary: boolean): void {
    conn.lastFrameAt = Date.now();
    const bytes = Array.isArray(data)
      ? data.reduce((n, b) => n + b.length, 0)
      : data instanceof ArrayBuffer
        ? data.byteLength
        : data.length;
    if (bytes > this.opts.maxFrameBytes) {
      this.sendError(
        conn,
        errorFrame(LiveCode.TOO_MANY, LiveText.frameTooLarge(bytes, this.opts.maxFrameBytes)),
      );
      return;
    }
    if (isBinary) {
      this.sendError(conn, errorFrame(LiveCode.MALFORMED, LiveText.binary));
      return;
    }
    const buffer = Array.isArray(data)
      ? Buffer.concat(data)
      : Buffer.isBuffer(data)
        ? data
        : Buffer.from(data);
    const text = buffer.toString('utf8');
    let requestId: RequestId | undefined;
    try {
      const frame = parseFrame(text);
      try {
        requestId = requestIdOf(frame);
      } catch {
        requestId = undefined;
      }
      conn.chain = conn.chain
        .then(() => (conn.closed ? undefined : this.dispatch(conn, frame)))
        .catch((err: unknown) => this.fail(conn, err, requestId));
    } catch (err) {
      this.fail(conn, err, requestId);
    }
  }

  private fail(conn: Connection, err: unknown, requestId: RequestId | undefined): void {
    if (err instanceof FrameError) {
      this.sendError(conn, errorFrame(err.code, err.message, err.requestId ?? requestId));
      return;
    }
    this.log.error({ err: err instanceof Error ? err.stack : String(err) }, 'realtime frame failed');
    this.sendError(conn, errorFrame(LiveCode.MALFORMED, LiveText.internal, requestId, true));
  }

  private async dispatch(conn: Connection, frame: Record<string, unknown> & { op: string }): Promise<void> {
    switch (frame.op) {
      case 'connect':
        return this.connect(conn, frame);
      case 'subscribe':
      case 'update':
      case 'unsubscribe':
        if (!conn.connected) {
          throw new FrameError(LiveCode.NOT_CONNECTED_OR_UNKNOWN_REQUEST, LiveText.notConnected);
        }
        if (frame.op === 'unsubscribe') return this.unsubscribeFrame(conn, frame);
        return this.subscribe(conn, frame, frame.op);
      default:
        throw new FrameError(LiveCode.UNKNOWN_OP, LiveText.unknownOp(frame.op));
    }
  }

  /** connect: application id and client key (constant time, as http/credentials.ts), optional master key and session. */
  private async connect(conn: Connection, frame: Record<string, unknown>): Promise<void> {
    if (conn.connected || conn.connecting)
      throw new FrameError(LiveCode.MALFORMED, LiveText.alreadyConnected);
    conn.connecting = true;
    const { options } = this.data.core;
    const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
    const refuse = (code: number, text: string) => {
      this.sendError(conn, errorFrame(code, text));
      conn.ws.close(1008, text.slice(0, 120));
    };
    let master = false;
    const masterKey = str(frame.masterKey);
    if (str(frame.applicationId) !== options.appId) return refuse(LiveCode.PERMISSION, LiveText.unauthorized);
    if (masterKey !== undefined) {
      if (!safeEqual(masterKey, options.masterKey)) return refuse(LiveCode.PERMISSION, LiveText.unauthorized);
      master = true;
    } else {
      const pairs: Array<[string | undefined, string | undefined]> = [
        [str(frame.restAPIKey), options.restAPIKey],
        [str(frame.javascriptKey), options.javascriptKey],
        [str(frame.clientKey), options.clientKey],
      ];
      const anyConfigured = pairs.some(([, configured]) => configured !== undefined);
      let matched = false;
      let mismatched = false;
      for (const [given, configured] of pairs) {
        if (given === undefined || configured === undefined) continue;
        if (safeEqual(given, configured)) matched = true;
        else mismatched = true;
      }
      if ((mismatched && !matched) || (anyConfigured && !matched)) {
        return refuse(LiveCode.PERMISSION, LiveText.unauthorized);
      }
    }
    const sessionToken = str(frame.sessionToken) || undefined;
    const installationId = str(frame.installationId) || null;
    if (sessionToken !== undefined && !master) {
      try {
        await this.callers.resolve({ master: false, sessionToken, installationId });
      } catch (err) {
        if (err instanceof BdsError && err.code === ErrorCode.INVALID_SESSION_TOKEN) {
          return refuse(LiveCode.INVALID_SESSION, LiveText.invalidSession);
        }
        conn.connecting = false;
        throw err;
      }
    }
    if (conn.closed || conn.connected) return;
    conn.connected = true;
    conn.master = master;
    conn.sessionToken = sessionToken;
    conn.installationId = installationId;
    this.send(conn, { op: 'connected', clientId: conn.id });
  }

  private unsubscribeFrame(conn: Connection, frame: Record<string, unknown>): void {
    const requestId = requestIdOf(frame);
    const sub = conn.subs.get(requestId);
    if (!sub) {
      throw new FrameError(
        LiveCode.NOT_CONNECTED_OR_UNKNOWN_REQUEST,
        LiveText.unknownRequestId(requestId),
        requestId,
      );
    }
    this.end(sub);
    this.send(conn, { op: 'unsubscribed', clientId: conn.id, requestId });
  }

  private async subscribe(
    conn: Connection,
    frame: Record<string, unknown>,
    op: 'subscribe' | 'update',
  ): Promise<void> {
    const request = parseSubscription(frame);
    const { requestId } = request;
    let sub = conn.subs.get(requestId);
    if (op === 'subscribe') {
      if (sub) throw new FrameError(LiveCode.MALFORMED, LiveText.requestIdInUse(requestId), requestId);
      if (conn.subs.size >= this.opts.maxSubscriptionsPerConnection) {
        throw new FrameError(
          LiveCode.TOO_MANY,
          LiveText.tooManySubscriptions(this.opts.maxSubscriptionsPerConnection),
          requestId,
        );
      }
      // Reserved at once: a second subscribe with the same id while this one is prepared is refused.
      sub = { conn, requestId, state: undefined, token: null, generation: -1, active: false, ended: false };
      conn.subs.set(requestId, sub);
    } else if (!sub) {
      throw new FrameError(
        LiveCode.NOT_CONNECTED_OR_UNKNOWN_REQUEST,
        LiveText.unknownRequestId(requestId),
        requestId,
      );
    }
    const target = sub;
    const token = request.sessionToken ?? conn.sessionToken ?? null;
    let state: Prepared;
    let generation: number;
    try {
      if (!this.classIsLive(request.className)) {
        throw new FrameError(LiveCode.PERMISSION, LiveText.classNotLive(request.className), requestId);
      }
      generation = this.generation;
      state = await this.prepare(conn, request, token);
    } catch (err) {
      // A failed subscribe frees its id; a failed update leaves the subscription as it was.
      if (op === 'subscribe' && conn.subs.get(requestId) === target) conn.subs.delete(requestId);
      throw err;
    }
    // The connection's next frame waits for this: its answers (subscribed, snapshot, replay) come first.
    await this.enqueue(async () => {
      if (conn.closed || target.ended || conn.subs.get(requestId) !== target) return;
      this.unregister(target);
      target.state = state;
      target.token = conn.master ? null : token;
      target.generation = generation;
      target.active = true;
      this.register(target);
      this.send(conn, { op: 'subscribed', clientId: conn.id, requestId });
      if (request.snapshot) await this.snapshot(target, state);
      if (request.since !== undefined) await this.replay(target, request.since);
    });
  }

  private classIsLive(className: string): boolean {
    if (classNameProblem(className)) return false;
    const names = this.opts.classNames;
    return names.includes('*') || names.includes(className);
  }

  /** The caller of a subscription: master set at connect, else its own token or the connection's. */
  private async callerOf(conn: Connection, token: string | null, requestId: RequestId): Promise<Caller> {
    if (conn.master) return this.callers.resolve({ master: true, installationId: conn.installationId });
    try {
      return await this.callers.resolve({
        master: false,
        sessionToken: token ?? undefined,
        installationId: conn.installationId,
      });
    } catch (err) {
      if (err instanceof BdsError && err.code === ErrorCode.INVALID_SESSION_TOKEN) {
        throw new FrameError(LiveCode.INVALID_SESSION, LiveText.invalidSession, requestId);
      }
      throw err;
    }
  }

  /**
   * Checks a subscription for its caller with the deciders: CLP find (119), a where on a field
   * hidden from the caller or any invalid where or keys (4), then compiles the matchers.
   */
  private async prepare(
    conn: Connection,
    request: SubscriptionRequest,
    token: string | null,
  ): Promise<Prepared> {
    const { requestId, className } = request;
    const caller = await this.callerOf(conn, token, requestId);
    if (className === '_Session' && !caller.isMaster) {
      throw new FrameError(LiveCode.PERMISSION, LiveText.sessionClass, requestId);
    }
    const core = this.data.core;
    const verdict = decideClass({ className, schema: core.schemas.get(className), op: 'find', caller });
    if (!verdict.allowed) {
      throw new FrameError(LiveCode.PERMISSION, verdict.message ?? 'Permission denied.', requestId);
    }
    const { includeDepth, includeCount } = core.options.requestComplexity;
    if (!caller.isMaster) {
      const tooDeep = request.include.find(
        (path) => includeDepth >= 0 && path.split('.').length > includeDepth,
      );
      if (tooDeep !== undefined) {
        throw new FrameError(
          LiveCode.INVALID_QUERY,
          LiveText.include(`${JSON.stringify(tooDeep)} nests deeper than ${includeDepth} levels.`),
          requestId,
        );
      }
      if (includeCount >= 0 && request.include.length > includeCount) {
        throw new FrameError(
          LiveCode.INVALID_QUERY,
          LiveText.include(`at most ${includeCount} paths.`),
          requestId,
        );
      }
    }
    let parsed: QueryNode;
    try {
      parsed = parseWhere(request.where, caller.isMaster ? {} : core.options.requestComplexity);
    } catch (err) {
      throw new FrameError(
        LiveCode.INVALID_QUERY,
        err instanceof Error ? err.message : String(err),
        requestId,
      );
    }
    return this.compile(request, caller, parsed);
  }

  private async compile(request: SubscriptionRequest, caller: Caller, parsed: QueryNode): Promise<Prepared> {
    const { requestId, className } = request;
    const core = this.data.core;
    const schema = core.schemas.get(className);
    // CLP find itself is decided per event (a role change may grant or take it): here only its row condition.
    const verdict = decideClass({ className, schema, op: 'find', caller });
    try {
      const effective = schema ?? EMPTY_SCHEMA(className);
      // As a find: protected fields refused in the where (as REST refuses them), subqueries secured and resolved.
      const resolved = await resolveForMemory(core, caller, effective, parsed);
      return {
        request,
        caller,
        parsed,
        schema,
        matcher: compileMatcher(resolved, effective),
        clpMatcher:
          verdict.allowed && verdict.condition ? compileMatcher(verdict.condition, effective) : null,
      };
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      // A subquery on a class the caller may not find is a permission refusal; the rest is the query's.
      const code =
        err instanceof BdsError &&
        err.code === ErrorCode.OPERATION_FORBIDDEN &&
        !message.includes('not allowed to query')
          ? LiveCode.PERMISSION
          : LiveCode.INVALID_QUERY;
      throw new FrameError(code, message, requestId);
    }
  }

  private register(sub: Subscription): void {
    const className = sub.state!.request.className;
    let set = this.byClass.get(className);
    if (!set) {
      set = new Set();
      this.byClass.set(className, set);
    }
    set.add(sub);
    if (sub.token) {
      let tokens = this.byToken.get(sub.token);
      if (!tokens) {
        tokens = new Set();
        this.byToken.set(sub.token, tokens);
      }
      tokens.add(sub);
    }
  }

  private unregister(sub: Subscription): void {
    if (!sub.state) return;
    const className = sub.state.request.className;
    const set = this.byClass.get(className);
    if (set) {
      set.delete(sub);
      if (set.size === 0) this.byClass.delete(className);
    }
    if (sub.token) {
      const tokens = this.byToken.get(sub.token);
      if (tokens) {
        tokens.delete(sub);
        if (tokens.size === 0) this.byToken.delete(sub.token);
      }
    }
  }

  private end(sub: Subscription): void {
    if (sub.ended) return;
    sub.ended = true;
    sub.active = false;
    this.unregister(sub);
    if (sub.conn.subs.get(sub.requestId) === sub) sub.conn.subs.delete(sub.requestId);
    sub.state = undefined;
  }

  /** Ends a subscription with an error frame that says why (its session ended, its query no longer holds). */
  private endWith(sub: Subscription, code: number, text: string): void {
    if (sub.ended) return;
    const { conn, requestId } = sub;
    this.end(sub);
    this.sendError(conn, errorFrame(code, text, requestId));
  }

  private drop(conn: Connection): void {
    if (conn.closed) return;
    conn.closed = true;
    for (const sub of [...conn.subs.values()]) this.end(sub);
    conn.subs.clear();
    this.connections.delete(conn);
    conn.ws.removeAllListeners('message');
    conn.ws.removeAllListeners('pong');
  }

  private heartbeat(): void {
    for (const conn of this.connections) {
      if (!conn.alive) {
        conn.ws.terminate();
        this.drop(conn);
        continue;
      }
      conn.alive = false;
      try {
        conn.ws.ping();
      } catch {
        this.drop(conn);
      }
    }
  }

  private closeIdle(): void {
    const limit = Date.now() - this.opts.idleTimeoutMs;
    for (const conn of this.connections) {
      if (conn.subs.size === 0 && conn.lastFrameAt < limit) {
        conn.ws.close(1000, 'idle timeout');
        this.drop(conn);
      }
    }
  }

  // --- events ---------------------------------------------------------------------------------

  /** Runs `task` after everything queued before it; answers when it has run (a failure is logged). */
  private enqueue(task: () => Promise<void> | void): Promise<void> {
    this.queue = this.queue.then(task).catch((err: unknown) => {
      this.log.error({ err: err instanceof Error ? err.stack : String(err) }, 'realtime delivery failed');
    });
    return this.queue;
  }

  /** The bus listener: synchronous, in publish order; the deciding happens in the queue. */
  private onWrite(event: WriteEvent): void {
    if (event.className === '_Role') this.generation++;
    if (event.className === '_Session' && event.op !== 'create') {
      this.generation++;
      const token = event.before?.sessionToken;
      if (event.op === 'delete' && typeof token === 'string') {
        this.enqueue(() => this.sessionEnded(token));
      }
    }
    if (event.op === 'purge' || event.objectId === null) return;
    if (!this.classIsLive(event.className)) return;
    const { seq, eventId } = this.ids.next();
    const live: LiveEvent = {
      seq,
      eventId,
      at: Date.now(),
      op: event.op,
      className: event.className,
      objectId: event.objectId,
      before: event.before,
      after: event.after,
    };
    this.retention.push(live);
    if (this.byClass.has(live.className) || this.opts.traceSize > 0) this.enqueue(() => this.fanOut(live));
  }

  private sessionEnded(token: string): void {
    const subs = this.byToken.get(token);
    if (!subs) return;
    for (const sub of [...subs]) this.endWith(sub, LiveCode.INVALID_SESSION, LiveText.sessionEnded);
  }

  private async fanOut(event: LiveEvent): Promise<void> {
    const subs = this.byClass.get(event.className);
    if (!subs && this.opts.traceSize === 0) return;
    const list = subs ? [...subs] : [];
    const entry = this.trace.begin(event.eventId, event.op, event.objectId, event.at, list.length);
    const pending: Array<Promise<void>> = [];
    for (const sub of list) {
      const delivery = this.deliver(sub, event, entry);
      if (delivery) {
        // One subscriber's failure (an include that cannot be read, say) never stops the others.
        pending.push(
          delivery.catch((err: unknown) => {
            this.log.error(
              { err: err instanceof Error ? err.stack : String(err) },
              'realtime delivery failed',
            );
          }),
        );
      }
    }
    if (pending.length > 0) await Promise.all(pending);
    this.trace.record(event.className, entry);
  }

  /** Resolves the caller again after a role or session change; ends the subscription when it no longer holds. */
  private async refresh(sub: Subscription): Promise<boolean> {
    if (sub.generation === this.generation || !sub.state) return !sub.ended;
    const generation = this.generation;
    const state = sub.state;
    if (sub.conn.master) {
      sub.generation = generation;
      return true;
    }
    try {
      const caller = await this.callerOf(sub.conn, sub.token, sub.requestId);
      if (sub.ended || sub.state !== state) return !sub.ended;
      if (caller !== state.caller) sub.state = await this.compile(state.request, caller, state.parsed);
      sub.generation = generation;
      return !sub.ended;
    } catch (err) {
      if (err instanceof FrameError)
        this.endWith(
          sub,
          err.code,
          err.code === LiveCode.INVALID_SESSION ? LiveText.sessionEnded : err.message,
        );
      else throw err;
      return false;
    }
  }

  /** The matchers of a subscription for the class's current schema (a schema change recompiles them). */
  private async current(sub: Subscription): Promise<Prepared | undefined> {
    const state = sub.state;
    if (!state) return undefined;
    const schema = this.data.core.schemas.get(state.request.className);
    if (schema === state.schema) return state;
    try {
      sub.state = await this.compile(state.request, state.caller, state.parsed);
      return sub.state;
    } catch (err) {
      if (err instanceof FrameError) this.endWith(sub, err.code, err.message);
      else throw err;
      return undefined;
    }
  }

  private note(
    entry: TraceEntry | undefined,
    sub: Subscription,
    delivered: DeliveredKind | null,
    filteredBy?: FilterReason,
  ): void {
    if (!entry) return;
    const caller = sub.state?.caller;
    this.trace.note(entry, {
      clientId: sub.conn.id,
      requestId: sub.requestId,
      delivered,
      ...(filteredBy ? { filteredBy } : {}),
      userId: caller?.user?.objectId ?? null,
      master: caller?.isMaster ?? sub.conn.master,
    });
  }

  /**
   * One event for one subscription. Synchronous when the subscription's caller and matchers are
   * current and the event is filtered (the common case); a promise otherwise.
   */
  private deliver(
    sub: Subscription,
    event: LiveEvent,
    entry: TraceEntry | undefined,
  ): Promise<void> | undefined {
    if (!sub.active || sub.ended) return undefined;
    const state = sub.state;
    if (
      !state ||
      sub.generation !== this.generation ||
      state.schema !== this.data.core.schemas.get(state.request.className)
    ) {
      return this.deliverAfterRefresh(sub, event, entry);
    }
    return this.deliverWith(sub, state, event, entry);
  }

  private async deliverAfterRefresh(
    sub: Subscription,
    event: LiveEvent,
    entry: TraceEntry | undefined,
  ): Promise<void> {
    if (!(await this.refresh(sub))) return this.note(entry, sub, null, 'session');
    const state = await this.current(sub);
    if (!state || sub.ended) return this.note(entry, sub, null, 'session');
    await this.deliverWith(sub, state, event, entry);
  }

  private deliverWith(
    sub: Subscription,
    state: Prepared,
    event: LiveEvent,
    entry: TraceEntry | undefined,
  ): Promise<void> | undefined {
    const decision = this.decide(state, event);
    const kind = decision.kind;
    if (!kind) {
      this.note(entry, sub, null, decision.reason);
      return undefined;
    }
    return this.frameFor(sub, state, event, kind, decision.afterReadable, decision.beforeReadable).then(
      (frame) => {
        if (sub.ended || !sub.active) return this.note(entry, sub, null, 'session');
        this.send(sub.conn, frame);
        this.note(entry, sub, kind);
      },
    );
  }

  /**
   * The decision of one event for one subscriber: CLP find for the class (with roles and
   * requiresAuthentication), then per side of the change (the row before and after) the CLP row
   * condition, the row's ACL and the where. Which sides match gives the kind (PROTOCOL: before and
   * after → update, after only → create or enter, before only → leave, deleted → delete).
   */
  private decide(
    state: Prepared,
    event: LiveEvent,
  ): {
    kind: DeliveredKind | null;
    reason?: FilterReason;
    beforeReadable: boolean;
    afterReadable: boolean;
  } {
    const { caller } = state;
    const schema = this.data.core.schemas.get(event.className);
    const clp = decideClass({ className: event.className, schema, op: 'find', caller });
    if (!clp.allowed) return { kind: null, reason: 'clp', beforeReadable: false, afterReadable: false };
    const side = (row: Row | null): FilterReason | 'absent' | null => {
      if (!row) return 'absent';
      if (state.clpMatcher && !state.clpMatcher(row)) return 'clp';
      if (!decideAcl(row.ACL as never, caller, 'read').allowed) return 'acl';
      if (!state.matcher(row)) return 'where';
      return null;
    };
    const before = side(event.before);
    const after = side(event.after);
    const readable = (r: FilterReason | 'absent' | null) => r === null || r === 'where';
    const result = (kind: DeliveredKind | null, reason?: FilterReason | 'absent' | null) => ({
      kind,
      ...(kind === null ? { reason: reason && reason !== 'absent' ? reason : ('kind' as const) } : {}),
      beforeReadable: readable(before),
      afterReadable: readable(after),
    });
    switch (event.op) {
      case 'create':
        return after === null ? result('create') : result(null, after);
      case 'delete':
        return before === null ? result('delete') : result(null, before);
      default: {
        if (before === null && after === null) {
          const watch = state.request.watch;
          if (watch && !watch.some((f) => !sameValue(event.before?.[f], event.after?.[f]))) {
            return result(null, 'kind');
          }
          return result('update');
        }
        if (after === null) return result('enter');
        if (before === null) return result('leave');
        return result(null, after);
      }
    }
  }

  /** The event frame, with this subscriber's own copies of the rows, presented as a find would (protectedFields, keys, include). */
  private async frameFor(
    sub: Subscription,
    state: Prepared,
    event: LiveEvent,
    kind: DeliveredKind,
    afterReadable: boolean,
    beforeReadable: boolean,
  ): Promise<Record<string, unknown>> {
    const present = async (row: Row) => {
      const schema = this.data.core.schemas.get(event.className) ?? EMPTY_SCHEMA(event.className);
      const [out] = await this.data.reads.present(state.caller, schema, [structuredClone(row)], {
        keys: state.request.keys,
        excludeKeys: [],
        include: state.request.include,
      });
      return { className: event.className, ...out };
    };
    const frame: Record<string, unknown> = {
      op: kind,
      clientId: sub.conn.id,
      requestId: sub.requestId,
      eventId: event.eventId,
    };
    const bare = { className: event.className, objectId: event.objectId };
    if (kind === 'delete') {
      frame.object = await present(event.before!);
    } else if (kind === 'leave') {
      // The row as it is now only when the subscriber may still read it (it left the where);
      // otherwise nothing of its new state is shown.
      frame.object = afterReadable ? await present(event.after!) : bare;
      frame.original = await present(event.before!);
    } else {
      frame.object = await present(event.after!);
      if (event.before && beforeReadable) frame.original = await present(event.before);
    }
    return frame;
  }

  /** The rows the subscriber may see that match, as a find by that caller answers them. */
  private async snapshot(sub: Subscription, state: Prepared): Promise<void> {
    const { request, caller } = state;
    const params: Record<string, unknown> = {
      where: request.where,
      limit: this.data.core.options.maxLimit,
    };
    if (request.keys) params.keys = request.keys.join(',');
    if (request.include.length) params.include = request.include.join(',');
    let results: Row[] = [];
    try {
      ({ results } = await this.data.reads.find(ctxOf(caller, 'rest'), request.className, params));
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.endWith(
        sub,
        err instanceof BdsError && err.code === ErrorCode.OPERATION_FORBIDDEN
          ? LiveCode.PERMISSION
          : LiveCode.INVALID_QUERY,
        message,
      );
      return;
    }
    if (sub.ended) return;
    this.send(sub.conn, {
      op: 'snapshot',
      clientId: sub.conn.id,
      requestId: sub.requestId,
      results: results.map((row) => ({ className: request.className, ...row })),
    });
  }

  /** Replays the retained events after `since` that this subscription would have received. */
  private async replay(sub: Subscription, since: string): Promise<void> {
    const seq = this.ids.parse(since);
    const events = seq === undefined ? undefined : this.retention.after(seq, this.ids.last);
    if (!events) {
      this.endWith(sub, LiveCode.RESUME_WINDOW_EXCEEDED, LiveText.resume(since));
      return;
    }
    const className = sub.state?.request.className;
    for (const event of events) {
      if (sub.ended) return;
      if (event.className === className) await this.deliver(sub, event, undefined);
    }
  }

  // --- shutdown ---------------------------------------------------------------------------------

  /** Closes every connection with a close frame (1001), waits briefly for the handshakes, frees everything. */
  close(graceMs = 2000): Promise<void> {
    this.closing ??= (async () => {
      for (const timer of this.timers) clearInterval(timer);
      this.unsubscribe?.();
      const conns = [...this.connections];
      const closed = conns.map(
        (conn) =>
          new Promise<void>((resolve) => {
            if (conn.ws.readyState === conn.ws.CLOSED) return resolve();
            conn.ws.once('close', () => resolve());
            conn.ws.close(1001, LiveText.shuttingDown);
          }),
      );
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all(closed),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, graceMs);
        }),
      ]);
      clearTimeout(timer);
      for (const conn of conns) {
        if (conn.ws.readyState !== conn.ws.CLOSED) conn.ws.terminate();
        this.drop(conn);
      }
      await new Promise<void>((resolve) => this.wss.close(() => resolve()));
      await this.queue;
    })();
    return this.closing;
  }

  /** The delivery trace of a class (master only: the route checks). */
  traceOf(className: string): { className: string; retainedEvents: number; events: TraceEntry[] } {
    return { className, retainedEvents: this.retention.size, events: this.trace.of(className) };
  }
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  return JSON.stringify(a) === JSON.stringify(b);
}
