import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PostgresDriver } from '../src/storage/postgres/driver.ts';
import { MAX_PREPARED, WRITE_LANES, writeLane } from '../src/storage/postgres/statements.ts';
import { MAX_GROUP_WRITES } from '../src/storage/postgres/write-groups.ts';
import { POSTGRES_TEST_BASE, postgresAnswers } from './helpers/postgres.ts';
import { freshSchema } from './helpers/service.ts';

/**
 * The PostgreSQL driver's group commits and prepared statements, against a real server:
 * BDS_TEST_DATABASE_URL (default the local test database). Skipped, saying why, when no
 * PostgreSQL answers there.
 */
const BASE = POSTGRES_TEST_BASE;
const reachable = await postgresAnswers('PostgreSQL driver tests');

let schema: Awaited<ReturnType<typeof freshSchema>>;
let driver: PostgresDriver;
/** A connection of its own, outside the driver. */
let other: pg.Pool;

const INSERT = 'INSERT INTO "T" ("id", "n") VALUES ($1, $2)';

async function open(poolSize: number): Promise<void> {
  driver = new PostgresDriver(schema.uri, { poolSize });
}

beforeAll(async () => {
  if (!reachable) return;
  schema = await freshSchema(BASE);
  other = new pg.Pool({ connectionString: schema.uri, max: 4 });
});
afterAll(async () => {
  await other?.end();
  await schema?.drop();
});
beforeEach(async () => {
  if (!reachable) return;
  await other.query('DROP TABLE IF EXISTS "T"; CREATE TABLE "T" ("id" text PRIMARY KEY, "n" integer)');
});
afterEach(async () => {
  await driver?.close();
});

/** The transaction that wrote each row (rows written by one transaction share their xmin). */
async function writers(): Promise<number> {
  const { rows } = await other.query('SELECT count(DISTINCT xmin::text)::int AS n FROM "T"');
  return rows[0].n;
}

/** The statements starting with `prefix` that the driver sends to the server from now on. */
function countStatements(prefix: string): { count(): number; stop(): void } {
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  let count = 0;
  proto.query = function (this: unknown, ...args: unknown[]) {
    const text = (args[0] as { text?: string } | string | undefined) ?? '';
    if ((typeof text === 'string' ? text : (text.text ?? '')).startsWith(prefix)) count++;
    return original.apply(this, args);
  };
  return { count: () => count, stop: () => (proto.query = original) };
}

