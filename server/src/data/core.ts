import type { ServiceOptions } from '../config/options.ts';
import type { SchemaRegistry } from '../schema/registry.ts';
import type { StorageAdapter } from '../storage/adapter.ts';

/** What every part of the service shares: options, the store and the schema registry. */
export interface Core {
  options: ServiceOptions;
  store: StorageAdapter;
  schemas: SchemaRegistry;
}
