import type { EventBus, EventListener, WriteEvent } from '../kernel/events.ts';
import type { Logger } from '../kernel/log.ts';

/**
 * Calls each listener in order with the event. A listener that throws is logged and skipped: a
 * committed write never answers an error because of what a listener did.
 */
export function deliver(listeners: readonly EventListener[], event: WriteEvent, log: Logger): void {
  for (const listener of listeners) {
    try {
      listener(event);
    } catch (err) {
      log.error(
        { err: err instanceof Error ? err.message : String(err), className: event.className, op: event.op },
        'event listener failed',
      );
    }
  }
}

/**
 * The event bus of one service instance: listeners run in subscription order, synchronously, as
 * soon as a write commits.
 */
export class InProcessEventBus implements EventBus {
  private listeners: EventListener[] = [];

  constructor(private readonly log: Logger) {}

  publish(event: WriteEvent): void {
    deliver(this.listeners, event, this.log);
  }

  subscribe(listener: EventListener): () => void {
    this.listeners = [...this.listeners, listener];
    return () => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    };
  }
}
