import type { ServiceOptions } from '../config/options.ts';
import type { EventBus, WriteTriggers } from '../kernel/events.ts';
import type { Logger } from '../kernel/log.ts';
import type { AccountTriggers, ReadTriggers } from '../kernel/triggers.ts';
import type { SchemaRegistry } from '../schema/registry.ts';
import type { StorageAdapter } from '../storage/adapter.ts';
import type { RedisLink } from './redis.ts';

/** What every part of the service shares: options, the store, the schemas, the event bus, the log. */
export interface Core {
  options: ServiceOptions;
  store: StorageAdapter;
  schemas: SchemaRegistry;
  events: EventBus;
  log: Logger;
  /** The url of a stored file, from the current public address (set once the service knows it). */
  fileUrl?: (name: string) => string;
  /** Before-write triggers (cloud code, webhooks); none until something registers them. */
  triggers?: WriteTriggers;
  /**
   * Rules of built-in classes kept outside data/ (`_Hooks`, `_JobSchedule`), with the triggers'
   * interface: part of the pipeline's validate step. They run before the body is checked against
   * the schema (so they answer their own codes and texts), and again on whatever the before-write
   * triggers changed (a row is checked as finally written).
   */
  writeRules?: WriteTriggers;
  /** beforeFind / afterFind (cloud code); none until something registers them. */
  readTriggers?: ReadTriggers;
  /** beforeLogin / afterLogin / afterLogout (cloud code). */
  accountTriggers?: AccountTriggers;
  /** Redis, when several instances share state (option `redisURL`); undefined otherwise. */
  redis?: RedisLink;
}
