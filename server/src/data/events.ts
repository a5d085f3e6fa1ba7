import {
  type EventBus,
  type EventListener,
  LISTENER_PHASES,
  type ListenerBinding,
  type WriteEvent,
} from '../kernel/events.ts';
import type { Logger } from '../kernel/log.ts';

/** What a listener subscribed without a binding is: an observer, after what the service binds. */
const UNNAMED: ListenerBinding = { name: 'unnamed', phase: 'sideEffects' };

interface Subscribed extends ListenerBinding {
  listener: EventListener;
}

/**
 * The listeners of a bus in the order they are called: by phase (`LISTENER_PHASES`), then in the
 * order they subscribed. The order is worked out when a listener comes or goes, never per event.
 */
export class Listeners {
  private subscribed: readonly Subscribed[] = [];
  /** The listeners alone, in calling order: what `deliver` walks for each event. */
  private ordered: readonly EventListener[] = [];

  constructor(private readonly log: Logger) {}

  add(listener: EventListener, binding: ListenerBinding = UNNAMED): () => void {
    const entry: Subscribed = { name: binding.name, phase: binding.phase, listener };
    this.update([...this.subscribed, entry]);
    return () => this.update(this.subscribed.filter((s) => s !== entry));
  }

  /**
   * Calls each listener in order with the event. A listener that throws is logged and skipped: a
   * committed write never answers an error because of what a listener did.
   */
  deliver(event: WriteEvent): void {
    for (const listener of this.ordered) {
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

  list(): ListenerBinding[] {
    return this.subscribed.map(({ name, phase }) => ({ name, phase }));
  }

  private update(list: Subscribed[]): void {
    // Array.prototype.sort is stable: within a phase, the order of subscription stays.
    list.sort((a, b) => LISTENER_PHASES.indexOf(a.phase) - LISTENER_PHASES.indexOf(b.phase));
    this.subscribed = list;
    this.ordered = list.map((s) => s.listener);
  }
}

/**
 * The event bus of one service instance: listeners run in phase order, synchronously, as soon as
 * a write commits.
 */
export class InProcessEventBus implements EventBus {
  private readonly subscribers: Listeners;

  constructor(log: Logger) {
    this.subscribers = new Listeners(log);
  }

  publish(event: WriteEvent): void {
    this.subscribers.deliver(event);
  }

  subscribe(listener: EventListener, binding?: ListenerBinding): () => void {
    return this.subscribers.add(listener, binding);
  }

  listeners(): ListenerBinding[] {
    return this.subscribers.list();
  }
}
