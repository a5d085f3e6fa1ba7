/**
 * Fan-out: one event to the subscriptions of its class, in the order they subscribed. The class
 * index (class-index.ts) names the candidates; each is decided (decide.ts, with the per-caller facts
 * of event-cache.ts) after the registry has refreshed it when its caller or schema moved; an event
 * that passed goes through cloud code's afterLiveQueryEvent when its class has one (which may keep
 * it from that subscriber or change its rows, never its access decision), is presented as a find by
 * that caller would answer it and sent corked (connections.ts); every subscription's outcome goes
 * to the delivery trace (trace.ts).
 */
import type { Data } from '../data/data.ts';
import { stripSecrets } from '../data/reads.ts';
import { type Caller, MASTER } from '../kernel/caller.ts';
import { BdsError } from '../kernel/errors.ts';
import type { Logger } from '../kernel/log.ts';
import type { Row } from '../kernel/records.ts';
import type { TraceSink } from '../kernel/trace.ts';
import type { SchemaRegistry } from '../schema/registry.ts';
import type { ClassSubscriptions } from './class-index.ts';
import type { Connections } from './connections.ts';
import { decideEvent } from './decide.ts';
import { EventCache } from './event-cache.ts';
import type { CompiledSubscription, LiveOptions, LiveTriggers, Subscription } from './model.ts';
import { schemaOrEmpty } from './prepare.ts';
import type { SubscriptionRegistry } from './registry.ts';
import type { LiveEvent } from './retention.ts';
import {
  type DeliveredKind,
  type DeliveryTrace,
  type FilterReason,
  MAX_TRACED,
  type TraceEntry,
} from './trace.ts';

export class FanOut {
  private readonly schemas: SchemaRegistry;
  /** The counts of the event being fanned out, for afterLiveQueryEvent. */
  private counted: { seq: number; clients: number; subscriptions: number } | undefined;

  constructor(
    private readonly data: Data,
    private readonly registry: SubscriptionRegistry,
    private readonly clients: Connections,
    private readonly trace: DeliveryTrace,
    private readonly opts: LiveOptions,
    private readonly log: Logger,
    /** Cloud code's afterLiveQueryEvent (none without a cloud module). */
    private readonly triggers?: LiveTriggers,
    private readonly sink?: TraceSink,
  ) {
    this.schemas = data.core.schemas;
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
  async deliver(event: LiveEvent): Promise<void> {
    // A session that expired since the last check ends before this event is decided.
    if (this.registry.sessionsMayBeDue) await this.registry.expireSessions();
    const subs = this.registry.subscriptionsOf(event.className);
    if (!subs && this.opts.traceSize === 0) return;
    const entry = this.trace.startEntry(event.eventId, event.op, event.objectId, event.at, subs?.size ?? 0);
    const pending: Array<Promise<void>> = [];
    if (subs) {
      const cache = new EventCache(this.schemas, event);
      const fresh = subs.freshAt;
      if (fresh && fresh.generation === this.registry.generation && fresh.schema === cache.schema) {
        this.fanOutToCandidates(subs, event, entry, cache, pending);
      } else {
        const generation = this.registry.generation;
        if (this.fanOutToEvery(subs, event, entry, cache, pending))
          subs.freshAt = { generation, schema: cache.schema };
      }
    }
    if (pending.length > 0) await Promise.all(pending);
    this.trace.keepEntry(event.className, entry);
    // An event no subscription heard is no line: a request's lines show the deliveries it caused.
    if (this.sink && event.requestId !== undefined && entry.subscriptions > 0) this.keepLine(event, entry);
  }

  /** The fan-out of a request's write, as a line of that request (GET /logs/<requestId>). */
  private keepLine(event: LiveEvent, entry: TraceEntry): void {
    const reasons = Object.entries(entry.filtered)
      .filter(([, n]) => n > 0)
      .map(([reason, n]) => `${reason} ${n}`);
    const filtered = reasons.length ? `, filtered ${reasons.join(', ')}` : '';
    this.sink!.keep({
      requestId: event.requestId!,
      kind: 'realtime',
      level: 'info',
      text: `realtime ${event.op} ${event.className}/${event.objectId}: ${entry.subscriptions} subscriptions, delivered to ${entry.delivered}${filtered}`,
    });
  }

  /** One retained event for one subscription (a resume with `since`): decided as the fan-out decides it, not traced. */
  replayTo(sub: Subscription, event: LiveEvent): Promise<void> | undefined {
    return this.deliverTo(sub, event, undefined, new EventCache(this.schemas, event));
  }

  /** Decides one subscription for an event: a candidate in full, another only traced with its reason. */
  private decideSubscription(
    sub: Subscription,
    candidate: boolean,
    event: LiveEvent,
    entry: TraceEntry,
    cache: EventCache,
    pending: Array<Promise<void>>,
  ): void {
    const compiled = sub.compiled;
    if (!candidate && compiled) {
      if (this.opts.traceSize > 0) this.traceDelivery(entry, sub, null, cache.reasonOutsideFor(compiled));
      return;
    }
    const delivery = this.deliverTo(sub, event, entry, cache);
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
  private fanOutToEvery(
    subs: ClassSubscriptions<Subscription, Caller>,
    event: LiveEvent,
    entry: TraceEntry,
    cache: EventCache,
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
      const compiled = sub.compiled;
      const current =
        !!compiled && sub.generation === this.registry.generation && compiled.schema === cache.schema;
      if (!current) allFresh = false;
      this.decideSubscription(
        sub,
        !current || sub.indexedAs === null || sub.candidateOf === seq,
        event,
        entry,
        cache,
        pending,
      );
    }
    return allFresh;
  }

  /**
   * Every subscription is current: in order while the trace lists subscriptions, then only the
   * candidates and the special ones (in order), and the plain rest counted by caller.
   */
  private fanOutToCandidates(
    subs: ClassSubscriptions<Subscription, Caller>,
    event: LiveEvent,
    entry: TraceEntry,
    cache: EventCache,
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
        this.decideSubscription(
          sub,
          sub.indexedAs === null || sub.candidateOf === seq,
          event,
          entry,
          cache,
          pending,
        );
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
      this.decideSubscription(
        sub,
        sub.indexedAs === null || sub.candidateOf === seq,
        event,
        entry,
        cache,
        pending,
      );
    }
    if (!traced) return;
    for (const [caller, n] of subs.groups) {
      const left = n - (seen.get(caller) ?? 0);
      if (left > 0) this.trace.countUnlistedFiltered(entry, cache.reasonOutsideOf(caller), left);
    }
  }

