import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { normalPath } from '@bds/client/protocol';
import { WebSocketServer } from 'ws';
import type { CallerResolver } from '../auth/caller.ts';
import type { Data } from '../data/data.ts';
import type { Caller } from '../kernel/caller.ts';
import { clientAddressOf } from '../kernel/client-address.ts';
import type { Clock } from '../kernel/clock.ts';
import { ctxOf } from '../kernel/context.ts';
import { BdsError, ErrorCode } from '../kernel/errors.ts';
import type { WriteEvent } from '../kernel/events.ts';
import type { Logger } from '../kernel/log.ts';
import { classNameProblem } from '../kernel/names.ts';
import type { Row } from '../kernel/records.ts';
import type { ClassSubscriptions } from './class-index.ts';
import { type ClientFrame, Connections, frameHead } from './connections.ts';
import { decideEvent } from './decide.ts';
import { EventCache } from './event-cache.ts';
import { FrameError, LiveCode, LiveText, parseSubscription, requestIdOf } from './frames.ts';
import { Handshake } from './handshake.ts';
import type { CompiledSubscription, Connection, LiveOptions, LiveTriggers, Subscription } from './model.ts';
import { SubscriptionCheck, schemaOrEmpty } from './prepare.ts';
import { type Task, TaskQueue } from './queue.ts';
import { SubscriptionRegistry } from './registry.ts';
import { EventIds, type LiveEvent, Retention } from './retention.ts';
import {
  type DeliveredKind,
  DeliveryTrace,
  type FilterReason,
  MAX_TRACED,
  type TraceEntry,
} from './trace.ts';

/** Sizes of the registry, for tests and the memory check. */
export interface LiveSizes {
  connections: number;
  subscriptions: number;
  classes: number;
  tokens: number;
  retained: number;
}

/**
 * Realtime subscriptions (LiveQuery): a WebSocket server on the service's HTTP server. Every write
 * event of the bus is decided per subscriber with the access deciders (docs/architecture.md
 * "Realtime"), in one ordered queue, so that each connection sees events in the order of the
 * application's sequence.
 */
export class LiveQuery {
  private readonly wss: WebSocketServer;
  private readonly clients: Connections;
  private readonly handshake: Handshake;
  private readonly check: SubscriptionCheck;
  private readonly registry: SubscriptionRegistry;
  private readonly queue: TaskQueue;
  /** Every open connection (the clients'; tests look at it). */
  private readonly connections: ReadonlySet<Connection>;
  private readonly ids = new EventIds();
  private readonly retention: Retention;
  readonly trace: DeliveryTrace;
  private unsubscribe: (() => void) | undefined;
  private closing: Promise<void> | undefined;
  private readonly opts: LiveOptions;
  private readonly log: Logger;
  /**
   * The paths the endpoint answers at, in normal form: `liveQuery.path`, the mount path, where the
   * stock SDKs look by default (their server URL with `ws:`), and the server's root, where the
   * incumbent's own SDK tests connect (it takes every path).
   */
  private readonly paths: ReadonlySet<string>;
  private readonly addressOf: ReturnType<typeof clientAddressOf>;

