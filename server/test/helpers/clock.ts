import type { Clock } from '../../src/index.ts';

/** A clock the test moves: timers fire when `advance` passes their time, in order. */
export class FakeClock implements Clock {
  private timers = new Map<number, { at: number; fn: () => void }>();
  private nextId = 1;

  constructor(public current: number) {}

  now(): number {
    return this.current;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.nextId++;
    this.timers.set(id, { at: this.current + ms, fn });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  /** Whether a timer is due at the current time (one armed by work the last move started). */
  hasDue(): boolean {
    return [...this.timers.values()].some((t) => t.at <= this.current);
  }

  /** Moves time to `to` (ms), firing every timer due on the way. */
  set(to: number): void {
    for (;;) {
      const due = [...this.timers.entries()]
        .filter(([, t]) => t.at <= to)
        .sort((a, b) => a[1].at - b[1].at)[0];
      if (!due) break;
      this.timers.delete(due[0]);
      this.current = Math.max(this.current, due[1].at);
      due[1].fn();
    }
    this.current = to;
  }
}
