import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresDriver } from '../src/storage/postgres/driver.ts';
import {
  ROW_CHANGES_PRUNED_TABLE,
  ROW_CHANGES_TABLE,
  rowChangeTrigger,
} from '../src/storage/postgres/row-changes.ts';
import { SqlStore } from '../src/storage/sql/store.ts';
import { POSTGRES_TEST_BASE, postgresAnswers } from './helpers/postgres.ts';
import { REDIS_URL, redisAnswers, testPrefix } from './helpers/redis.ts';
import { freshSchema, startService, type TestService } from './helpers/service.ts';
import { signUpUser } from './helpers/users.ts';

/**
 * The row cache on PostgreSQL (docs/architecture/storage.md, "The row cache on PostgreSQL"): two
 * instances on one schema, each with its cache; a row that one instance changed is never answered
 * in its old state by the other once the change was answered, whether or not Redis carries events
 * between them.
 */
const reachable = await postgresAnswers('PostgreSQL row cache tests');
const withRedis = reachable && (await redisAnswers());

const NOT_FOUND = { code: 101, error: 'Object not found.' };

describe.skipIf(!reachable).each([
  { bus: 'without Redis', redis: false },
  { bus: 'with Redis', redis: true },
])('the row cache on PostgreSQL, two instances $bus', ({ redis }) => {
  // Without a Redis to share, the runs that need one are skipped (redisAnswers says why).
  const test = redis && !withRedis ? it.skip : it;
  let a: TestService;
  let b: TestService;
  let drop: () => Promise<void>;
  let cleanupRedis: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    if (redis && !withRedis) return;
    const schema = await freshSchema(POSTGRES_TEST_BASE);
    drop = schema.drop;
    const space = redis ? testPrefix() : undefined;
    cleanupRedis = space?.cleanup;
    const options = {
      databaseURI: schema.uri,
      rowCacheMB: 8,
      ...(space ? { redisURL: REDIS_URL, redis: { keyPrefix: space.prefix } } : {}),
    };
    a = await startService(options);
    const made = await a.request('POST', '/schemas/Note', {
      as: 'master',
      body: { className: 'Note', fields: { title: { type: 'String' } } },
    });
    expect(made.status, made.text).toBe(200);
    b = await startService(options);
  });

  afterAll(async () => {
    await b?.close();
    await a?.close();
    await drop?.();
    await cleanupRedis?.();
  });

  /** A row made on A and read twice on B (the second read answered by B's cache). */
  async function cachedOnB(body: Record<string, unknown>, sessionToken?: string): Promise<string> {
    const made = await a.request('POST', '/classes/Note', { as: 'master', body });
    expect(made.status, made.text).toBe(201);
    const id = (made.json as { objectId: string }).objectId;
    for (let i = 0; i < 2; i++) {
      const read = await b.request('GET', `/classes/Note/${id}`, { sessionToken });
      expect(read.status, read.text).toBe(200);
      expect((read.json as { title: string }).title).toBe(body.title);
    }
    return id;
  }

  test('answers the new row on B at once after an update on A', async () => {
    const id = await cachedOnB({ title: 'first' });
    for (const title of ['second', 'third', 'fourth']) {
      const put = await a.request('PUT', `/classes/Note/${id}`, { as: 'master', body: { title } });
      expect(put.status, put.text).toBe(200);
      const read = await b.request('GET', `/classes/Note/${id}`);
      expect(read.status, read.text).toBe(200);
      expect((read.json as { title: string }).title).toBe(title);
    }
  });

  test('answers 101 on B at once after a delete on A', async () => {
    const id = await cachedOnB({ title: 'doomed' });
    const del = await a.request('DELETE', `/classes/Note/${id}`, { as: 'master' });
    expect(del.status, del.text).toBe(200);
    const read = await b.request('GET', `/classes/Note/${id}`);
    expect(read.status).toBe(404);
    expect(read.json).toEqual(NOT_FOUND);
  });

  test('refuses on B at once a reader whose access A took away', async () => {
    const reader = await signUpUser(a, `reader-${redis}`, 'pw-reader-1');
    const acl = { [reader.objectId]: { read: true } };
    const id = await cachedOnB({ title: 'private', ACL: acl }, reader.sessionToken);
    const put = await a.request('PUT', `/classes/Note/${id}`, { as: 'master', body: { ACL: {} } });
    expect(put.status, put.text).toBe(200);
    const read = await b.request('GET', `/classes/Note/${id}`, { sessionToken: reader.sessionToken });
    expect(read.status).toBe(404);
    expect(read.json).toEqual(NOT_FOUND);
    // The master key still reads it: the row is there, the reader lost access.
    const master = await b.request('GET', `/classes/Note/${id}`, { as: 'master' });
    expect(master.status, master.text).toBe(200);
  });

  test('answers the new row on B after a write on A inside a batch transaction', async () => {
    const id = await cachedOnB({ title: 'before' });
    const batch = await a.request('POST', '/batch', {
      as: 'master',
      body: {
        transaction: true,
        requests: [{ method: 'PUT', path: `/classes/Note/${id}`, body: { title: 'after' } }],
      },
    });
    expect(batch.status, batch.text).toBe(200);
    const read = await b.request('GET', `/classes/Note/${id}`);
    expect((read.json as { title: string }).title).toBe('after');
  });

  test('answers on B without a field that A deleted', async () => {
    const field = await a.request('PUT', '/schemas/Note', {
      as: 'master',
      body: { className: 'Note', fields: { extra: { type: 'String' } } },
    });
    expect(field.status, field.text).toBe(200);
    const id = await cachedOnB({ title: 'kept', extra: 'dropped' });
    const drop = await a.request('PUT', '/schemas/Note', {
      as: 'master',
      body: { className: 'Note', fields: { extra: { __op: 'Delete' } } },
    });
    expect(drop.status, drop.text).toBe(200);
    const read = await b.request('GET', `/classes/Note/${id}`);
    expect(read.status, read.text).toBe(200);
    expect(read.json).not.toHaveProperty('extra');
    expect((read.json as { title: string }).title).toBe('kept');
  });
});

