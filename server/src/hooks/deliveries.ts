import type { HookDelivery } from '@bds/client/protocol';

/** One attempt, as the log keeps it (the wire shape of `GET /hooks/deliveries`). */
export type Delivery = HookDelivery;

export interface DeliveryFilter {
  kind?: string;
  hook?: string;
  className?: string;
  triggerName?: string;
  functionName?: string;
  status?: string;
  limit?: number;
}

/** The webhook delivery log: the last `size` attempts, in memory, newest first when listed. */
export class DeliveryLog {
  private entries: Delivery[] = [];
  private nextId = 1;

  constructor(private readonly size: number) {}

  record(entry: Omit<Delivery, 'id'>): Delivery {
    const full = { ...entry, id: this.nextId++ };
    this.entries.push(full);
    if (this.entries.length > this.size) this.entries.splice(0, this.entries.length - this.size);
    return full;
  }

  list(filter: DeliveryFilter = {}): Delivery[] {
    const out: Delivery[] = [];
    const limit = filter.limit ?? 100;
    for (let i = this.entries.length - 1; i >= 0 && out.length < limit; i--) {
      const e = this.entries[i]!;
      if (filter.kind && e.kind !== filter.kind) continue;
      if (filter.hook && e.hook !== filter.hook) continue;
      if (filter.className && e.className !== filter.className) continue;
      if (filter.triggerName && e.triggerName !== filter.triggerName) continue;
      if (filter.functionName && e.functionName !== filter.functionName) continue;
      if (filter.status && e.status !== filter.status) continue;
      out.push(e);
    }
    return out;
  }
}
