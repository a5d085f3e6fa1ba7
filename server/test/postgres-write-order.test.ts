import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresDialect } from '../src/storage/postgres/dialect.ts';
import { PostgresDriver } from '../src/storage/postgres/driver.ts';
import { ACL_COUNT_SHARD } from '../src/storage/postgres/functions.ts';
import { POSTGRES_TEST_BASE, postgresAnswers } from './helpers/postgres.ts';
import { freshSchema, schemaURI, startService, type TestService } from './helpers/service.ts';

/**
 * Writes of two instances on one PostgreSQL schema at once, on the same rows: each group commit
 * locks rows in one order, and the `_ACL_COUNT` entries are kept per connection, so no deadlock
 * happens (none reaches a caller, none makes a group run again) and every value and count is exact
 * (docs/architecture/storage.md).
 */
const BASE = POSTGRES_TEST_BASE;
const reachable = await postgresAnswers('PostgreSQL write order tests');

describe.skipIf(!reachable)('two instances writing the same rows at once on PostgreSQL', () => {
  let schema: Awaited<ReturnType<typeof freshSchema>>;
  let other: pg.Pool;
  beforeAll(async () => {
    schema = await freshSchema(BASE);
    other = new pg.Pool({ connectionString: schema.uri, max: 2 });
    // The SQL functions (the `_ACL_COUNT` trigger function and its view), as a start makes them.
    const starting = new PostgresDriver(schema.uri, { poolSize: 1 });
    await starting.started(async () => undefined);
    await starting.close();
  });
  afterAll(async () => {
    await other?.end();
    await schema?.drop();
  });

  /** Two drivers on the schema, as two instances have; closed after `fn`. */
  async function twoInstances(fn: (a: PostgresDriver, b: PostgresDriver) => Promise<void>) {
    const a = new PostgresDriver(schema.uri, { poolSize: 4 });
    const b = new PostgresDriver(schema.uri, { poolSize: 4 });
    try {
      await fn(a, b);
      expect([a.deadlocks, b.deadlocks]).toEqual([0, 0]);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  }

  it('increments rows in opposite orders from two instances: no deadlock, every step seen once', async () => {
    const ids = Array.from({ length: 40 }, (_, i) => `row${String(i).padStart(2, '0')}`);
    await other.query('CREATE TABLE "C" ("objectId" text PRIMARY KEY, "n" integer NOT NULL)');
    await other.query(`INSERT INTO "C" SELECT unnest($1::text[]), 0`, [ids]);
    const rounds = 5;
    await twoInstances(async (a, b) => {
      const increment = (d: PostgresDriver, id: string) =>
        d.readThenWrite(
          { sql: 'SELECT * FROM "C" WHERE "objectId" = $1', params: [id] },
          { sql: 'UPDATE "C" SET "n" = "n" + $2 WHERE "C"."objectId" = $1 RETURNING *', params: [id, 1] },
        );
      const written: number[][] = ids.map(() => []);
      await Promise.all(
        Array.from({ length: rounds }, async () => {
          await Promise.all([
            ...ids.map(async (id, i) => written[i]!.push(Number((await increment(a, id)).written[0]!.n))),
            ...[...ids]
              .reverse()
              .map(async (id, j) =>
                written[ids.length - 1 - j]!.push(Number((await increment(b, id)).written[0]!.n)),
              ),
          ]);
        }),
      );
      // Each increment saw the one before: the values written are 1..10 on every row.
      for (const values of written) {
        expect(values.sort((x, y) => x - y)).toEqual(Array.from({ length: rounds * 2 }, (_, k) => k + 1));
      }
    });
    const { rows } = await other.query('SELECT DISTINCT "n" FROM "C"');
    expect(rows).toEqual([{ n: rounds * 2 }]);
  });

  it('creates rows of the same read lists in opposite orders from two instances: counts exact, no deadlock', async () => {
    const lists = Array.from({ length: 100 }, (_, i) => [`u${String(i).padStart(2, '0')}`]);
    const rounds = 20;
    await other.query('CREATE TABLE "A" ("objectId" text PRIMARY KEY, "_rperm" text[], "_wperm" text[])');
    await other.query(postgresDialect.aclCountTriggers('A', 'A'));
    await twoInstances(async (a, b) => {
      const insert = 'INSERT INTO "A" ("objectId", "_rperm") VALUES ($1, $2)';
      // A group runs its inserts by objectId: `a` writes the lists u00..u99 in that order, `b` u99..u00,
      // in rounds of one group each, side by side.
      const creates = async (d: PostgresDriver, name: string, order: string[][]) => {
        const results: unknown[] = [];
        for (let round = 0; round < rounds; round++) {
          results.push(
            ...(await Promise.all(
              order.map((list, k) => d.run(insert, [`${name}-${round}-${String(k).padStart(2, '0')}`, list])),
            )),
          );
        }
        return results;
      };
      const results = await Promise.all([creates(a, 'a', lists), creates(b, 'b', [...lists].reverse())]);
      expect(results.flat()).toEqual(Array.from({ length: rounds * 200 }, () => ({ changes: 1 })));
      // Deleting rows written by the other instance counts down in this one's own entries.
      await Promise.all(
        lists.map((list) =>
          a.run('DELETE FROM "A" WHERE "objectId" = $1', [
            `b-0-${String(99 - Number(list[0]!.slice(1))).padStart(2, '0')}`,
          ]),
        ),
      );
    });
    const { rows } = await other.query(
      'SELECT rperm, n::int AS n FROM "_ACL_COUNT" WHERE class = $1 ORDER BY rperm',
      ['A'],
    );
    expect(rows).toEqual(
      lists
        .map((list) => ({ rperm: JSON.stringify(list), n: rounds * 2 - 1 }))
        .sort((x, y) => (x.rperm < y.rperm ? -1 : 1)),
    );
  });
});

describe.skipIf(!reachable)(
  'two services on one PostgreSQL schema, creating and incrementing at once',
  () => {
    let first: TestService;
    let second: TestService;
    const ids: string[] = [];
    beforeAll(async () => {
      first = await startService({ postgresTestBase: BASE });
      for (let i = 0; i < 20; i++) {
        const created = await first.request('POST', '/classes/Counter', {
          as: 'master',
          body: { n: 0, ACL: { '*': { read: true } } },
        });
        expect(created.status).toBe(201);
        ids.push(created.json.objectId);
      }
      second = await startService({ databaseURI: schemaURI(BASE, first.schema!), databasePoolSize: 4 });
    });
    afterAll(async () => {
      await second?.close();
      await first?.close();
    });

    const driverOf = (t: TestService) =>
      (t.service.core.store as unknown as { driver: PostgresDriver }).driver;

    it('answers every write, and the values and counts are exact', async () => {
      const increment = (t: TestService, id: string) =>
        t.request('PUT', `/classes/Counter/${id}`, {
          as: 'master',
          body: { n: { __op: 'Increment', amount: 1 } },
        });
      const create = (t: TestService, i: number) =>
        t.request('POST', '/classes/Counter', {
          as: 'master',
          // Half public, half readable by one user: the count as a caller sums the public ones.
          body: { n: 0, ACL: i % 2 ? { '*': { read: true } } : { [`user${i % 4}`]: { read: true } } },
        });
      const answers = await Promise.all(
        Array.from({ length: 3 }, () => [
          ...ids.map((id) => increment(first, id)),
          ...[...ids].reverse().map((id) => increment(second, id)),
          ...Array.from({ length: 20 }, (_, i) => create(i % 2 ? first : second, i)),
        ]).flat(),
      );
      expect(answers.filter((r) => r.status !== 200 && r.status !== 201).map((r) => r.text)).toEqual([]);
      expect(answers.filter((r) => r.status === 201)).toHaveLength(60);
      const values = await first.request('GET', '/classes/Counter', {
        as: 'master',
        query: { where: { objectId: { $in: ids } }, limit: 100 },
      });
      expect(values.json.results.map((r: { n: number }) => r.n)).toEqual(ids.map(() => 6));
      const publicCount = await second.request('GET', '/classes/Counter', {
        as: 'rest',
        query: { count: 1, limit: 0 },
      });
      expect(publicCount.json).toEqual({ results: [], count: 20 + 30 });
      const total = await first.request('GET', '/classes/Counter', {
        as: 'master',
        query: { count: 1, limit: 0 },
      });
      expect(total.json).toEqual({ results: [], count: 20 + 60 });
      expect([driverOf(first).deadlocks, driverOf(second).deadlocks]).toEqual([0, 0]);
    });
  },
);

describe.skipIf(!reachable)('the `_ACL_COUNT` table of an older version', () => {
  it('becomes shard 0 of the counts at the next start, which goes on counting from it', async () => {
    const schema = await freshSchema(BASE);
    const other = new pg.Pool({ connectionString: schema.uri, max: 1 });
    try {
      await other.query(
        'CREATE TABLE "_ACL_COUNT" (class TEXT NOT NULL, rperm TEXT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (class, rperm));' +
          `INSERT INTO "_ACL_COUNT" VALUES ('K', '["*"]', 7), ('K', '', 2);`,
      );
      const driver = new PostgresDriver(schema.uri, { poolSize: 2 });
      try {
        await driver.started(async () => undefined);
        await other.query('CREATE TABLE "K" ("objectId" text PRIMARY KEY, "_rperm" text[], "_wperm" text[])');
        await other.query(postgresDialect.aclCountTriggers('K', 'K'));
        await driver.run('INSERT INTO "K" ("objectId", "_rperm") VALUES ($1, $2)', ['k1', ['*']]);
      } finally {
        await driver.close();
      }
      const counts = await other.query('SELECT rperm, n::int AS n FROM "_ACL_COUNT" ORDER BY rperm');
      expect(counts.rows).toEqual([
        { rperm: '', n: 2 },
        { rperm: '["*"]', n: 8 },
      ]);
      const kinds = await other.query(
        "SELECT relname, relkind::text FROM pg_class WHERE relnamespace = current_schema()::regnamespace AND relname LIKE '\\_ACL\\_COUNT%' ORDER BY relname",
      );
      expect(kinds.rows).toEqual([
        { relname: '_ACL_COUNT', relkind: 'v' },
        { relname: '_ACL_COUNT_SHARDS', relkind: 'r' },
        { relname: '_ACL_COUNT_SHARDS_pkey', relkind: 'i' },
      ]);
    } finally {
      await other.end();
      await schema.drop();
    }
  });
});

describe.skipIf(!reachable)('the `_ACL_COUNT` shard of a new connection', () => {
  it('takes the lowest free number, and makes the numbers one at a time (no million-row scan per connection)', async () => {
    const schema = await freshSchema(BASE);
    const pool = new pg.Pool({ connectionString: schema.uri, max: 3 });
    const clients: pg.PoolClient[] = [];
    try {
      for (let i = 0; i < 3; i++) clients.push(await pool.connect());
      const shards = [];
      for (const client of clients) shards.push((await client.query(ACL_COUNT_SHARD)).rows[0].shard);
      expect(shards).toEqual(['1', '2', '3']);
      // A materialized series (a Function Scan) wrote out all its numbers before the first lock.
      const plan = await clients[0]!.query(`EXPLAIN (FORMAT JSON) ${ACL_COUNT_SHARD}`);
      const nodes = JSON.stringify(plan.rows[0]['QUERY PLAN']);
      expect(nodes).toContain('"Node Type":"ProjectSet"');
      expect(nodes).not.toContain('Function Scan');
    } finally {
      for (const client of clients) client.release();
      await pool.end();
      await schema.drop();
    }
  });
});
