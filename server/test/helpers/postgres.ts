import pg from 'pg';

/** The PostgreSQL the store's own tests use: BDS_TEST_DATABASE_URL, else the local test database. */
export const POSTGRES_TEST_BASE =
  process.env.BDS_TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';

/**
 * True when a PostgreSQL answers at POSTGRES_TEST_BASE; otherwise prints why `what` is skipped,
 * in one line.
 */
export async function postgresAnswers(what: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: POSTGRES_TEST_BASE, connectionTimeoutMillis: 3000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return true;
  } catch {
    console.log(`${what} skipped: no PostgreSQL answers at ${new URL(POSTGRES_TEST_BASE).host}`);
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}
