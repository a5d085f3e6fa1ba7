import path from 'node:path';
import type { AutoIndexOptions } from '../config/performance-options.ts';
import type { Clock } from '../kernel/clock.ts';
import type { Logger } from '../kernel/log.ts';
import type { StorageAdapter } from './adapter.ts';
import { migrate } from './migrations.ts';
import { SqlStore } from './sql/store.ts';
import { SqliteDriver } from './sqlite/driver.ts';

/** A PostgreSQL URI (`postgres://` or `postgresql://`); anything else names a SQLite file. */
export const isPostgresURI = (uri: string | undefined): boolean => !!uri && /^postgres(ql)?:\/\//.test(uri);

/**
 * The store named by `databaseURI` (validated by the options): `sqlite:<file>` or
 * `sqlite::memory:`; `postgres://…` or `postgresql://…` for PostgreSQL; without one, the embedded
 * default `<dataDir>/data.sqlite`. Answers it open and migrated.
 */
export async function openStore(options: {
  databaseURI?: string;
  databasePoolSize?: number;
  dataDir: string;
  sqliteSynchronous: 'normal' | 'full';
  rowCacheMB?: number;
  sqliteMmapMB?: number;
  /** Automatic indexes (storage/sql/auto-index.ts), when given with the clock of their windows. */
  autoIndex?: AutoIndexOptions;
  clock?: Clock;
  log?: Logger;
}): Promise<StorageAdapter> {
  const auto = { autoIndex: options.autoIndex, clock: options.clock, log: options.log };
  const { databaseURI, dataDir } = options;
  if (databaseURI && isPostgresURI(databaseURI)) {
    // Loaded only for PostgreSQL: the embedded default never needs the pg package.
    const { PostgresDriver } = await import('./postgres/driver.ts');
    const driver = new PostgresDriver(databaseURI, { poolSize: options.databasePoolSize ?? 10 });
    const store = new SqlStore(driver, { rowCacheBytes: (options.rowCacheMB ?? 0) * 1024 * 1024, ...auto });
    try {
      // One instance at a time makes the functions and tables and runs the migrations.
      await driver.started(async () => {
        await store.init();
        await driver.rowChanges.install();
        await migrate(store);
      });
      await store.performance?.start();
    } catch (err) {
      await driver.close();
      throw err;
    }
    return store;
  }
  const file = databaseURI
    ? databaseURI.slice('sqlite:'.length)
    : dataDir === ':memory:'
      ? ':memory:'
      : path.join(dataDir, 'data.sqlite');
  const driver = new SqliteDriver(file, {
    synchronous: options.sqliteSynchronous,
    mmapBytes: (options.sqliteMmapMB ?? 0) * 1024 * 1024,
    onCheckpointError: (message) => options.log?.warn({ err: message }, 'WAL checkpoint failed'),
  });
  const store = new SqlStore(driver, {
    rowCacheBytes: (options.rowCacheMB ?? 0) * 1024 * 1024,
    ...auto,
  });
  await store.init();
  await migrate(store);
  await store.performance?.start();
  return store;
}
