import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type Clock, createService, type Service } from '../../src/index.ts';
import type { Logger } from '../../src/kernel/log.ts';
import type { SqlDriver } from '../../src/storage/sql/driver.ts';
import { credentialHeaders, KEYS, type RequestOptions, type TestResponse } from './keys.ts';

export { type Credential, credentialHeaders, KEYS, type RequestOptions, type TestResponse } from './keys.ts';

export interface TestService {
  service: Service;
  /** http://127.0.0.1:<port>/api */
  url: string;
  port: number;
  dataDir: string;
  /** The PostgreSQL schema of this service (the PostgreSQL run only), dropped by close. */
  schema?: string;
  request(method: string, path: string, options?: RequestOptions): Promise<TestResponse>;
  close(): Promise<void>;
}

/**
 * With BDS_TEST_DATABASE_URL set (`postgres://postgres@127.0.0.1:5432/test`), the PostgreSQL run:
 * each service gets a fresh schema of that database, dropped when it closes. Unset: SQLite.
 */
export const TEST_DATABASE_URL = process.env.BDS_TEST_DATABASE_URL || undefined;

/** True in the PostgreSQL run: tests of SQLite's own behaviour are skipped (each says why). */
export const ON_POSTGRES = TEST_DATABASE_URL !== undefined;

/** The names of the indexes of a class table, from SQLite's or PostgreSQL's catalog. */
export async function storeIndexes(t: TestService, table: string): Promise<string[]> {
  const driver = (t.service.core.store as unknown as { driver: SqlDriver & { writer?: SqliteHandle } })
    .driver;
  if (driver.dialect.name === 'sqlite') {
    return driver
      .writer!.prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?`)
      .all(table)
      .map((r) => String((r as { name: string }).name));
  }
  const rows = await driver.all(
    'SELECT indexname AS name FROM pg_indexes WHERE schemaname = current_schema() AND tablename = $1',
    [table],
  );
  return rows.map((r) => String(r.name));
}

/** The names of every table and index of the store (PostgreSQL's primary keys, which it names itself, left out). */
export async function storeRelations(t: TestService): Promise<string[]> {
  const driver = (t.service.core.store as unknown as { driver: SqlDriver & { writer?: SqliteHandle } })
    .driver;
  if (driver.dialect.name === 'sqlite') {
    return driver
      .writer!.prepare(
        "SELECT name FROM sqlite_master WHERE type IN ('table', 'index') AND name NOT LIKE 'sqlite_%'",
      )
      .all()
      .map((r) => String((r as { name: string }).name));
  }
  const rows = await driver.all(
    "SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'i') AND c.relname NOT LIKE '%\\_pkey'",
    [],
  );
  return rows.map((r) => String(r.name));
}

type SqliteHandle = { prepare(sql: string): { all(...params: unknown[]): unknown[] } };

/** A URI of the test database whose connections work in `schema` (search_path). */
export function schemaURI(base: string, schema: string): string {
  const url = new URL(base);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return url.toString();
}

/** Runs one statement on the test database, on a connection of its own. */
export async function onTestDatabase(base: string, sql: string): Promise<void> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: base });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** A new empty schema of the test database, and how to drop it. */
export async function freshSchema(
  base: string,
): Promise<{ name: string; uri: string; drop(): Promise<void> }> {
  // BDS_TEST_RUN (set by scripts/test-pg.ts) names the run, whose leftovers it drops at the end.
  const run = process.env.BDS_TEST_RUN ?? 'x';
  const name = `bds_test_${run}_${process.pid}_${randomBytes(4).toString('hex')}`;
  await onTestDatabase(base, `CREATE SCHEMA "${name}"`);
  return {
    name,
    uri: schemaURI(base, name),
    drop: () => onTestDatabase(base, `DROP SCHEMA IF EXISTS "${name}" CASCADE`),
  };
}

/**
 * Starts the real service in-process on a random port with a fresh temporary data dir.
 * `postgresTestBase` (a PostgreSQL URI) puts it in a fresh schema of that database whatever the run.
 */
export async function startService(
  options: Record<string, unknown> = {},
  extra: { clock?: Clock; log?: Logger } = {},
): Promise<TestService> {
  const { postgresTestBase, ...overrides } = options;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'bds-test-'));
  const base = (postgresTestBase as string | undefined) ?? TEST_DATABASE_URL;
  // A test that names its own store (a SQLite file) keeps it.
  const schema = base && overrides.databaseURI === undefined ? await freshSchema(base) : undefined;
  let service: Service;
  try {
    service = await createService(
      {
        ...KEYS,
        dataDir,
        ...(schema ? { databaseURI: schema.uri, databasePoolSize: 4 } : {}),
        port: 0,
        host: '127.0.0.1',
        logLevel: 'warn',
        // Suites sign up and log in far more often than a person would; the limits have their own test.
        rateLimit: [],
        ...overrides,
      },
      extra,
    );
  } catch (err) {
    await schema?.drop();
    throw err;
  }
  const { port, url } = await service.listen(0, '127.0.0.1');
  const request = async (method: string, p: string, options: RequestOptions = {}): Promise<TestResponse> => {
    const headers: Record<string, string> = { ...credentialHeaders(options.as), ...options.headers };
    if (options.sessionToken) headers['X-Backend-Session-Token'] = options.sessionToken;
    let target = `${url}${p}`;
    if (options.query) {
      const search = new URLSearchParams();
      for (const [k, v] of Object.entries(options.query)) {
        search.set(k, typeof v === 'string' ? v : JSON.stringify(v));
      }
      target += `${p.includes('?') ? '&' : '?'}${search}`;
    }
    let body: string | Buffer | undefined;
    if (options.rawBody !== undefined) body = options.rawBody;
    else if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['Content-Type'] ??= 'application/json';
    }
    const res = await fetch(target, { method, headers, body });
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, text, json };
  };
  return {
    service,
    url,
    port,
    dataDir,
    schema: schema?.name,
    request,
    async close() {
      await service.close();
      await schema?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
