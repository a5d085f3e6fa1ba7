import path from 'node:path';
import type { StorageAdapter } from './adapter.ts';
import { migrate } from './migrations.ts';
import { SqlStore } from './sql/store.ts';
import { SqliteDriver } from './sqlite/driver.ts';

/**
 * The store named by `databaseURI` (validated by the options): `sqlite:<file>` or
 * `sqlite::memory:`; without one, the embedded default `<dataDir>/data.sqlite`. Answers it open and
 * migrated.
 */
export async function openStore(options: {
  databaseURI?: string;
  dataDir: string;
  sqliteSynchronous: 'normal' | 'full';
  rowCacheMB?: number;
  sqliteMmapMB?: number;
}): Promise<StorageAdapter> {
  const { databaseURI, dataDir } = options;
  const file = databaseURI
    ? databaseURI.slice('sqlite:'.length)
    : dataDir === ':memory:'
      ? ':memory:'
      : path.join(dataDir, 'data.sqlite');
  const driver = new SqliteDriver(file, {
    synchronous: options.sqliteSynchronous,
    mmapBytes: (options.sqliteMmapMB ?? 0) * 1024 * 1024,
  });
  const store = new SqlStore(driver, {
    rowCacheBytes: (options.rowCacheMB ?? 0) * 1024 * 1024,
  });
  await store.init();
  await migrate(store);
  return store;
}
