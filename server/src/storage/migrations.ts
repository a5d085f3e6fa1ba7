import {
  type ClassSchema,
  DEFAULT_FIELDS,
  defaultClassLevelPermissions,
  SYSTEM_CLASS_FIELDS,
  UNIQUE_SYSTEM_FIELDS,
  USER_INTERNAL_COLUMNS,
} from '../kernel/schema.ts';
import type { StorageAdapter } from './adapter.ts';

/**
 * The store's own start-up migrations, safe on every start: the built-in classes, their unique
 * indexes, and the internal columns of _User and _Session. Apart from these, only the write
 * pipeline (data/pipeline.ts) writes to the store.
 */
export async function migrate(store: StorageAdapter): Promise<void> {
  const existing = new Set((await store.loadSchemas()).map((s) => s.className));
  for (const [className, fields] of Object.entries(SYSTEM_CLASS_FIELDS)) {
    if (existing.has(className)) continue;
    const schema: ClassSchema = {
      className,
      fields: { ...DEFAULT_FIELDS, ...fields },
      classLevelPermissions: defaultClassLevelPermissions(className),
      indexes: {},
    };
    await store.createClass(schema);
  }
  for (const [className, field] of UNIQUE_SYSTEM_FIELDS) await store.ensureUniqueIndex(className, field);
  await store.ensureInternalColumns('_User', Object.values(USER_INTERNAL_COLUMNS), {
    unique_username: ['username'],
    unique_email: ['email'],
    unique_anonymous: [USER_INTERNAL_COLUMNS.anonymousId],
  });
  await store.ensureInternalColumns('_Session', [], { unique_sessionToken: ['sessionToken'] });
  // One hook per function name and per class and trigger (a function row's className and a
  // trigger row's functionName are null, which unique indexes do not compare).
  await store.ensureInternalColumns('_Hooks', [], {
    unique_function: ['functionName'],
    unique_trigger: ['className', 'triggerName'],
  });
  for (const schema of await store.loadSchemas()) await store.upgradeClass(schema);
  // The database file adapter's table, made before files kept their metadata and tags.
  await store.fileUpgrade();
}
