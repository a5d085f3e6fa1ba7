import type { Caller } from './caller.ts';
import type { Row } from './records.ts';

/** Where a write entered the service. */
/** `import`: rows restored from an export file (`npm run server -- import`, transfer/). */
export type WriteSource = 'rest' | 'batch' | 'account' | 'system' | 'cloud' | 'hook' | 'import';

/**
 * What every committed write emits, once, after its transaction commits, whatever route made the write.
 *
 * - Records: `create` (before null), `update`, `delete` (after null), with the rows as stored
 *   (wire form, ACL included, internal columns such as password hashes never).
 * - Schema changes: class `_SCHEMA`, the schema documents as `before`/`after`, `objectId` the class.
 * - Config: class `_GlobalConfig`, `update` of the `{params, masterKeyOnly}` document.
 * - `purge`: every row of `className` deleted at once (no rows are carried).
 */
export interface WriteEvent {
  op: 'create' | 'update' | 'delete' | 'purge';
  className: string;
  objectId: string | null;
  before: Row | null;
  after: Row | null;
  caller: Caller;
  source: WriteSource;
  /** The request's context object (shared with the before-triggers of the same request). */
  context: Record<string, unknown>;
  /** The client's address, when the write came in over HTTP. */
  ip?: string | null;
  /** The request's headers, as cloud code sees them (kernel/context.ts headersOf); never sent to other instances. */
  headers?: Readonly<Record<string, string>>;
  /** The trace id of the request that made the write (Ctx.requestId, `X-Request-Id`), when it came in over HTTP. */
  requestId?: string;
  /** The write's id, when it left a version in the row history (the version's `eventId`). */
  eventId?: string;
  /**
   * Set when the write happened on another instance and a shared bus (Redis) brought the event
   * here. Caches and realtime follow every event; what must happen once per write (after-write
   * triggers, webhooks) runs only where the write happened, so it skips remote events.
   */
  remote?: boolean;
}

export type EventListener = (event: WriteEvent) => void;

/**
 * When a listener hears an event, among the others: first the caches follow the write (sessions,
 * roles, the webhook registry), then realtime fans it out (deciding with caches already current),
 * then the side effects run (after-write triggers, the scheduler's wake-up, observers).
 */
export type ListenerPhase = 'caches' | 'fanOut' | 'sideEffects';

/** The phases in the order the bus calls them. */
export const LISTENER_PHASES: readonly ListenerPhase[] = ['caches', 'fanOut', 'sideEffects'];

/** Who a listener is (for the listing of the chain) and in which phase it runs. */
export interface ListenerBinding {
  name: string;
  phase: ListenerPhase;
}

/**
 * Where committed writes are announced: the after-commit hook. Listeners are called synchronously,
 * phase by phase, and within a phase in the order they subscribed, whatever the order in which the
 * service built them. The in-process bus (data/events.ts) does this for its writes; the Redis bus
 * (redis/event-bus.ts) does the same for the writes of its own instance and also delivers, marked
 * `remote`, the events every other instance publishes.
 */
export interface EventBus {
  publish(event: WriteEvent): void;
  /**
   * Answers a function that removes the listener. Without a binding the listener is an unnamed
   * observer of the side-effects phase: it hears each event after everything the service binds
   * in the earlier phases.
   */
  subscribe(listener: EventListener, binding?: ListenerBinding): () => void;
  /** The listeners, in the order they are called. */
  listeners(): ListenerBinding[];
}

/** What a before-write trigger sees (cloud code and webhooks implement triggers; data/ calls them). */
export interface PendingWrite {
  op: 'create' | 'update' | 'delete';
  className: string;
  objectId: string | null;
  /** The write body as sent (create and update); a trigger may answer a replacement. */
  body: Record<string, unknown> | null;
  /** The stored row before the write (update and delete). */
  original: Row | null;
  caller: Caller;
  source: WriteSource;
  /** Shared by the before and after triggers of one request. */
  context: Record<string, unknown>;
  ip?: string | null;
  headers?: Readonly<Record<string, string>>;
  requestId?: string;
}

/**
 * Triggers that run inside the write pipeline before the store is touched. A trigger may refuse the
 * write by throwing (the pipeline answers its error and writes nothing) or answer a new body.
 */
export interface WriteTriggers {
  /** Whether any before-trigger exists for the class (so the pipeline skips loading `original` otherwise). */
  hasBefore(className: string, op: PendingWrite['op']): boolean;
  before(write: PendingWrite): Promise<Record<string, unknown> | undefined>;
}

/** The pseudo-class of schema change events: `objectId` is the class, rows are schema documents. */
export const SCHEMA_EVENT_CLASS = '_SCHEMA';
/** The pseudo-class of config change events. */
export const CONFIG_EVENT_CLASS = '_GlobalConfig';
