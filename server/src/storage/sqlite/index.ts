import path from 'node:path';
import { SqlStore } from '../sql/store.ts';
import { SqliteDriver } from './driver.ts';

/** The embedded default store: one SQLite file (WAL) in the data dir. */
export async function openSqliteStore(dataDir: string): Promise<SqlStore> {
  const file = dataDir === ':memory:' ? ':memory:' : path.join(dataDir, 'data.sqlite');
  const store = new SqlStore(new SqliteDriver(file));
  await store.init();
  return store;
}
