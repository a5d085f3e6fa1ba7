import type { ServiceOptions } from '../config/options.ts';
import type { EventBus } from '../kernel/events.ts';
import { HookRegistry } from '../kernel/hooks.ts';
import type { Logger } from '../kernel/log.ts';
import type { SchemaRegistry } from '../schema/registry.ts';
import type { StorageAdapter } from '../storage/adapter.ts';

/**
 * What every part of the service shares: options, the store, the schemas, the event bus (the
 * after-commit hook), the other hooks, the log. Read-only: made once (`createCore`) and frozen;
 * other parts hook in through `hooks`, whose bindings createService makes before it seals them.
 */
export interface Core {
  readonly options: ServiceOptions;
  readonly store: StorageAdapter;
  readonly schemas: SchemaRegistry;
  readonly events: EventBus;
  readonly log: Logger;
  /** Where the rest of the service hooks into reads and writes (kernel/hooks.ts). */
  readonly hooks: HookRegistry;
}

/** The core, frozen, with an empty hook registry to bind into. */
export function createCore(parts: Omit<Core, 'hooks'>): Core {
  return Object.freeze({ ...parts, hooks: new HookRegistry() });
}
