/** One subscription on a realtime connection: its events, its resume point, how it ends. */
import { RealtimeError } from '../errors.ts';
import { Emitter } from './emitter.ts';
import type { LiveEvent, LiveEventKind, LiveObject, LiveQuerySpec, SubscriptionEvents } from './types.ts';

/** What a subscription needs from the connection it lives on (connection.ts implements it). */
export interface SubscriptionOwner {
  /** @internal Ends the subscription on the connection; answers when the service confirmed it. */
  _unsubscribe(sub: Subscription<any>): Promise<void>;
  /** @internal Replaces the subscription's query; answers when the service confirmed it. */
  _update(sub: Subscription<any>, query: LiveQuerySpec): Promise<void>;
}

/** @internal Someone waiting for the service to confirm a query (an `update` call). */
export interface QueryWaiter {
  resolve(): void;
  reject(error: RealtimeError): void;
}

/**
 * @internal A subscribe or update frame sent on the current socket, waiting for its one answer
 * (`subscribed`, or an error frame): the service answers a connection's frames in order.
 */
export interface SentQuery {
  op: 'subscribe' | 'update';
  /** The subscribe asked to resume (`since`). */
  resume: boolean;
  query: Readonly<LiveQuerySpec>;
  waiters: QueryWaiter[];
}

export class Subscription<T = LiveObject> extends Emitter<SubscriptionEvents<T>> {
  /**
   * The resume point after a reconnect: the id of the event last delivered to it, else the
   * service's latest event when the subscription (or its last update) became active.
   */
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
  /** @internal The subscribe and update frames of the current socket that wait for their answer, in order. */
  sent: SentQuery[] = [];
  /** @internal Update calls made while no socket was open: the next subscribe carries their query. */
  unsent: QueryWaiter[] = [];
  /** @internal The query the service last confirmed. */
  confirmed: Readonly<LiveQuerySpec>;
  private current: Readonly<LiveQuerySpec>;

  constructor(
    private readonly connection: SubscriptionOwner,
    readonly requestId: number,
    query: Readonly<LiveQuerySpec>,
    readonly sessionToken: string | undefined,
    readonly include: readonly string[],
    readonly snapshot: boolean,
  ) {
    super();
    this.current = query;
    this.confirmed = query;
    this.snapshotOnGap = snapshot;
  }

  /** What it watches: the query it was made with, or the last one given to `update`. */
  get query(): Readonly<LiveQuerySpec> {
    return this.current;
  }

  /** @internal */
  _setQuery(query: Readonly<LiveQuerySpec>): void {
    this.current = query;
  }

  /**
   * Replaces what the subscription watches, without a gap: the service swaps the query in one step
   * (an `update` frame), and while the socket is down the renewal after the reconnect carries the
   * new query and resumes from the subscription's resume point. Answers when the service confirmed
   * the new query; rejects (keeping the old one) when it refuses it, or when the subscription ends
   * first.
   */
  update(query: LiveQuerySpec): Promise<void> {
    if (this.ended) return Promise.reject(new RealtimeError('The subscription has ended.'));
    return this.connection._update(this as Subscription<any>, query);
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
