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

  it('alone on its schema, answers cached rows without looking at the change log', async () => {
    await becomesSole(a);
    const id = await note('alone');
    expect(await titleOn(a, id)).toBe('alone');
    const looks = driverOf(a).rowChanges.looks;
    for (let i = 0; i < 20; i++) expect(await titleOn(a, id)).toBe('alone');
    expect(driverOf(a).rowChanges.looks).toBe(looks);
    expect(cacheOf(a).size.rows).toBeGreaterThan(0);
    // Its own writes are answered at once, as on the embedded store.
    const put = await a.request('PUT', `/classes/Note/${id}`, { as: 'master', body: { title: 'changed' } });
    expect(put.status, put.text).toBe(200);
    expect(await titleOn(a, id)).toBe('changed');
    expect(driverOf(a).rowChanges.looks).toBe(looks);
  });

  it('keeps no row read while one of its own transactions was open', async () => {
    await becomesSole(a);
    const id = await note('old');
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
    await becomesSole(a);
    const id = await note('first');
    expect(await titleOn(a, id)).toBe('first');
    expect(await titleOn(a, id)).toBe('first');
    const b = await startService(options);
    others.push(b);
    expect(soleOf(a)).toBe(false);
    const put = await b.request('PUT', `/classes/Note/${id}`, { as: 'master', body: { title: 'from B' } });
    expect(put.status, put.text).toBe(200);
    expect(await titleOn(a, id)).toBe('from B');
    // Neither becomes sole while the other is there.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(soleOf(a)).toBe(false);
    expect(soleOf(b)).toBe(false);
    await b.close();
    others.length = 0;
    // Alone again: sole again, and exact.
    await becomesSole(a);
    const again = await a.request('PUT', `/classes/Note/${id}`, {
      as: 'master',
      body: { title: 'alone again' },
    });
    expect(again.status, again.text).toBe(200);
    expect(await titleOn(a, id)).toBe('alone again');
  });

  it('lets a program that is no instance write once it stops being sole, and answers its change at once', async () => {
    await becomesSole(a);
    const id = await note('before psql');
    expect(await titleOn(a, id)).toBe('before psql');
    expect(await titleOn(a, id)).toBe('before psql');
    const outside = new pg.Client({ connectionString: POSTGRES_TEST_BASE });
    await outside.connect();
    try {
      await outside.query(`SET search_path TO "${schema.name}"`);
      const done = await outside.query(`UPDATE "Note" SET title = 'from psql' WHERE "objectId" = $1`, [id]);
      expect(done.rowCount).toBe(1);
    } finally {
      await outside.end();
    }
    expect(await titleOn(a, id)).toBe('from psql');
  });

  it('when the sole instance stops confirming, a second one writes only after its lease ran out', async () => {
    await becomesSole(a);
    const id = await note('stalled');
    expect(await titleOn(a, id)).toBe('stalled');
    // The lease connection busy for 3 s: no confirmation and no release (the lock stays held).
    const lease = (driverOf(a) as unknown as { lease: { client: pg.Client } }).lease;
    const stall = lease.client.query('SELECT pg_sleep(3)');
    const started = performance.now();
    const b = await startService(options);
    others.push(b);
    const put = await b.request('PUT', `/classes/Note/${id}`, {
      as: 'master',
      body: { title: 'past the stall' },
    });
    expect(put.status, put.text).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(SOLE_LEASE_MS);
    expect(soleOf(a)).toBe(false);
    expect(await titleOn(a, id)).toBe('past the stall');
    await stall;
  });
  it('after its lease ran out, is sole again only with its cache emptied (another may have written and left)', async () => {
    await becomesSole(a);
    const id = await note('kept before');
    expect(await titleOn(a, id)).toBe('kept before');
    expect(await titleOn(a, id)).toBe('kept before');
    const lease = (driverOf(a) as unknown as { lease: { client: pg.Client } }).lease;
    const stall = lease.client.query('SELECT pg_sleep(3)');
    // B comes, writes and leaves while A confirms nothing, and A reads nothing meanwhile.
    const b = await startService(options);
    const put = await b.request('PUT', `/classes/Note/${id}`, {
      as: 'master',
      body: { title: 'B was here' },
    });
    expect(put.status, put.text).toBe(200);
    await b.close();
    await stall;
    await becomesSole(a);
    expect(await titleOn(a, id)).toBe('B was here');
  });

  it("answers counts of a whole class from memory while sole, exact after its own and others' inserts", async () => {
    await becomesSole(a);
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
      const before = await count();
      expect(await count()).toBe(before);
      expect(countStatements.n).toBe(1);
      await note('counted');
      expect(await count()).toBe(before + 1);
      const outside = new pg.Client({ connectionString: POSTGRES_TEST_BASE });
      await outside.connect();
      try {
        await outside.query(`SET search_path TO "${schema.name}"`);
        await outside.query(
          `INSERT INTO "Note" ("objectId", "createdAt", "updatedAt", title) ` +
            `SELECT 'fromOutside1', "createdAt", "updatedAt", 'outside' FROM "Note" LIMIT 1`,
        );
      } finally {
        await outside.end();
      }
      expect(await count()).toBe(before + 2);
    } finally {
      driver.get = get;
    }
  });
});
