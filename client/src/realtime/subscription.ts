/** One subscription on a realtime connection: its events, its resume point, how it ends. */
import { RealtimeError } from '../errors.ts';
import { Emitter } from './emitter.ts';
import type { LiveEvent, LiveEventKind, LiveObject, LiveQuerySpec, SubscriptionEvents } from './types.ts';

/** What a subscription needs from the connection it lives on (connection.ts implements it). */
export interface SubscriptionOwner {
  /** @internal Ends the subscription on the connection; answers when the service confirmed it. */
  _unsubscribe(sub: Subscription<any>): Promise<void>;
}

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
    private readonly connection: SubscriptionOwner,
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