describe.skipIf(!reachable)('the log of row changes (storage/postgres/row-changes.ts)', () => {
  let driver: PostgresDriver;
  let drop: () => Promise<void>;
  /** What the feed told the cache, in order. */
  const told: string[] = [];
  const cache = {
    forget: (className: string, objectId: string) => told.push(`${className}/${objectId}`),
    forgetClass: (className: string) => told.push(`${className}/*`),
    clear: () => told.push('clear'),
  };
  const entries = async () =>
    Number((await driver.get(`SELECT COUNT(*) AS n FROM "${ROW_CHANGES_TABLE}"`, []))!.n);

  beforeAll(async () => {
    const schema = await freshSchema(POSTGRES_TEST_BASE);
    drop = schema.drop;
    driver = new PostgresDriver(schema.uri, { poolSize: 2 });
    const store = new SqlStore(driver);
    await driver.started(async () => {
      await store.init();
      await driver.rowChanges.install();
    });
    const trigger = rowChangeTrigger('Note', 'Note')!;
    await driver.exec(`CREATE TABLE "Note" ("objectId" text PRIMARY KEY, n integer);${trigger.ddl}`);
    await driver.run(`INSERT INTO "Note" VALUES ('a', 1), ('b', 1)`, []);
  });

  afterAll(async () => {
    await driver?.close();
    await drop?.();
  });

  it('forgets everything at the first look, then exactly the rows changed since the previous look', async () => {
    await driver.rowChanges.catchUp(cache);
    expect(told.splice(0)).toEqual(['clear']);
    await driver.rowChanges.catchUp(cache);
    expect(told.splice(0)).toEqual([]);
    await driver.run(`UPDATE "Note" SET n = 2 WHERE "objectId" = 'a'`, []);
    await driver.run(`DELETE FROM "Note" WHERE "objectId" = 'b'`, []);
    await driver.rowChanges.catchUp(cache);
    expect(told.splice(0)).toEqual(['Note/a', 'Note/b']);
    await driver.rowChanges.catchUp(cache);
    expect(told.splice(0)).toEqual([]);
  });

  it('does not log rows of a change rolled back', async () => {
    await expect(
      driver.transaction(async () => {
        await driver.run(`UPDATE "Note" SET n = 3 WHERE "objectId" = 'a'`, []);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    await driver.rowChanges.catchUp(cache);
    expect(told.splice(0)).toEqual([]);
  });

  it('shares one look among the callers of one turn of the event loop, sent after them', async () => {
    const first = driver.rowChanges.catchUp(cache);
    // Committed after the first look was sent: the look of a later turn, sent after it, sees it.
    const update = driver.run(`UPDATE "Note" SET n = 4 WHERE "objectId" = 'a'`, []);
    const second = driver.rowChanges.catchUp(cache);
    expect(second).toBe(first);
    await update;
    const third = driver.rowChanges.catchUp(cache);
    expect(third).not.toBe(first);
    await Promise.all([first, third]);
    expect(told.splice(0)).toContain('Note/a');
  });

  it('removes old entries, and an instance whose last look is older than them forgets everything', async () => {
    await driver.run(`UPDATE "Note" SET n = 5 WHERE "objectId" = 'a'`, []);
    expect(await entries()).toBeGreaterThan(0);
    // The first prune notes the oldest running transaction; the second removes what ended before it.
    await driver.rowChanges.prune();
    await driver.run(`UPDATE "Note" SET n = 6 WHERE "objectId" = 'a'`, []);
    await driver.rowChanges.prune();
    const left = await driver.all(`SELECT xid::text AS xid FROM "${ROW_CHANGES_TABLE}"`, []);
    const mark = (await driver.get(`SELECT xid::text AS xid FROM "${ROW_CHANGES_PRUNED_TABLE}"`, []))!.xid;
    expect(left.every((row) => BigInt(String(row.xid)) >= BigInt(String(mark)))).toBe(true);
    // Entries above this feed's last look removed (as by another instance, later): it cannot know
    // what changed, and forgets everything.
    await driver.run(`UPDATE "${ROW_CHANGES_PRUNED_TABLE}" SET xid = pg_current_xact_id()`, []);
    await driver.rowChanges.catchUp(cache);
    expect(told.splice(0)).toContain('clear');
  });
});
