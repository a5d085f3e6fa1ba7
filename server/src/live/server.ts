import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { LiveCode, LiveText, normalPath } from '@bds/client/protocol';
import { WebSocketServer } from 'ws';
import type { CallerResolver } from '../auth/caller.ts';
import type { Data } from '../data/data.ts';
import { clientAddressOf } from '../kernel/client-address.ts';
import type { Clock } from '../kernel/clock.ts';
import { ctxOf } from '../kernel/context.ts';
import { BdsError, ErrorCode } from '../kernel/errors.ts';
import type { WriteEvent } from '../kernel/events.ts';
import { classNameProblem } from '../kernel/names.ts';
import type { Row } from '../kernel/records.ts';
import type { TraceSink } from '../kernel/trace.ts';
import { type ClientFrame, Connections, frameHead } from './connections.ts';
import { FanOut } from './fan-out.ts';
import { errorFrame, FrameError, parseSubscription, requestIdOf } from './frames.ts';
import { Handshake } from './handshake.ts';
import type { CompiledSubscription, Connection, LiveOptions, LiveTriggers, Subscription } from './model.ts';
import { SubscriptionCheck } from './prepare.ts';
import { type Task, TaskQueue } from './queue.ts';
import { SubscriptionRegistry } from './registry.ts';
import { EventIds, type LiveEvent, Retention } from './retention.ts';
import { DeliveryTrace, type TraceEntry } from './trace.ts';

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
 * event of the bus is decided per subscriber with the access deciders (docs/architecture/realtime.md),
 * in one ordered queue, so that each connection sees events in the order of the application's
 * sequence.
 *
 * LiveQuery is the one face the rest of the service sees. It takes the upgrades, routes each
 * client frame by its op, numbers and retains the bus's events and queues their fan-out, and
 * answers a subscription's snapshot and replay. The work is done by its parts, which never call
 * back into it: connections.ts (sockets and frames), handshake.ts (connect), prepare.ts (a
 * subscription checked and compiled), registry.ts (subscriptions by class and token, kept current),
 * fan-out.ts with decide.ts and event-cache.ts (an event to its subscribers), queue.ts (the order),
 * retention.ts (resume) and trace.ts (the delivery trace).
 */
export class LiveQuery {
  private readonly wss: WebSocketServer;
  private readonly clients: Connections;
  private readonly handshake: Handshake;
  private readonly check: SubscriptionCheck;
  private readonly registry: SubscriptionRegistry;
  private readonly queue: TaskQueue;
  private readonly fanOut: FanOut;
  /** Every open connection (the clients'; tests look at it). */
  private readonly connections: ReadonlySet<Connection>;
  private readonly ids = new EventIds();
  private readonly retention: Retention;
  /**
   * The sequence numbers of the events whose fan-out waits in the queue, oldest first (the queue's
   * order): a subscription that becomes active now still receives them, so its resume point is the
   * event before the oldest of them.
   */
  private readonly pendingFanOuts: number[] = [];
  readonly trace: DeliveryTrace;
  private unsubscribe: (() => void) | undefined;
  private closing: Promise<void> | undefined;
  private readonly opts: LiveOptions;
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
    /** Where each traced event is kept as a line of the request that made its write (GET /logs). */
    sink?: TraceSink,
  ) {
    const { options, log } = data.core;
    this.opts = options.liveQuery;
    this.paths = new Set(
      [options.liveQuery.path, options.mountPath, '/'].flatMap((path) => normalPath(path) ?? []),
    );
    this.addressOf = clientAddressOf(options.trustProxy);
    this.retention = new Retention(this.opts.retentionMaxEvents, this.opts.retentionMs);
    this.trace = new DeliveryTrace(this.opts.traceSize);
    this.clients = new Connections(this.opts, log, {
      handleFrame: (conn, frame) => this.handleFrame(conn, frame),
      connectionClosed: (conn) => {
        for (const sub of [...conn.subs.values()]) this.registry.endQuietly(sub);
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
    this.fanOut = new FanOut(data, this.registry, this.clients, this.trace, this.opts, log, triggers, sink);
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
        return this.subscribeFrame(conn, frame, frame.op);
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
    this.registry.endQuietly(sub);
    this.clients.send(conn, { op: 'unsubscribed', ...frameHead(conn), requestId });
  }

  /** subscribe and update: the query checked for its caller, then registered in the queue. */
  private async subscribeFrame(
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
      if (conn.closed || target.ended || conn.subs.get(requestId) !== target) {
        // An update whose subscription ended meanwhile (that error frame went first) is answered
        // too: every subscribe and update frame gets one answer, which the client library counts on.
        if (op === 'update' && !conn.closed) {
          this.clients.sendError(
            conn,
            errorFrame(
              LiveCode.NOT_CONNECTED_OR_UNKNOWN_REQUEST,
              LiveText.unknownRequestId(requestId),
              requestId,
            ),
          );
        }
        return;
      }
      this.registry.unregister(target);
      target.compiled = compiled;
      target.token = conn.master ? null : token;
      target.generation = generation;
      target.active = true;
      this.registry.register(target);
      // eventId: where a resume of this subscription starts (docs/protocol.md#realtime-frames).
      const eventId = this.ids.format(this.resumePoint());
      this.clients.send(conn, { op: 'subscribed', ...frameHead(conn), requestId, eventId });
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
    if (event.requestId !== undefined) live.requestId = event.requestId;
    this.retention.push(live);
    if (this.registry.subscriptionsOf(live.className) || this.opts.traceSize > 0) {
      live.fanOutPending = true;
      this.pendingFanOuts.push(seq);
      this.enqueue(() => {
        live.fanOutPending = false;
        this.pendingFanOuts.shift();
        return this.fanOut.deliver(live);
      });
    }
  }

  /**
   * The sequence number after which a subscription registered now misses nothing: the events up to
   * it were decided before it was registered, those after it reach it by their fan-out (still in
   * the queue) or, when they had none, by a resume from it.
   */
  private resumePoint(): number {
    const oldestPending = this.pendingFanOuts[0];
    return oldestPending === undefined ? this.ids.last : oldestPending - 1;
  }

  /** The rows the subscriber may see that match, as a find by that caller answers them. */
  private async snapshot(sub: Subscription, compiled: CompiledSubscription): Promise<void> {
    const { request, caller } = compiled;
    let results: Row[] = [];
    try {
      ({ results } = await this.data.reads.find(
        ctxOf(caller, 'rest'),
        request.className,
        this.check.findParams(request),
        compiled.answered,
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
        await this.fanOut.replayTo(sub, event);
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

  /**
   * The resume window as it is now (master only: the route checks): its bounds, how many events it
   * keeps and the oldest and newest of them (null when it keeps none).
   */
  resumeWindow(): {
    retentionMs: number;
    retentionMaxEvents: number;
    count: number;
    oldest: { eventId: string; at: string } | null;
    newest: { eventId: string; at: string } | null;
  } {
    const { count, oldest, newest } = this.retention.span();
    const end = (e: LiveEvent | undefined) =>
      e ? { eventId: e.eventId, at: new Date(e.at).toISOString() } : null;
    return {
      retentionMs: this.opts.retentionMs,
      retentionMaxEvents: this.opts.retentionMaxEvents,
      count,
      oldest: end(oldest),
      newest: end(newest),
    };
  }

  /** The delivery trace of a class (master only: the route checks). */
  traceOf(className: string): { className: string; retainedEvents: number; events: TraceEntry[] } {
    return { className, retainedEvents: this.retention.size, events: this.trace.of(className) };
  }
}
