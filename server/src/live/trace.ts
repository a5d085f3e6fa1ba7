/**
 * The delivery trace (GET <mount>/live/trace/<Class>, master only): for the last events of each
 * class, what every subscription got, delivered or filtered and why; counts for all of them, a
 * list for the first `MAX_TRACED`.
 */
import type { LiveEventKind, RequestId } from '@bds/client/protocol';

/** Why a subscription did not receive an event (docs/architecture/realtime.md#delivery-trace). */
export type FilterReason = 'where' | 'clp' | 'acl' | 'kind' | 'session' | 'cloud';

export type DeliveredKind = LiveEventKind;

export interface TraceDelivery {
  clientId: number;
  requestId: RequestId;
  /** The event kind sent, or null when it was filtered. */
  delivered: DeliveredKind | null;
  filteredBy?: FilterReason;
  /** The user the subscription acts for (null: anonymous; master subscriptions say so). */
  userId: string | null;
  master: boolean;
}

export interface TraceEntry {
  eventId: string;
  op: 'create' | 'update' | 'delete';
  objectId: string;
  at: string;
  /** Subscriptions of the class when the event was decided. */
  subscriptions: number;
  delivered: number;
  filtered: Record<FilterReason, number>;
  /** Per subscription, the first `MAX_TRACED` of them. */
  deliveries: TraceDelivery[];
  /** Subscriptions decided but not listed (past `MAX_TRACED`). */
  omitted: number;
}

/** Most subscriptions listed per traced event; the counts cover all of them. */
export const MAX_TRACED = 500;

/** The master-only delivery trace: per class, the last `size` events and what each subscription got. */
export class DeliveryTrace {
  private readonly byClass = new Map<string, TraceEntry[]>();

  constructor(private readonly size: number) {}

  /** A new entry for an event about to be decided, before any subscription is. */
  startEntry(
    eventId: string,
    op: TraceEntry['op'],
    objectId: string,
    at: number,
    subscriptions: number,
  ): TraceEntry {
    return {
      eventId,
      op,
      objectId,
      at: new Date(at).toISOString(),
      subscriptions,
      delivered: 0,
      filtered: { where: 0, clp: 0, acl: 0, kind: 0, session: 0, cloud: 0 },
      deliveries: [],
      omitted: 0,
    };
  }

  /** One subscription's outcome: counted, and listed while fewer than `MAX_TRACED` are. */
  addDelivery(entry: TraceEntry, delivery: TraceDelivery): void {
    if (delivery.delivered) entry.delivered += 1;
    else if (delivery.filteredBy) entry.filtered[delivery.filteredBy] += 1;
    if (entry.deliveries.length < MAX_TRACED) entry.deliveries.push(delivery);
    else entry.omitted += 1;
  }

  /** As `addDelivery` for a delivery past `MAX_TRACED` (counted, not listed), without building it. */
  countUnlisted(entry: TraceEntry, delivered: DeliveredKind | null, filteredBy?: FilterReason): void {
    if (delivered) entry.delivered += 1;
    else if (filteredBy) entry.filtered[filteredBy] += 1;
    entry.omitted += 1;
  }

  /** `n` deliveries filtered by `reason`, past `MAX_TRACED` (counted, not listed). */
  countUnlistedFiltered(entry: TraceEntry, reason: FilterReason, n: number): void {
    entry.filtered[reason] += n;
    entry.omitted += n;
  }

  /** Keeps a decided event's entry among the last `size` of its class. */
  keepEntry(className: string, entry: TraceEntry): void {
    if (this.size === 0) return;
    let list = this.byClass.get(className);
    if (!list) {
      list = [];
      this.byClass.set(className, list);
    }
    list.push(entry);
    if (list.length > this.size) list.splice(0, list.length - this.size);
  }

  of(className: string): TraceEntry[] {
    return [...(this.byClass.get(className) ?? [])];
  }

  forget(className: string): void {
    this.byClass.delete(className);
  }

  get classes(): number {
    return this.byClass.size;
  }
}
