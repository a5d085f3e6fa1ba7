/**
 * The server's integration suite on PostgreSQL: `npm run test:pg`. Each service a test starts
 * works in a fresh schema of the database named by BDS_TEST_DATABASE_URL (default
 * postgres://postgres@127.0.0.1:5432/test), dropped when it closes (server/test/helpers/service.ts).
 * With `--if-reachable` (as `npm test` runs it), a database that does not answer skips the run
 * with one line instead of failing it.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import pg from 'pg';
import { storeTests } from './store-tests.ts';

const url = process.env.BDS_TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';

/**
 * Test files about SQLite itself, left out of this run:
 * - sqlite-reads: the SQLite driver's reader and writer connections and grouped commits.
 * - where-index: SQLite's EXPLAIN QUERY PLAN of the statements the where compiler builds.
 * - durability: SQLite's WAL keeping acknowledged writes through `kill -9` of the process.
 * - regex-attack: proves, by counting the values handed to the in-process RE2 engine that SQLite's
 *   `bds_regexp` calls, that `$regex` runs on readable rows only; on PostgreSQL `$regex` runs in
 *   the server's own engine (`~`), which no test in the process can observe.
 * - row-cache: the embedded store's cache of rows read by id, kept exact by SQLite's data_version;
 *   the PostgreSQL store's cache, kept exact by its log of row changes, has its own tests
 *   (postgres-row-cache).
 * Single tests of SQLite's own settings, catalog or limits skip themselves (`ON_POSTGRES`).
 */
const SQLITE_ONLY = ['sqlite-reads', 'where-index', 'durability', 'regex-attack', 'row-cache'];

async function reachable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

const args = process.argv.slice(2);
const ifReachable = args.includes('--if-reachable');
if (!(await reachable())) {
  if (ifReachable) {
    console.log('PostgreSQL not reachable: skipping the PostgreSQL run');
    process.exit(0);
  }
  console.error(`PostgreSQL not reachable at ${url.replace(/\/\/[^@/]*@/, '//***@')}`);
  process.exit(1);
}
const named = args.filter((a) => a !== '--if-reachable');
const files = named.length
  ? named
  : storeTests().filter((file) => !SQLITE_ONLY.includes(path.basename(file, '.test.ts')));
// Each service's schema is dropped when it closes; a test that fails before closing one leaves it,
// and these are dropped after the run (by the run's name, so no other run's schemas).
const run = randomBytes(4).toString('hex');
const vitest = spawnSync('npx', ['vitest', 'run', ...files], {
  stdio: 'inherit',
  env: { ...process.env, BDS_TEST_DATABASE_URL: url, BDS_TEST_RUN: run },
});
await dropLeftovers();
process.exit(vitest.status ?? 1);

async function dropLeftovers(): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string }>(
      "SELECT nspname AS name FROM pg_namespace WHERE nspname LIKE 'bds\\_test\\_' || $1 || '\\_%'",
      [run],
    );
    for (const { name } of rows) await client.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
    if (rows.length) console.log(`Dropped ${rows.length} schema(s) a failed test left behind.`);
  } finally {
    await client.end();
  }
}