  constructor(
    private readonly data: Data,
    callers: CallerResolver,
    /** The time sessions expire by (the resolver's, so REST and realtime agree on the instant). */
    clock: Clock = callers.clock,
    triggers?: LiveTriggers,
  ) {
    const { options, log } = data.core;
    this.opts = options.liveQuery;
    this.log = log;
    this.paths = new Set(
      [options.liveQuery.path, options.mountPath, '/'].flatMap((path) => normalPath(path) ?? []),
    );
    this.addressOf = clientAddressOf(options.trustProxy);
    this.retention = new Retention(this.opts.retentionMaxEvents, this.opts.retentionMs);
    this.trace = new DeliveryTrace(this.opts.traceSize);
    this.clients = new Connections(this.opts, log, {
      handleFrame: (conn, frame) => this.handleFrame(conn, frame),
      connectionClosed: (conn) => {
        for (const sub of [...conn.subs.values()]) this.registry.end(sub);
      },
    });
    this.connections = this.clients.all;
    this.handshake = new Handshake(options, callers, this.clients, triggers);
    this.check = new SubscriptionCheck(data, callers, triggers);
    this.queue = new TaskQueue(log);
    this.registry = new SubscriptionRegistry(
      data.core.schemas,
      this.check,
      this.clients,
      callers,
      clock,
      this.queue,
      log,
    );
    this.wss = new WebSocketServer({
      noServer: true,
      // Frames up to 16x the limit are read and answered 155; larger ones close the socket (1009).
      maxPayload: this.opts.maxFrameBytes * 16,
      perMessageDeflate: false,
    });
    this.unsubscribe = data.core.events.subscribe((event) => this.onWrite(event), {
      name: 'realtime',
      phase: 'fanOut',
    });
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
      classes: this.registry.classes,
      tokens: this.registry.tokens,
      retained: this.retention.size,
    };
  }

  /**
   * The `upgrade` of the HTTP server: takes requests for `liveQuery.path`, the mount path and the
   * root, decided on the normal form of the path (so `/api/` and `//api` are `/api`, as REST routes
   * them).
   */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const url = req.url ?? '';
    const query = url.indexOf('?');
    const path = normalPath(query < 0 ? url : url.slice(0, query));
    if (path === undefined || !this.paths.has(path) || !this.enabled) return false;
    if (this.closing) {
      socket.end('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return true;
    }
    const ip = this.addressOf(req.socket.remoteAddress, req.headers['x-forwarded-for']) ?? null;
    this.wss.handleUpgrade(req, socket, head, (ws) => this.clients.open(ws, ip));
    return true;
  }

  /** One frame of a connection, by its op (connections.ts hands them over one at a time, in order). */
  private async handleFrame(conn: Connection, frame: ClientFrame): Promise<void> {
    switch (frame.op) {
      case 'connect':
        return this.handshake.connect(conn, frame);
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
    this.registry.end(sub);
    this.clients.send(conn, { op: 'unsubscribed', ...frameHead(conn), requestId });
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
      sub = {
        conn,
        requestId,
        compiled: undefined,
        token: null,
        generation: -1,
        active: false,
        ended: false,
        indexedAs: null,
        groupedAs: null,
        ordinal: -1,
        candidateOf: -1,
      };
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
    let compiled: CompiledSubscription;
    let generation: number;
    try {
      if (!this.classIsLive(request.className)) {
        throw new FrameError(LiveCode.PERMISSION, LiveText.classNotLive(request.className), requestId);
      }
      generation = this.registry.generation;
      compiled = await this.check.prepare(conn, request, token, op);
    } catch (err) {
      // A failed subscribe frees its id; a failed update leaves the subscription as it was.
      if (op === 'subscribe' && conn.subs.get(requestId) === target) conn.subs.delete(requestId);
      throw err;
    }
    // The connection's next frame waits for this: its answers (subscribed, snapshot, replay) come first.
    await this.enqueue(async () => {
      if (conn.closed || target.ended || conn.subs.get(requestId) !== target) return;
      this.registry.unregister(target);
      target.compiled = compiled;
      target.token = conn.master ? null : token;
      target.generation = generation;
      target.active = true;
      this.registry.register(target);
      this.clients.send(conn, { op: 'subscribed', ...frameHead(conn), requestId });
      if (request.snapshot) await this.snapshot(target, compiled);
      if (request.since !== undefined) await this.replay(target, request.since);
    });
  }

  private classIsLive(className: string): boolean {
    if (classNameProblem(className)) return false;
    const names = this.opts.classNames;
    return names.includes('*') || names.includes(className);
  }

  // --- events ---------------------------------------------------------------------------------

  /** Runs `task` after everything queued before it; answers when it has run (a failure is logged). */
  private enqueue(task: Task): Promise<void> {
    return this.queue.enqueue(task);
  }

  /** The bus listener: synchronous, in publish order; the deciding happens in the queue. */
  private onWrite(event: WriteEvent): void {
    this.registry.followWrite(event);
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
    if (this.registry.byClass.has(live.className) || this.opts.traceSize > 0) {
      live.fanOutPending = true;
      this.enqueue(() => {
        live.fanOutPending = false;
        return this.fanOut(live);
      });
    }
  }

  /**
   * One event for the subscriptions of its class. Only the candidates are decided: subscriptions
   * without an indexed equality, and those whose indexed key the row holds before or after the
   * change (any other cannot match the where on either side, so it receives nothing). The others
   * are only counted for the delivery trace, with the reason the full decision gives (CLP, ACL or
   * where, in that order): one by one while the trace lists subscriptions, then by caller.
   *
   * While a subscription of the class may be stale (a role or session change, a schema change, one
   * registered stale), every subscription is visited in order and a stale one decided in full, as it
   * must be refreshed (which may end it) before this event.
   */
  private async fanOut(event: LiveEvent): Promise<void> {
    // A session that expired since the last check ends before this event is decided.
    if (this.registry.sessionsMayBeDue) await this.registry.expireSessions();
    const subs = this.registry.byClass.get(event.className);
    if (!subs && this.opts.traceSize === 0) return;
    const entry = this.trace.begin(event.eventId, event.op, event.objectId, event.at, subs?.size ?? 0);
    const pending: Array<Promise<void>> = [];
    if (subs) {
      const ctx = new EventCache(this.data.core.schemas, event);
      const fresh = subs.freshAt;
      if (fresh && fresh.generation === this.registry.generation && fresh.schema === ctx.schema) {
        this.fanOutFresh(subs, event, entry, ctx, pending);
      } else {
        const generation = this.registry.generation;
        if (this.fanOutAll(subs, event, entry, ctx, pending))
          subs.freshAt = { generation, schema: ctx.schema };
      }
    }
    if (pending.length > 0) await Promise.all(pending);
    this.trace.record(event.className, entry);
  }

  /** Decides one subscription for an event: a candidate in full, another only noted with its reason. */
  private visit(
    sub: Subscription,
    candidate: boolean,
    event: LiveEvent,
    entry: TraceEntry,
    ctx: EventCache,
    pending: Array<Promise<void>>,
  ): void {
    const state = sub.compiled;
    if (!candidate && state) {
      if (this.opts.traceSize > 0) this.note(entry, sub, null, ctx.reasonOutsideFor(state));
      return;
    }
    const delivery = this.deliver(sub, event, entry, ctx);
    if (delivery) {
      // One subscriber's failure (an include that cannot be read, say) never stops the others.
      pending.push(
        delivery.catch((err: unknown) => {
          this.log.error({ err: err instanceof Error ? err.stack : String(err) }, 'realtime delivery failed');
        }),
      );
    }
  }

  /** Every subscription in order; answers whether all of them were current (none needed a refresh). */
  private fanOutAll(
    subs: ClassSubscriptions<Subscription, Caller>,
    event: LiveEvent,
    entry: TraceEntry,
    ctx: EventCache,
    pending: Array<Promise<void>>,
  ): boolean {
    const seq = event.seq;
    subs.candidates(event.before, event.after, (sub) => {
      sub.candidateOf = seq;
    });
    let allFresh = true;
    // Nothing registers a subscription during this synchronous loop (that happens in the queue);
    // one ended here (its connection dropped) is no longer visited, as it would be skipped.
    for (const sub of subs.all) {
      if (!sub.active || sub.ended) continue;
      const state = sub.compiled;
      const current = !!state && sub.generation === this.registry.generation && state.schema === ctx.schema;
      if (!current) allFresh = false;
      this.visit(
        sub,
        !current || sub.indexedAs === null || sub.candidateOf === seq,
        event,
        entry,
        ctx,
        pending,
      );
    }
    return allFresh;
  }

  /**
   * Every subscription is current: in order while the trace lists subscriptions, then only the
   * candidates and the special ones (in order), and the plain rest counted by caller.
   */
  private fanOutFresh(
    subs: ClassSubscriptions<Subscription, Caller>,
    event: LiveEvent,
    entry: TraceEntry,
    ctx: EventCache,
    pending: Array<Promise<void>>,
  ): void {
    const seq = event.seq;
    const candidates: Subscription[] = [];
    subs.candidates(event.before, event.after, (sub) => {
      if (sub.candidateOf === seq) return;
      sub.candidateOf = seq;
      candidates.push(sub);
    });
    const traced = this.opts.traceSize > 0;
    // Listed one by one, in order, until the trace's list is full.
    let last = -1;
    const seen = new Map<Caller, number>();
    if (traced) {
      for (const sub of subs.all) {
        if (entry.deliveries.length >= MAX_TRACED) break;
        last = sub.ordinal;
        if (!sub.active || sub.ended) continue;
        if (sub.groupedAs !== null) seen.set(sub.groupedAs, (seen.get(sub.groupedAs) ?? 0) + 1);
        this.visit(sub, sub.indexedAs === null || sub.candidateOf === seq, event, entry, ctx, pending);
      }
    }
    // The rest: candidates and special ones in order; plain ones that are no candidate by caller.
    const rest: Subscription[] = [];
    for (const sub of candidates) {
      if (sub.ordinal <= last) continue;
      rest.push(sub);
      if (sub.groupedAs !== null) seen.set(sub.groupedAs, (seen.get(sub.groupedAs) ?? 0) + 1);
    }
    for (const sub of subs.special) if (sub.ordinal > last && sub.candidateOf !== seq) rest.push(sub);
    rest.sort((a, b) => a.ordinal - b.ordinal);
    for (const sub of rest) {
      if (!sub.active || sub.ended) continue;
      this.visit(sub, sub.indexedAs === null || sub.candidateOf === seq, event, entry, ctx, pending);
    }
    if (!traced) return;
    for (const [caller, n] of subs.groups) {
      const left = n - (seen.get(caller) ?? 0);
      if (left > 0) this.trace.countMany(entry, ctx.reasonOutsideOf(caller), left);
    }
  }

  private note(
    entry: TraceEntry | undefined,
    sub: Subscription,
    delivered: DeliveredKind | null,
    filteredBy?: FilterReason,
  ): void {
    if (!entry) return;
    if (entry.deliveries.length >= MAX_TRACED) {
      this.trace.count(entry, delivered, filteredBy);
      return;
    }
    const caller = sub.compiled?.caller;
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
    ctx: EventCache,
  ): Promise<void> | undefined {
    if (!sub.active || sub.ended) return undefined;
    const state = sub.compiled;
    if (
      !state ||
      sub.generation !== this.registry.generation ||
      state.schema !== this.data.core.schemas.get(state.request.className)
    ) {
      return this.deliverAfterRefresh(sub, event, entry, ctx);
    }
    return this.deliverWith(sub, state, event, entry, ctx);
  }

  private async deliverAfterRefresh(
    sub: Subscription,
    event: LiveEvent,
    entry: TraceEntry | undefined,
    ctx: EventCache,
  ): Promise<void> {
    if (!(await this.registry.refreshCaller(sub))) return this.note(entry, sub, null, 'session');
    const state = await this.registry.compiledForCurrentSchema(sub);
    if (!state || sub.ended) return this.note(entry, sub, null, 'session');
    await this.deliverWith(sub, state, event, entry, ctx);
  }

  private deliverWith(
    sub: Subscription,
    state: CompiledSubscription,
    event: LiveEvent,
    entry: TraceEntry | undefined,
    ctx: EventCache,
  ): Promise<void> | undefined {
    const decision = decideEvent(state, event, ctx);
    const kind = decision.kind;
    if (!kind) {
      this.note(entry, sub, null, decision.reason);
      return undefined;
    }
    return this.frameFor(sub, state, event, kind, decision.afterReadable, decision.beforeReadable, ctx).then(
      (frame) => {
        if (sub.ended || !sub.active) return this.note(entry, sub, null, 'session');
        this.clients.sendEvent(sub.conn, frame);
        this.note(entry, sub, kind);
      },
    );
  }

  /** The event frame, with this subscriber's own copies of the rows, presented as a find would (protectedFields, keys, include). */
  private async frameFor(
    sub: Subscription,
    state: CompiledSubscription,
    event: LiveEvent,
    kind: DeliveredKind,
    afterReadable: boolean,
    beforeReadable: boolean,
    ctx: EventCache,
  ): Promise<string> {
    const present = (row: Row, side: 'before' | 'after'): Promise<string> =>
      ctx.presented(state, side, async () => {
        const schema = schemaOrEmpty(this.data.core.schemas, event.className);
        const [out] = await this.data.reads.present(state.caller, schema, [structuredClone(row)], {
          keys: state.request.keys,
          excludeKeys: [],
          include: state.request.include,
        });
        return JSON.stringify({ className: event.className, ...out });
      });
    // The frame as JSON.stringify writes it (op, clientId, requestId, eventId, object, original):
    // each subscriber's own text, built from the rows as its caller may see them.
    let object: string;
    let original: string | undefined;
    if (kind === 'delete') {
      object = await present(event.before!, 'before');
    } else if (kind === 'leave') {
      // The row as it is now only when the subscriber may still read it (it left the where);
      // otherwise nothing of its new state is shown.
      object = afterReadable
        ? await present(event.after!, 'after')
        : JSON.stringify({ className: event.className, objectId: event.objectId });
      original = await present(event.before!, 'before');
    } else {
      object = await present(event.after!, 'after');
      if (event.before && beforeReadable) original = await present(event.before, 'before');
    }
    const { conn } = sub;
    const installation =
      conn.installationId === null ? '' : `,"installationId":${JSON.stringify(conn.installationId)}`;
    const head = `{"op":${JSON.stringify(kind)},"clientId":${conn.id}${installation},"requestId":${JSON.stringify(sub.requestId)},"eventId":${JSON.stringify(event.eventId)}`;
    return `${head},"object":${object}${original === undefined ? '' : `,"original":${original}`}}`;
  }

  /** The rows the subscriber may see that match, as a find by that caller answers them. */
  private async snapshot(sub: Subscription, state: CompiledSubscription): Promise<void> {
    const { request, caller } = state;
    let results: Row[] = [];
    try {
      ({ results } = await this.data.reads.find(
        ctxOf(caller, 'rest'),
        request.className,
        this.check.findParams(request),
        state.answered,
      ));
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.registry.endWithError(
        sub,
        err instanceof BdsError && err.code === ErrorCode.OPERATION_FORBIDDEN
          ? LiveCode.PERMISSION
          : LiveCode.INVALID_QUERY,
        message,
      );
      return;
    }
    if (sub.ended) return;
    this.clients.send(sub.conn, {
      op: 'snapshot',
      ...frameHead(sub.conn),
      requestId: sub.requestId,
      results: results.map((row) => ({ className: request.className, ...row })),
    });
  }

  /** Replays the retained events after `since` that this subscription would have received. */
  private async replay(sub: Subscription, since: string): Promise<void> {
    const seq = this.ids.parse(since);
    const events = seq === undefined ? undefined : this.retention.after(seq, this.ids.last);
    if (!events) {
      this.registry.endWithError(sub, LiveCode.RESUME_WINDOW_EXCEEDED, LiveText.resume(since));
      return;
    }
    const className = sub.compiled?.request.className;
    for (const event of events) {
      if (sub.ended) return;
      // Published while this subscribe waited in the queue: its own fan-out, still to come, reaches
      // the subscription (registered by now), so replaying it too would send it twice.
      if (event.fanOutPending) continue;
      if (event.className === className) {
        await this.deliver(sub, event, undefined, new EventCache(this.data.core.schemas, event));
      }
    }
  }

  // --- shutdown ---------------------------------------------------------------------------------

  /** Closes every connection with a close frame (1001), waits briefly for the handshakes, frees everything. */
  close(graceMs = 2000): Promise<void> {
    this.closing ??= (async () => {
      this.registry.stop();
      this.unsubscribe?.();
      await this.clients.closeAll(graceMs);
      await new Promise<void>((resolve) => this.wss.close(() => resolve()));
      await this.queue.drained;
    })();
    return this.closing;
  }

  /**
   * The events of other instances that this one never received (the Redis stream was trimmed past
   * them): a `since` from before now can no longer be answered in full, so it answers 5.
   */
  forgetHistory(): void {
    this.retention.holeAfter(this.ids.last);
  }

  /** The delivery trace of a class (master only: the route checks). */
  traceOf(className: string): { className: string; retainedEvents: number; events: TraceEntry[] } {
    return { className, retainedEvents: this.retention.size, events: this.trace.of(className) };
  }
}
