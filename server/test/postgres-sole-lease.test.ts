import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PostgresDriver } from '../src/storage/postgres/driver.ts';
import { SOLE_LEASE_MS } from '../src/storage/postgres/sole-lease.ts';
import type { RowCache } from '../src/storage/sql/row-cache.ts';
import { POSTGRES_TEST_BASE, postgresAnswers } from './helpers/postgres.ts';
import { freshSchema, startService, type TestService } from './helpers/service.ts';

/**
 * The sole-writer lease of the PostgreSQL row cache (storage/postgres/sole-lease.ts): an instance
 * alone on its schema answers cached rows without looking at the change log; another instance, or
 * a program that is no instance, never gets a change past it unseen.
 */
const reachable = await postgresAnswers('PostgreSQL sole-lease tests');

const driverOf = (t: TestService) => (t.service.core.store as unknown as { driver: PostgresDriver }).driver;
const cacheOf = (t: TestService) =>
  (t.service.core.store as unknown as { reads: { rowCache: RowCache } }).reads.rowCache;
const soleOf = (t: TestService) => driverOf(t).rowChanges.sole;
/** Polls until `t` is sole, for at most a few of its tries. */
const becomesSole = (t: TestService) =>
  expect.poll(() => soleOf(t), { timeout: 8000, interval: 50 }).toBe(true);