  /** A subscription's outcome in the event's trace entry (none for a replay): listed, or past `MAX_TRACED` counted. */
  private traceDelivery(
    entry: TraceEntry | undefined,
    sub: Subscription,
    delivered: DeliveredKind | null,
    filteredBy?: FilterReason,
  ): void {
    if (!entry) return;
    if (entry.deliveries.length >= MAX_TRACED) {
      this.trace.countUnlisted(entry, delivered, filteredBy);
      return;
    }
    const caller = sub.compiled?.caller;
    this.trace.addDelivery(entry, {
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
  private deliverTo(
    sub: Subscription,
    event: LiveEvent,
    entry: TraceEntry | undefined,
    cache: EventCache,
  ): Promise<void> | undefined {
    if (!sub.active || sub.ended) return undefined;
    const compiled = sub.compiled;
    if (!compiled || !this.registry.isCurrent(sub, compiled)) {
      return this.refreshThenDeliver(sub, event, entry, cache);
    }
    return this.decideAndSend(sub, compiled, event, entry, cache);
  }

  private async refreshThenDeliver(
    sub: Subscription,
    event: LiveEvent,
    entry: TraceEntry | undefined,
    cache: EventCache,
  ): Promise<void> {
    if (!(await this.registry.refreshCaller(sub))) return this.traceDelivery(entry, sub, null, 'session');
    const compiled = await this.registry.compiledForCurrentSchema(sub);
    if (!compiled || sub.ended) return this.traceDelivery(entry, sub, null, 'session');
    await this.decideAndSend(sub, compiled, event, entry, cache);
  }

  private decideAndSend(
    sub: Subscription,
    compiled: CompiledSubscription,
    event: LiveEvent,
    entry: TraceEntry | undefined,
    cache: EventCache,
  ): Promise<void> | undefined {
    const decision = decideEvent(compiled, event, cache);
    const kind = decision.kind;
    if (!kind) {
      this.traceDelivery(entry, sub, null, decision.reason);
      return undefined;
    }
    const rows = frameRows(event, kind, decision.afterReadable, decision.beforeReadable);
    const send = (frame: string) => {
      if (sub.ended || !sub.active) return this.traceDelivery(entry, sub, null, 'session');
      this.clients.sendEvent(sub.conn, frame);
      this.traceDelivery(entry, sub, kind);
    };
    if (this.triggers?.hasAfterLiveQueryEvent(event.className)) {
      return this.afterLiveQueryEvent(sub, compiled, event, kind, rows).then(async (answered) => {
        if (!answered) return this.traceDelivery(entry, sub, null, 'cloud');
        send(await this.eventFrameText(sub, compiled, event, kind, answered, cache));
      });
    }
    return this.eventFrameText(sub, compiled, event, kind, rows, cache).then(send);
  }

  /**
   * Cloud code's afterLiveQueryEvent for one subscriber the event passed (its access decided): the
   * rows its frame would be built from, as the handlers see them (without the password); the rows
   * they leave are what its frame is built from, presented as any event's, or none when they kept
   * the event from it. A handler that throws keeps the event from that subscriber and is logged.
   */
  private async afterLiveQueryEvent(
    sub: Subscription,
    compiled: CompiledSubscription,
    event: LiveEvent,
    kind: DeliveredKind,
    rows: FrameRows,
  ): Promise<FrameRows | undefined> {
    const { className } = event;
    const wire = (row: Row): Row => {
      const copy = structuredClone(row);
      stripSecrets(MASTER, className, [copy]);
      return { ...copy, className };
    };
    const counts = this.counts(event);
    try {
      const answer = await this.triggers!.afterLiveQueryEvent(
        { caller: compiled.caller, context: {}, ip: sub.conn.ip },
        {
          event: kind,
          object: rows.object ? wire(rows.object.row) : { className, objectId: event.objectId },
          original: rows.original && wire(rows.original.row),
          useMasterKey: sub.conn.master,
          sessionToken: sub.token ?? undefined,
          ...counts,
        },
      );
      if (!answer.send) return undefined;
      const own = (row: Row): FrameRow => {
        const { className: _className, ...fields } = row;
        return { row: fields };
      };
      return { object: own(answer.object), original: answer.original && own(answer.original) };
    } catch (err) {
      if (!(err instanceof BdsError)) throw err;
      this.log.error(
        { className, trigger: 'afterLiveQueryEvent', code: err.code, err: err.message },
        'cloud trigger failed',
      );
      return undefined;
    }
  }

  /** Open connections and subscriptions (afterLiveQueryEvent's `clients`, `subscriptions`), counted once per event. */
  private counts(event: LiveEvent): { clients: number; subscriptions: number } {
    if (this.counted?.seq !== event.seq) {
      let subscriptions = 0;
      for (const conn of this.clients.all) subscriptions += conn.subs.size;
      this.counted = { seq: event.seq, clients: this.clients.all.size, subscriptions };
    }
    return { clients: this.counted.clients, subscriptions: this.counted.subscriptions };
  }

  /**
   * The event frame, with this subscriber's own copies of the rows, presented as a find would
   * (protectedFields, keys, include). A side of the event is presented once per caller (the event
   * cache); rows cloud code answered, for this subscriber only.
   */
  private async eventFrameText(
    sub: Subscription,
    compiled: CompiledSubscription,
    event: LiveEvent,
    kind: DeliveredKind,
    rows: FrameRows,
    cache: EventCache,
  ): Promise<string> {
    const present = ({ row, side }: FrameRow): Promise<string> => {
      const make = async () => {
        const schema = schemaOrEmpty(this.schemas, event.className);
        const [out] = await this.data.reads.present(compiled.caller, schema, [structuredClone(row)], {
          keys: compiled.request.keys,
          excludeKeys: [],
          include: compiled.request.include,
        });
        return JSON.stringify({ className: event.className, ...out });
      };
      return side ? cache.presented(compiled, side, make) : make();
    };
    // The frame as JSON.stringify writes it (op, clientId, requestId, eventId, object, original):
    // each subscriber's own text, built from the rows as its caller may see them.
    const object = rows.object
      ? await present(rows.object)
      : JSON.stringify({ className: event.className, objectId: event.objectId });
    const original = rows.original && (await present(rows.original));
    const { conn } = sub;
    const installation =
      conn.installationId === null ? '' : `,"installationId":${JSON.stringify(conn.installationId)}`;
    const head = `{"op":${JSON.stringify(kind)},"clientId":${conn.id}${installation},"requestId":${JSON.stringify(sub.requestId)},"eventId":${JSON.stringify(event.eventId)}`;
    return `${head},"object":${object}${original === undefined ? '' : `,"original":${original}`}}`;
  }
}

/** A row a frame is built from: a side of the event (presented once per caller), or cloud code's answer. */
interface FrameRow {
  row: Row;
  side?: 'before' | 'after';
}

/** The rows of a subscriber's frame; `object` null: only its className and objectId. */
interface FrameRows {
  object: FrameRow | null;
  original: FrameRow | undefined;
}

/**
 * Which rows a frame of this kind shows: a delete the row before; a leave the row as it is now only
 * when the subscriber may still read it (it left the where), otherwise nothing of its new state, and
 * the row before; the others the row now, and the row before when the subscriber could read it.
 */
function frameRows(
  event: LiveEvent,
  kind: DeliveredKind,
  afterReadable: boolean,
  beforeReadable: boolean,
): FrameRows {
  const before: FrameRow | undefined = event.before ? { row: event.before, side: 'before' } : undefined;
  const after: FrameRow | undefined = event.after ? { row: event.after, side: 'after' } : undefined;
  if (kind === 'delete') return { object: before!, original: undefined };
  if (kind === 'leave') return { object: afterReadable ? after! : null, original: before! };
  return { object: after!, original: beforeReadable ? before : undefined };
}