describe.skipIf(!reachable)('the PostgreSQL driver', () => {
  describe('group commits of writes made outside a transaction', () => {
    it('commits writes that arrive together in far fewer transactions than writes', async () => {
      await open(4);
      const changes = await Promise.all(
        Array.from({ length: 100 }, (_, i) => driver.run(INSERT, [`r${i}`, i])),
      );
      expect(changes).toEqual(Array.from({ length: 100 }, () => ({ changes: 1 })));
      expect((await other.query('SELECT count(*)::int AS n FROM "T"')).rows[0].n).toBe(100);
      // One write runs alone (nothing to group with yet), the rest join groups.
      expect(await writers()).toBeLessThanOrEqual(5);
    });

    it('answers a write only once its group has committed', async () => {
      await open(2);
      const seen = await Promise.all(
        Array.from({ length: 20 }, async (_, i) => {
          await driver.run(INSERT, [`r${i}`, i]);
          const { rows } = await other.query('SELECT count(*)::int AS n FROM "T" WHERE "id" = $1', [`r${i}`]);
          return rows[0].n;
        }),
      );
      expect(seen).toEqual(Array.from({ length: 20 }, () => 1));
    });

    it('undoes a failing statement alone: the others of its group commit and get their results', async () => {
      await open(2);
      const outcomes = await Promise.allSettled([
        ...Array.from({ length: 10 }, (_, i) => driver.run(INSERT, [`r${i}`, i])),
        driver.run(INSERT, ['bad', 'not a number']),
        ...Array.from({ length: 10 }, (_, i) => driver.run(INSERT, [`s${i}`, i])),
      ]);
      const refused = outcomes.filter((o) => o.status === 'rejected');
      expect(refused).toHaveLength(1);
      expect((refused[0] as PromiseRejectedResult).reason).toMatchObject({
        code: '22P02',
        message: 'invalid input syntax for type integer: "not a number"',
      });
      const { rows } = await other.query('SELECT "id" FROM "T" ORDER BY "id"');
      expect(rows.map((r) => r.id)).toEqual([
        ...Array.from({ length: 10 }, (_, i) => `r${i}`),
        ...Array.from({ length: 10 }, (_, i) => `s${i}`),
      ]);
    });

    it('answers a taken key in a group as the unique violation, and the group goes on', async () => {
      await open(2);
      await other.query(`INSERT INTO "T" VALUES ('taken', 0)`);
      const outcomes = await Promise.allSettled([
        driver.run(INSERT, ['a', 1]),
        driver.run(INSERT, ['taken', 2]),
        driver.run(INSERT, ['b', 3]),
      ]);
      expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect((outcomes[1] as PromiseRejectedResult).reason).toMatchObject({ code: '23505' });
      const { rows } = await other.query('SELECT "id", "n" FROM "T" ORDER BY "id"');
      expect(rows).toEqual([
        { id: 'a', n: 1 },
        { id: 'b', n: 3 },
        { id: 'taken', n: 0 },
      ]);
    });

    it('reads and writes a row as one unit in a group: concurrent increments each see the one before', async () => {
      await open(3);
      await other.query(`INSERT INTO "T" VALUES ('c', 0)`);
      const pairs = await Promise.all(
        Array.from({ length: 30 }, () =>
          driver.readThenWrite(
            { sql: 'SELECT "n" FROM "T" WHERE "id" = $1', params: ['c'] },
            { sql: 'UPDATE "T" SET "n" = "n" + 1 WHERE "id" = $1 RETURNING "n"', params: ['c'] },
          ),
        ),
      );
      const steps = pairs
        .map((p) => [Number(p.read[0].n), Number(p.written[0].n)])
        .sort((a, b) => a[0] - b[0]);
      expect(steps).toEqual(Array.from({ length: 30 }, (_, i) => [i, i + 1]));
      expect((await other.query(`SELECT "n" FROM "T" WHERE "id" = 'c'`)).rows[0].n).toBe(30);
    });

    it('reads the newest row when two instances increment it at once: each sees the one before', async () => {
      await open(3);
      const second = new PostgresDriver(schema.uri, { poolSize: 3 });
      try {
        await other.query(`INSERT INTO "T" VALUES ('c', 0)`);
        const increment = (d: PostgresDriver) =>
          d.readThenWrite(
            { sql: 'SELECT "n" FROM "T" WHERE "id" = $1', params: ['c'] },
            { sql: 'UPDATE "T" SET "n" = "n" + $2 WHERE "id" = $1 RETURNING "n"', params: ['c', 1] },
          );
        const pairs = await Promise.all(
          Array.from({ length: 60 }, (_, i) => increment(i % 2 === 0 ? driver : second)),
        );
        const steps = pairs
          .map((p) => [Number(p.read[0].n), Number(p.written[0].n)])
          .sort((a, b) => a[0] - b[0]);
        expect(steps).toEqual(Array.from({ length: 60 }, (_, i) => [i, i + 1]));
      } finally {
        await second.close();
      }
    });

    it('runs the writes of a group whose commit the server refused again, each alone', async () => {
      await open(2);
      // Checked at commit: two rows with one `k` in a group fail the group's commit, not a statement.
      await other.query('ALTER TABLE "T" ADD COLUMN "k" text UNIQUE DEFERRABLE INITIALLY DEFERRED');
      const insert = 'INSERT INTO "T" ("id", "n", "k") VALUES ($1, $2, $3)';
      const outcomes = await Promise.allSettled([
        driver.run(insert, ['a', 1, 'same']),
        driver.run(insert, ['b', 2, 'own']),
        driver.run(insert, ['c', 3, 'same']),
      ]);
      expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected']);
      expect((outcomes[2] as PromiseRejectedResult).reason).toMatchObject({ code: '23505' });
      const { rows } = await other.query('SELECT "id" FROM "T" ORDER BY "id"');
      expect(rows.map((r) => r.id)).toEqual(['a', 'b']);
    });

    it(`starts a new group past ${MAX_GROUP_WRITES} writes`, async () => {
      await open(4);
      const count = MAX_GROUP_WRITES * 2 + 10;
      await Promise.all(Array.from({ length: count }, (_, i) => driver.run(INSERT, [`r${i}`, i])));
      expect((await other.query('SELECT count(*)::int AS n FROM "T"')).rows[0].n).toBe(count);
      expect(await writers()).toBeGreaterThanOrEqual(3);
    });

    it('leaves writes inside a transaction to that transaction', async () => {
      await open(2);
      await expect(
        driver.transaction(async () => {
          await driver.run(INSERT, ['inside', 1]);
          throw new Error('changed my mind');
        }),
      ).rejects.toThrow('changed my mind');
      expect((await other.query('SELECT count(*)::int AS n FROM "T"')).rows[0].n).toBe(0);
    });

    it('waits for the groups under way when closing', async () => {
      await open(2);
      const writes = Array.from({ length: 50 }, (_, i) => driver.run(INSERT, [`r${i}`, i]));
      await driver.close();
      await Promise.all(writes);
      expect((await other.query('SELECT count(*)::int AS n FROM "T"')).rows[0].n).toBe(50);
    });
  });

  describe('one-row INSERTs of class rows in a group run as one statement', () => {
    /** A class table's shape: objectId first, a unique name, a typed placeholder. */
    const ROW = 'INSERT INTO "R" ("objectId", "name", "score") VALUES ($1, $2, $3::float8)';
    beforeEach(async () => {
      await other.query(
        'DROP TABLE IF EXISTS "R"; CREATE TABLE "R" ("objectId" text PRIMARY KEY, "name" text UNIQUE, "score" double precision NOT NULL)',
      );
    });

    it('inserts every row, in far fewer statements than rows, each write answered once committed', async () => {
      await open(2);
      const inserts = countStatements('INSERT INTO "R"');
      let changes: Array<{ changes: number }>;
      try {
        changes = await Promise.all(
          Array.from({ length: 100 }, (_, i) => driver.run(ROW, [`id${i}`, `n${i}`, i / 2])),
        );
      } finally {
        inserts.stop();
      }
      expect(changes).toEqual(Array.from({ length: 100 }, () => ({ changes: 1 })));
      const { rows } = await other.query('SELECT "objectId", "name", "score" FROM "R" ORDER BY "score"');
      expect(rows).toEqual(
        Array.from({ length: 100 }, (_, i) => ({ objectId: `id${i}`, name: `n${i}`, score: i / 2 })),
      );
      // The first write runs alone (nothing to join yet); the others arrive together.
      expect(inserts.count()).toBeLessThanOrEqual(5);
    });

    it('answers a taken objectId or unique value as the unique violation; the other rows are inserted', async () => {
      await open(2);
      await other.query(`INSERT INTO "R" VALUES ('taken', 'old', 0)`);
      const outcomes = await Promise.allSettled([
        driver.run(ROW, ['lead', 'lead', 1]),
        driver.run(ROW, ['a', 'a', 2]),
        driver.run(ROW, ['taken', 'fresh', 3]),
        driver.run(ROW, ['b', 'old', 4]),
        driver.run(ROW, ['dup', 'dup1', 5]),
        driver.run(ROW, ['dup', 'dup2', 6]),
        driver.run(ROW, ['c', 'c', 7]),
      ]);
      expect(outcomes.map((o) => o.status)).toEqual([
        'fulfilled',
        'fulfilled',
        'rejected',
        'rejected',
        'fulfilled',
        'rejected',
        'fulfilled',
      ]);
      for (const i of [2, 3, 5])
        expect((outcomes[i] as PromiseRejectedResult).reason).toMatchObject({ code: '23505' });
      const { rows } = await other.query('SELECT "objectId", "name", "score" FROM "R" ORDER BY "score"');
      expect(rows).toEqual([
        { objectId: 'taken', name: 'old', score: 0 },
        { objectId: 'lead', name: 'lead', score: 1 },
        { objectId: 'a', name: 'a', score: 2 },
        { objectId: 'dup', name: 'dup1', score: 5 },
        { objectId: 'c', name: 'c', score: 7 },
      ]);
    });

    it('runs the rows again one by one when the statement fails: only the bad row is refused', async () => {
      await open(2);
      const outcomes = await Promise.allSettled([
        driver.run(ROW, ['lead', 'lead', 1]),
        ...Array.from({ length: 5 }, (_, i) => driver.run(ROW, [`r${i}`, `r${i}`, i])),
        driver.run(ROW, ['bad', 'bad', null]),
        ...Array.from({ length: 5 }, (_, i) => driver.run(ROW, [`s${i}`, `s${i}`, i])),
      ]);
      const refused = outcomes.filter((o) => o.status === 'rejected');
      expect(refused).toHaveLength(1);
      expect((refused[0] as PromiseRejectedResult).reason).toMatchObject({
        code: '23502',
        message: 'null value in column "score" of relation "R" violates not-null constraint',
      });
      const { rows } = await other.query('SELECT "objectId" FROM "R" ORDER BY "objectId"');
      expect(rows.map((r) => r.objectId)).toEqual([
        'lead',
        ...Array.from({ length: 5 }, (_, i) => `r${i}`),
        ...Array.from({ length: 5 }, (_, i) => `s${i}`),
      ]);
    });
  });

  describe('the statements writes of a group call for (their versions) run together before its commit', () => {
    const VERSION = 'INSERT INTO "V" ("id", "n") VALUES ($1, $2)';
    /** An increment of row `id` whose follow-up records the value it wrote in "V". */
    const increment = (id: string) =>
      driver.readThenWrite(
        { sql: 'SELECT "n" FROM "T" WHERE "id" = $1', params: [id] },
        { sql: 'UPDATE "T" SET "n" = "n" + 1 WHERE "id" = $1 RETURNING "n"', params: [id] },
        (rows) => ({ sql: VERSION, params: [id, rows.written[0]!.n] }),
      );

    beforeEach(async () => {
      await other.query(
        'DROP TABLE IF EXISTS "V"; CREATE TABLE "V" ("id" text NOT NULL, "n" integer NOT NULL CHECK ("n" < 1000))',
      );
      await other.query(`INSERT INTO "T" SELECT 'r' || i, i FROM generate_series(0, 39) AS i`);
    });

    it('records every write, in far fewer statements than writes, each write answered once committed', async () => {
      await open(2);
      const versions = countStatements('INSERT INTO "V"');
      let pairs: Array<{ read: unknown[]; written: unknown[] }>;
      try {
        pairs = await Promise.all(Array.from({ length: 40 }, (_, i) => increment(`r${i}`)));
      } finally {
        versions.stop();
      }
      expect(pairs.map((p) => p.written)).toEqual(Array.from({ length: 40 }, (_, i) => [{ n: i + 1 }]));
      const { rows } = await other.query('SELECT "id", "n" FROM "V" ORDER BY "n"');
      expect(rows).toEqual(Array.from({ length: 40 }, (_, i) => ({ id: `r${i}`, n: i + 1 })));
      // The first write runs alone (nothing to join yet); the others' versions go in together.
      expect(versions.count()).toBeLessThanOrEqual(5);
    });

    it("a follow-up the server refuses fails its own write only: the group runs again alone, that write's change undone", async () => {
      await open(2);
      await other.query(`UPDATE "T" SET "n" = 999 WHERE "id" = 'r7'`);
      const outcomes = await Promise.allSettled(Array.from({ length: 40 }, (_, i) => increment(`r${i}`)));
      const refused = outcomes.flatMap((o, i) =>
        o.status === 'rejected' ? [[i, (o.reason as Error).message]] : [],
      );
      expect(refused).toEqual([[7, 'new row for relation "V" violates check constraint "V_n_check"']]);
      const { rows } = await other.query('SELECT "id", "n" FROM "T" ORDER BY "id"');
      expect(rows.find((r) => r.id === 'r7')).toEqual({ id: 'r7', n: 999 });
      expect(rows.filter((r) => r.id !== 'r7').every((r) => r.n === Number(r.id.slice(1)) + 1)).toBe(true);
      expect((await other.query('SELECT count(*)::int AS n FROM "V"')).rows[0].n).toBe(39);
    });
  });

  describe('write lanes', () => {
    const read = (id: string) => ({ sql: 'SELECT * FROM "L" WHERE "objectId" = $1', params: [id] });
    const increment = (id: string) => ({
      sql: 'UPDATE "L" SET "n" = "n" + $2 WHERE "L"."objectId" = $1 RETURNING *',
      params: [id, 1],
    });
    const newReadList = (id: string) => ({
      sql: 'UPDATE "L" SET "_rperm" = $2 WHERE "L"."objectId" = $1 RETURNING *',
      params: [id, ['*']],
    });
    /** Ids whose updates go to lane 0 and to lane 1. */
    const ids = Array.from({ length: 50 }, (_, i) => `row${i}`);
    const inLane = (lane: number) => ids.filter((id) => writeLane(read(id), increment(id)) === lane);
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

    beforeEach(async () => {
      await other.query(
        'DROP TABLE IF EXISTS "L"; CREATE TABLE "L" ("objectId" text PRIMARY KEY, "n" integer, "_rperm" text[])',
      );
      await other.query(`INSERT INTO "L" SELECT 'row' || i, 0, NULL FROM generate_series(0, 49) i`);
    });

    it('sends an update by id to the lane of its row, and every other write to lane 0', () => {
      expect(WRITE_LANES).toBe(2);
      expect(inLane(0).length).toBeGreaterThan(5);
      expect(inLane(1).length).toBeGreaterThan(5);
      for (const id of ids) {
        // A change of the read list, a read that is not by id, a delete: lane 0.
        expect(writeLane(read(id), newReadList(id))).toBe(0);
        expect(writeLane({ sql: 'SELECT * FROM "L" WHERE "n" = $1', params: [1] }, increment(id))).toBe(0);
        expect(
          writeLane(read(id), { sql: 'DELETE FROM "L" WHERE "objectId" = $1 RETURNING *', params: [id] }),
        ).toBe(0);
      }
    });

    /**
     * Runs `fn` while another connection locks row `held` and an increment of it waits in its
     * lane; then releases the lock and answers what the increment wrote.
     */
    async function whileRowLocked(held: string, fn: () => Promise<void>) {
      const locker = await other.connect();
      try {
        await locker.query('BEGIN');
        await locker.query('SELECT * FROM "L" WHERE "objectId" = $1 FOR UPDATE', [held]);
        const waiting = driver.readThenWrite(read(held), increment(held));
        await sleep(100);
        await fn();
        await locker.query('COMMIT');
        return (await waiting).written;
      } finally {
        await locker.query('ROLLBACK').catch(() => undefined);
        locker.release();
      }
    }

    it('goes on with the other lane while a row of one lane waits for a lock', async () => {
      await open(4);
      const held = inLane(0)[0]!;
      const free = inLane(1)[0]!;
      const written = await whileRowLocked(held, async () => {
        const answered = await Promise.race([
          driver.readThenWrite(read(free), increment(free)),
          sleep(10_000).then(() => 'still waiting'),
        ]);
        expect(answered).toEqual({
          read: [{ objectId: free, n: 0, _rperm: null }],
          written: [{ objectId: free, n: 1, _rperm: null }],
        });
      });
      expect(written).toEqual([{ objectId: held, n: 1, _rperm: null }]);
    });

    it('keeps a change of the read list in lane 0, behind the writes of that lane', async () => {
      await open(4);
      const held = inLane(0)[0]!;
      const lane1Row = inLane(1)[0]!;
      let changed = false;
      let change!: Promise<{ written: unknown[] }>;
      const written = await whileRowLocked(held, async () => {
        change = driver.readThenWrite(read(lane1Row), newReadList(lane1Row)).then((rows) => {
          changed = true;
          return rows;
        });
        await sleep(300);
        expect(changed).toBe(false);
      });
      expect(written).toEqual([{ objectId: held, n: 1, _rperm: null }]);
      expect((await change).written).toEqual([{ objectId: lane1Row, n: 0, _rperm: ['*'] }]);
    });
  });

  describe('prepared statements', () => {
    const prepared = async () =>
      (await driver.all('SELECT "statement" FROM pg_prepared_statements', [])).map((r) => r.statement);

    it('prepares each statement once per connection, by name', async () => {
      await open(1);
      await other.query(`INSERT INTO "T" VALUES ('a', 1)`);
      for (let i = 0; i < 3; i++) {
        expect(await driver.get('SELECT * FROM "T" WHERE "id" = $1', ['a'])).toEqual({ id: 'a', n: 1 });
      }
      const statements = await prepared();
      expect(statements.filter((s) => s === 'SELECT * FROM "T" WHERE "id" = $1')).toHaveLength(1);
    });

    it('prepares again after a schema change of its own: the new column is read', async () => {
      await open(1);
      await other.query(`INSERT INTO "T" VALUES ('a', 1)`);
      expect(await driver.get('SELECT * FROM "T" WHERE "id" = $1', ['a'])).toEqual({ id: 'a', n: 1 });
      await driver.exec('ALTER TABLE "T" ADD COLUMN "label" text');
      expect(await driver.get('SELECT * FROM "T" WHERE "id" = $1', ['a'])).toEqual({
        id: 'a',
        n: 1,
        label: null,
      });
      // Inside a transaction too, where the statement prepared before the change would end it.
      await driver.transaction(async () => {
        expect(await driver.get('SELECT * FROM "T" WHERE "id" = $1', ['a'])).toEqual({
          id: 'a',
          n: 1,
          label: null,
        });
        await driver.exec('ALTER TABLE "T" ADD COLUMN "more" text');
        expect(await driver.get('SELECT * FROM "T" WHERE "id" = $1', ['a'])).toEqual({
          id: 'a',
          n: 1,
          label: null,
          more: null,
        });
      });
    });

    it('prepares again after another instance changed the table', async () => {
      await open(1);
      await other.query(`INSERT INTO "T" VALUES ('a', 1)`);
      expect(await driver.get('SELECT * FROM "T" WHERE "id" = $1', ['a'])).toEqual({ id: 'a', n: 1 });
      await other.query('ALTER TABLE "T" ADD COLUMN "label" text');
      // The server refuses the old plan (its rows had another shape); the driver prepares anew.
      expect(await driver.get('SELECT * FROM "T" WHERE "id" = $1', ['a'])).toEqual({
        id: 'a',
        n: 1,
        label: null,
      });
      await other.query('ALTER TABLE "T" ADD COLUMN "more" text');
      driver.tablesChanged();
      await driver.transaction(async () => {
        expect(await driver.get('SELECT * FROM "T" WHERE "id" = $1', ['a'])).toEqual({
          id: 'a',
          n: 1,
          label: null,
          more: null,
        });
      });
    });

    it('prepares an update again after another instance changed the table', async () => {
      await open(1);
      await other.query(`INSERT INTO "T" VALUES ('a', 1)`);
      const increment = () =>
        driver.readThenWrite(
          { sql: 'SELECT * FROM "T" WHERE "id" = $1', params: ['a'] },
          { sql: 'UPDATE "T" SET "n" = "n" + 1 WHERE "id" = $1 RETURNING *', params: ['a'] },
        );
      expect(await increment()).toEqual({ read: [{ id: 'a', n: 1 }], written: [{ id: 'a', n: 2 }] });
      await other.query('ALTER TABLE "T" ADD COLUMN "label" text');
      // The group meets the refused plan and its write runs again alone, prepared anew.
      expect(await increment()).toEqual({
        read: [{ id: 'a', n: 2, label: null }],
        written: [{ id: 'a', n: 3, label: null }],
      });
    });

    it(`prepares at most ${MAX_PREPARED} statements; the others run unnamed`, async () => {
      await open(1);
      for (let i = 0; i < MAX_PREPARED + 20; i++) {
        expect(await driver.get(`SELECT $1::int + ${i} AS "v"`, [1])).toEqual({ v: 1 + i });
      }
      expect((await prepared()).length).toBeLessThanOrEqual(MAX_PREPARED);
    });
  });
});