describe.skipIf(!reachable)('the sole-writer lease of the PostgreSQL row cache', () => {
  let schema: { name: string; uri: string; drop(): Promise<void> };
  let a: TestService;
  const others: TestService[] = [];
  let options: Record<string, unknown>;

  beforeAll(async () => {
    schema = await freshSchema(POSTGRES_TEST_BASE);
    options = { databaseURI: schema.uri, rowCacheMB: 8 };
    a = await startService(options);
    const made = await a.request('POST', '/schemas/Note', {
      as: 'master',
      body: { className: 'Note', fields: { title: { type: 'String' }, n: { type: 'Number' } } },
    });
    expect(made.status, made.text).toBe(200);
  });

  afterEach(async () => {
    for (const other of others.splice(0)) await other.close();
  });

  afterAll(async () => {
    await a?.close();
    await schema?.drop();
  });

  async function note(title: string): Promise<string> {
    const made = await a.request('POST', '/classes/Note', { as: 'master', body: { title, n: 0 } });
    expect(made.status, made.text).toBe(201);
    return (made.json as { objectId: string }).objectId;
  }

  async function titleOn(t: TestService, id: string): Promise<string> {
    const read = await t.request('GET', `/classes/Note/${id}`);
    expect(read.status, read.text).toBe(200);
    return (read.json as { title: string }).title;
  }

  /** A row made on A once A is sole, and read on A twice (the second read answered by its cache). */
  async function cachedOnSoleA(title: string): Promise<string> {
    await becomesSole(a);
    const id = await note(title);
    expect(await titleOn(a, id)).toBe(title);
    expect(await titleOn(a, id)).toBe(title);
    return id;
  }

  async function put(t: TestService, id: string, title: string): Promise<void> {
    const res = await t.request('PUT', `/classes/Note/${id}`, { as: 'master', body: { title } });
    expect(res.status, res.text).toBe(200);
  }

  /** A statement of a program that is no instance: a connection of its own, in the test schema. */
  async function asOutsider(sql: string, params: unknown[] = []): Promise<pg.QueryResult> {
    const outside = new pg.Client({ connectionString: POSTGRES_TEST_BASE });
    await outside.connect();
    try {
      await outside.query(`SET search_path TO "${schema.name}"`);
      return await outside.query(sql, params);
    } finally {
      await outside.end();
    }
  }

  /** A's lease connection busy for 3 s: no confirmation and no release (the lock stays held). */
  function stallLease(): Promise<unknown> {
    const lease = (driverOf(a) as unknown as { lease: { client: pg.Client } }).lease;
    return lease.client.query('SELECT pg_sleep(3)');
  }

  /**
   * Runs `window` until A stayed sole all through it (a loaded machine may hold a confirmation
   * back past the lease, and A then looks again, rightly), and answers what the last run measured.
   */
  async function whileSole<T>(window: () => Promise<T>): Promise<T> {
    for (let attempt = 0; attempt < 5; attempt++) {
      await becomesSole(a);
      const term = driverOf(a).rowChanges.soleTerms;
      const measured = await window();
      if (soleOf(a) && driverOf(a).rowChanges.soleTerms === term) return measured;
    }
    throw new Error('A did not stay sole through the window in 5 tries');
  }

  it('alone on its schema, answers cached rows without looking at the change log', async () => {
    const id = await cachedOnSoleA('alone');
    const looked = await whileSole(async () => {
      const looks = driverOf(a).rowChanges.looks;
      for (let i = 0; i < 20; i++) expect(await titleOn(a, id)).toBe('alone');
      expect(cacheOf(a).size.rows).toBeGreaterThan(0);
      return driverOf(a).rowChanges.looks - looks;
    });
    expect(looked).toBe(0);
    // Its own writes are answered at once, as on the embedded store.
    await put(a, id, 'changed');
    expect(await titleOn(a, id)).toBe('changed');
  });

  it('keeps no row read while one of its own transactions was open', async () => {
    const id = await cachedOnSoleA('old');
    const driver = driverOf(a);
    const cache = cacheOf(a);
    const old = { objectId: id, title: 'old' };
    cache.clear();
    let during = 0;
    await driver.transaction(async () => {
      await driver.run(`UPDATE "Note" SET title = 'new' WHERE "objectId" = $1`, [id]);
      // A read outside the transaction sees the old row until the commit: not kept meanwhile.
      cache.add(cache.ticket(), 'Note', id, old);
      expect(cache.get('Note', id)).toBeUndefined();
      during = cache.ticket();
    });
    // A read that began before the commit and answered after it: not kept either.
    cache.add(during, 'Note', id, old);
    expect(cache.get('Note', id)).toBeUndefined();
    expect(await titleOn(a, id)).toBe('new');
  });

  it('stops being sole before a second instance writes; a write on the second is read at once on the first', async () => {
    const id = await cachedOnSoleA('first');
    const b = await startService(options);
    others.push(b);
    expect(soleOf(a)).toBe(false);
    await put(b, id, 'from B');
    expect(await titleOn(a, id)).toBe('from B');
    // Neither becomes sole while the other is there.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(soleOf(a)).toBe(false);
    expect(soleOf(b)).toBe(false);
    await b.close();
    others.length = 0;
    // Alone again: sole again, and exact.
    await becomesSole(a);
    await put(a, id, 'alone again');
    expect(await titleOn(a, id)).toBe('alone again');
  });

  it('lets a program that is no instance write once it stops being sole, and answers its change at once', async () => {
    const id = await cachedOnSoleA('before psql');
    const done = await asOutsider(`UPDATE "Note" SET title = 'from psql' WHERE "objectId" = $1`, [id]);
    expect(done.rowCount).toBe(1);
    expect(await titleOn(a, id)).toBe('from psql');
  });

  it('when the sole instance stops confirming, a second one writes only after its lease ran out', async () => {
    const id = await cachedOnSoleA('stalled');
    const stall = stallLease();
    const started = performance.now();
    const b = await startService(options);
    others.push(b);
    await put(b, id, 'past the stall');
    expect(performance.now() - started).toBeGreaterThanOrEqual(SOLE_LEASE_MS);
    expect(soleOf(a)).toBe(false);
    expect(await titleOn(a, id)).toBe('past the stall');
    await stall;
  });

  it('after its lease ran out, is sole again only with its cache emptied (another may have written and left)', async () => {
    const id = await cachedOnSoleA('kept before');
    const stall = stallLease();
    // B comes, writes and leaves while A confirms nothing, and A reads nothing meanwhile.
    const b = await startService(options);
    await put(b, id, 'B was here');
    await b.close();
    await stall;
    await becomesSole(a);
    expect(await titleOn(a, id)).toBe('B was here');
  });

  it("answers counts of a whole class from memory while sole, exact after its own and others' inserts", async () => {
    const driver = driverOf(a);
    const countStatements = { n: 0 };
    const get = driver.get.bind(driver);
    driver.get = (sql, params) => {
      if (sql.includes('_ACL_COUNT')) countStatements.n++;
      return get(sql, params);
    };
    const count = async () => {
      const res = await a.request('GET', '/classes/Note?count=1&limit=0');
      expect(res.status, res.text).toBe(200);
      return (res.json as { count: number }).count;
    };
    try {
      const { before, statements } = await whileSole(async () => {
        const first = countStatements.n;
        const before = await count();
        expect(await count()).toBe(before);
        expect(await count()).toBe(before);
        return { before, statements: countStatements.n - first };
      });
      expect(statements).toBe(1);
      await note('counted');
      expect(await count()).toBe(before + 1);
      await asOutsider(
        `INSERT INTO "Note" ("objectId", "createdAt", "updatedAt", title) ` +
          `SELECT 'fromOutside1', "createdAt", "updatedAt", 'outside' FROM "Note" LIMIT 1`,
      );
      expect(await count()).toBe(before + 2);
    } finally {
      driver.get = get;
    }
  });
});
