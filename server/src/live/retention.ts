import type { Row } from '../kernel/records.ts';

/** An event as realtime keeps it: the rows of the write and its place in the application's sequence. */
export interface LiveEvent {
  seq: number;
  eventId: string;
  /** Milliseconds since the epoch, when it was published. */
  at: number;
  op: 'create' | 'update' | 'delete';
  className: string;
  objectId: string;
  before: Row | null;
  after: Row | null;
  /** True while its fan-out waits in the queue: a replay leaves it to the fan-out (no duplicate). */
  fanOutPending?: boolean;
  /** The trace id of the request that made the write (WriteEvent.requestId), if any. */
  requestId?: string;
}

/**
 * Event ids: `<boot>-<seq>`, both fixed width, so that string order is event order (also across a
 * restart: a later boot sorts after). The sequence is one per application (one per service).
 */
export class EventIds {
  readonly boot = Date.now().toString(36).padStart(9, '0');
  private seq = 0;

  next(): { seq: number; eventId: string } {
    this.seq += 1;
    return { seq: this.seq, eventId: this.format(this.seq) };
  }

  get last(): number {
    return this.seq;
  }

  format(seq: number): string {
    return `${this.boot}-${seq.toString().padStart(12, '0')}`;
  }

  /** The sequence number of an id of this boot, or undefined (another boot, or not an id). */
  parse(eventId: string): number | undefined {
    const match = /^([0-9a-z]{9})-(\d{12})$/.exec(eventId);
    if (!match || match[1] !== this.boot) return undefined;
    const seq = Number(match[2]);
    return seq <= this.seq ? seq : undefined;
  }
}

/**
 * The bounded in-memory buffer of recent events for `since`: at most `maxEvents`, none older than
 * `maxAgeMs`. Nothing else holds old events.
 */
export class Retention {
  private events: LiveEvent[] = [];
  private start = 0;
  /** The highest sequence number that has left the buffer (0: none has). */
  private dropped = 0;

  constructor(
    private readonly maxEvents: number,
    private readonly maxAgeMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  push(event: LiveEvent): void {
    if (this.maxEvents === 0 || this.maxAgeMs === 0) {
      this.dropped = event.seq;
      return;
    }
    this.events.push(event);
    this.trim();
  }

  private trim(): void {
    const oldest = this.now() - this.maxAgeMs;
    while (
      this.events.length - this.start > this.maxEvents ||
      (this.size > 0 && this.events[this.start]!.at < oldest)
    ) {
      this.dropped = this.events[this.start]!.seq;
      this.events[this.start] = undefined as unknown as LiveEvent;
      this.start += 1;
    }
    if (this.start > 1024 && this.start * 2 > this.events.length) {
      this.events = this.events.slice(this.start);
      this.start = 0;
    }
  }

  /**
   * Events after `seq` were missed (the instance learnt that it never received some events of
   * other instances): what is kept up to it is forgotten, and a resume from `seq` or earlier answers
   * that the window was exceeded. The next event kept (`seq + 1`) is complete again.
   */
  holeAfter(seq: number): void {
    while (this.size > 0 && this.events[this.start]!.seq <= seq) {
      this.events[this.start] = undefined as unknown as LiveEvent;
      this.start += 1;
    }
    this.dropped = Math.max(this.dropped, seq + 1);
  }

  /** How many events are kept now, and the oldest and newest of them. */
  span(): { count: number; oldest: LiveEvent | undefined; newest: LiveEvent | undefined } {
    this.trim();
    const count = this.size;
    return {
      count,
      oldest: count > 0 ? this.events[this.start] : undefined,
      newest: count > 0 ? this.events[this.events.length - 1] : undefined,
    };
  }

  get size(): number {
    return this.events.length - this.start;
  }

  /**
   * The events after `seq`, up to `until` (inclusive), in order; undefined when some of them are no
   * longer kept. Events that were never kept (gaps of other classes) do not matter: a sequence is
   * complete when nothing after `seq` has been dropped.
   */
  after(seq: number, until: number): LiveEvent[] | undefined {
    this.trim();
    if (seq < this.dropped) return undefined;
    const out: LiveEvent[] = [];
    for (let i = this.start; i < this.events.length; i++) {
      const e = this.events[i]!;
      if (e.seq > until) break;
      if (e.seq > seq) out.push(e);
    }
    return out;
  }
}
