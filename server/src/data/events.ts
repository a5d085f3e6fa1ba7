import type { EventBus, EventListener, WriteEvent } from '../kernel/events.ts';
import type { Logger } from '../kernel/log.ts';

/**
 * The event bus of one service instance: listeners run in subscription order, synchronously, as
 * soon as a write commits. A listener that throws is logged and skipped: a committed write never
 * answers an error because of what a listener did.
 */
export class InProcessEventBus implements EventBus {
  private listeners: EventListener[] = [];

  constructor(private readonly log: Logger) {}

  publish(event: WriteEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (err) {
        this.log.error(
          { err: err instanceof Error ? err.message : String(err), className: event.className, op: event.op },
          'event listener failed',
        );
      }
    }
  }

  subscribe(listener: EventListener): () => void {
    this.listeners = [...this.listeners, listener];
    return () => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    };
  }
}
