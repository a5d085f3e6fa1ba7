import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOptions, validateOptions } from '../src/config/options.ts';
import type { ClassSchema } from '../src/kernel/schema.ts';
import { DEFAULT_FIELDS, defaultClassLevelPermissions } from '../src/kernel/schema.ts';
import type { StorageAdapter } from '../src/storage/adapter.ts';
import { openStore } from '../src/storage/open.ts';
import { POSTGRES_TEST_BASE, postgresAnswers } from './helpers/postgres.ts';
import { freshSchema, KEYS, startService } from './helpers/service.ts';

/**
 * What only the PostgreSQL store does: ACL lists as text[] with GIN indexes, the schema lock,
 * identifiers within 63 bytes, the planner's estimate, a test's schema dropped after it. Runs
 * against BDS_TEST_DATABASE_URL (default the local test database) and is skipped, saying why,
 * when no PostgreSQL answers there.
 */
const BASE = POSTGRES_TEST_BASE;
const reachable = await postgresAnswers('PostgreSQL store tests');

let admin: pg.Client;
beforeAll(async () => {
  if (!reachable) return;
  admin = new pg.Client({ connectionString: BASE });
  await admin.connect();
});
afterAll(async () => {
  await admin?.end();
});

const rows = async (sql: string, params: unknown[] = []) => (await admin.query(sql, params)).rows;

describe.skipIf(!reachable)('the PostgreSQL store', () => {
  it('stores the read and write lists as text[] with GIN indexes, and reads by them', async () => {
    const t = await startService({ postgresTestBase: BASE });
    try {
      const schema = t.schema!;
      const made = await t.request('POST', '/classes/Note', {
        as: 'master',
        body: { text: 'mine', ACL: { u1: { read: true, write: true }, 'role:Staff': { read: true } } },
      });
      expect(made.status).toBe(201);
      await t.request('POST', '/classes/Note', { as: 'master', body: { text: 'public' } });
      const columns = await rows(
        `SELECT column_name, data_type, udt_name FROM information_schema.columns
         WHERE table_schema = $1 AND table_name = 'Note' AND column_name IN ('_rperm', '_wperm') ORDER BY column_name`,
        [schema],
      );
      expect(columns).toEqual([
        { column_name: '_rperm', data_type: 'ARRAY', udt_name: '_text' },
        { column_name: '_wperm', data_type: 'ARRAY', udt_name: '_text' },
      ]);
      const stored = await rows(`SELECT "_rperm", "_wperm" FROM "${schema}"."Note" WHERE text = 'mine'`);
      expect(stored).toEqual([{ _rperm: ['u1', 'role:Staff'], _wperm: ['u1'] }]);
      const indexes = await rows(
        `SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND tablename = 'Note'`,
        [schema],
      );
      const defs = indexes.map((r) => String(r.indexdef));
      expect(defs.some((d) => /USING gin \(_rperm\)/.test(d))).toBe(true);
      expect(defs.some((d) => /USING gin \(_wperm\)/.test(d))).toBe(true);
      // The public row for anyone; the other one only through a principal its list names.
      const anyone = await t.request('GET', '/classes/Note');
      expect(anyone.json.results.map((r: { text: string }) => r.text)).toEqual(['public']);
      const counted = await t.request('GET', '/classes/Note', { query: { count: 1, limit: 0 } });
      expect(counted.json).toEqual({ results: [], count: 1 });
      const read = await t.request('GET', `/classes/Note/${made.json.objectId}`, { as: 'master' });
      expect(read.json.ACL).toEqual({ u1: { read: true, write: true }, 'role:Staff': { read: true } });
    } finally {
      await t.close();
    }
  });

  it('two stores adding the same field at once both succeed, and the table has one such column', async () => {
    const db = await freshSchema(BASE);
    const dir = mkdtempSync(path.join(tmpdir(), 'bds-pg-'));
    const stores: StorageAdapter[] = [];
    try {
      const open = () =>
        openStore({ databaseURI: db.uri, databasePoolSize: 3, dataDir: dir, sqliteSynchronous: 'normal' });
      stores.push(await open(), await open());
      const base: ClassSchema = {
        className: 'Race',
        fields: { ...DEFAULT_FIELDS },
        classLevelPermissions: defaultClassLevelPermissions('Race'),
        indexes: {},
      };
      await stores[0]!.createClass(base);
      const withField: ClassSchema = { ...base, fields: { ...base.fields, score: { type: 'Number' } } };
      const change = {
        addFields: [['score', { type: 'Number' as const }]] as Array<[string, { type: 'Number' }]>,
        deleteFields: [],
        addIndexes: [],
        dropIndexes: [],
      };
      const results = await Promise.allSettled(stores.map((s) => s.changeSchema(withField, change)));
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled']);
      const columns = await rows(
        `SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'Race' AND column_name = 'score'`,
        [db.name],
      );
      expect(columns).toEqual([{ column_name: 'score', data_type: 'double precision' }]);
      expect((await stores[1]!.loadSchemas()).find((s) => s.className === 'Race')?.fields.score).toEqual({
        type: 'Number',
      });
      // A schema change waits for the lock another instance holds.
      await admin.query('BEGIN');
      let settled = false;
      try {
        await admin.query(`SELECT pg_advisory_xact_lock(hashtext($1 || ':bds-schema'))`, [db.name]);
        const more: ClassSchema = { ...withField, fields: { ...withField.fields, more: { type: 'String' } } };
        const pending = stores[0]!
          .changeSchema(more, { ...change, addFields: [['more', { type: 'String' }]] })
          .then(() => {
            settled = true;
          });
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(settled).toBe(false);
        await admin.query('COMMIT');
        await pending;
        expect(settled).toBe(true);
      } finally {
        if (!settled) await admin.query('ROLLBACK');
      }
    } finally {
      for (const s of stores) await s.close();
      await db.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keeps every table, index and trigger name of a 120-character class within 63 bytes', async () => {
    const t = await startService({ postgresTestBase: BASE });
    try {
      const schema = t.schema!;
      const className = `L${'o'.repeat(118)}g`;
      const created = await t.request('POST', `/schemas/${className}`, {
        as: 'master',
        body: {
          fields: { n: { type: 'Number' }, friends: { type: 'Relation', targetClass: '_User' } },
          indexes: { by_n_with_a_long_index_name: { n: 1 } },
        },
      });
      expect(created.status).toBe(200);
      expect(
        (await t.request('POST', `/classes/${className}`, { as: 'master', body: { n: 5 } })).status,
      ).toBe(201);
      const names = (
        await rows(
          `SELECT relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1
           UNION ALL SELECT tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname = $1 AND NOT t.tgisinternal`,
          [schema],
        )
      ).map((r) => String(r.name));
      // PostgreSQL names the primary key itself (`<table>_pkey`, cut to 63 bytes); the store names the rest.
      const long = names.filter((n) => n.startsWith('Looo') && !n.endsWith('_pkey'));
      // The table, its join table is `_Join:…`; the indexes and the three count triggers.
      expect(long.length).toBeGreaterThanOrEqual(6);
      for (const name of long) expect(name, name).toMatch(/_[0-9a-f]{8}$/);
      for (const name of names) expect(Buffer.byteLength(name), name).toBeLessThanOrEqual(63);
      const found = await t.request('GET', `/classes/${className}`, {
        as: 'master',
        query: { where: { n: 5 } },
      });
      expect(found.json.results).toHaveLength(1);
    } finally {
      await t.close();
    }
  });

  it('answers the planner estimate for a class once analyzed (scaled to its pages now), its exact count before', async () => {
    const t = await startService({ postgresTestBase: BASE });
    try {
      for (let i = 0; i < 12; i++) await t.request('POST', '/classes/Est', { as: 'master', body: { i } });
      expect((await t.request('GET', '/schemas/Est', { as: 'master' })).json.estimatedCount).toBe(12);
      await rows(`ANALYZE "${t.schema}"."Est"`);
      await rows(`UPDATE pg_class SET reltuples = 1000 WHERE oid = to_regclass('"${t.schema}"."Est"')`);
      expect((await t.request('GET', '/schemas/Est', { as: 'master' })).json.estimatedCount).toBe(1000);
      // Scaled as the planner does: rows per page when analyzed, times the pages the table has now.
      await rows(`UPDATE pg_class SET relpages = 2 WHERE oid = to_regclass('"${t.schema}"."Est"')`);
      expect((await t.request('GET', '/schemas/Est', { as: 'master' })).json.estimatedCount).toBe(500);
    } finally {
      await t.close();
    }
  });

  it('keeps JSON as written: key order, through nested sets, increments and array operations', async () => {
    const t = await startService({ postgresTestBase: BASE });
    try {
      // jsonb would answer {"b":…,"zz":…,"aaa":…} (shorter keys first): the text type keeps the order.
      const body = { o: { zz: 1, b: { y: 2, x: 1 }, aaa: 'three' }, list: [{ q: 1, p: 2 }, 'x'] };
      const made = await t.request('POST', '/classes/Doc', { as: 'master', body });
      expect(made.status).toBe(201);
      const id = made.json.objectId as string;
      const updated = await t.request('PUT', `/classes/Doc/${id}`, {
        as: 'master',
        body: {
          'o.b.x': { __op: 'Increment', amount: 2 },
          'o.new': 'n',
          list: {
            __op: 'AddUnique',
            objects: [
              { q: 1, p: 2 },
              { s: 3, r: 4 },
            ],
          },
        },
      });
      expect(updated.status, updated.text).toBe(200);
      const read = await t.request('GET', `/classes/Doc/${id}`, { as: 'master' });
      expect(JSON.stringify(read.json.o)).toBe('{"zz":1,"b":{"y":2,"x":3},"aaa":"three","new":"n"}');
      expect(JSON.stringify(read.json.list)).toBe('[{"q":1,"p":2},"x",{"s":3,"r":4}]');
      const stored = await rows(`SELECT o, list FROM "${t.schema}"."Doc"`);
      expect(stored).toEqual([
        {
          o: '{"zz":1,"b":{"y":2,"x":3},"aaa":"three","new":"n"}',
          list: '[{"q":1,"p":2},"x",{"s":3,"r":4}]',
        },
      ]);
      const removed = await t.request('PUT', `/classes/Doc/${id}`, {
        as: 'master',
        body: { 'o.b': { __op: 'Delete' }, list: { __op: 'Remove', objects: ['x'] } },
      });
      expect(removed.status, removed.text).toBe(200);
      const after = await rows(`SELECT o, list FROM "${t.schema}"."Doc"`);
      expect(after).toEqual([
        { o: '{"zz":1,"aaa":"three","new":"n"}', list: '[{"q":1,"p":2},{"s":3,"r":4}]' },
      ]);
    } finally {
      await t.close();
    }
  });

  it('answers a value holding U+0000 with 107, never a 500', async () => {
    const t = await startService({ postgresTestBase: BASE });
    try {
      const expected = {
        code: 107,
        error: 'A value holds the character U+0000, which the store cannot keep.',
      };
      const text = await t.request('POST', '/classes/Nul', { as: 'master', body: { s: 'a\u0000b' } });
      expect([text.status, text.json]).toEqual([400, expected]);
      // Inside JSON it is the escape `\u0000`, which text keeps: the object reads back whole.
      const json = await t.request('POST', '/classes/Nul', { as: 'master', body: { o: { k: 'a\u0000b' } } });
      expect(json.status).toBe(201);
      const read = await t.request('GET', `/classes/Nul/${json.json.objectId}`, { as: 'master' });
      expect(read.json.o).toEqual({ k: 'a\u0000b' });
      const login = await t.request('POST', '/login', { body: { username: 'x\u0000', password: 'pw' } });
      expect([login.status, login.json]).toEqual([400, expected]);
    } finally {
      await t.close();
    }
  });

  it('two requests creating one new class with different fields at once both land, with both fields', async () => {
    const t = await startService({ postgresTestBase: BASE });
    try {
      const [a, b] = await Promise.all([
        t.request('POST', '/classes/Fresh', { as: 'master', body: { left: 1 } }),
        t.request('POST', '/classes/Fresh', { as: 'master', body: { right: 'r' } }),
      ]);
      expect([a.status, b.status]).toEqual([201, 201]);
      const schema = await t.request('GET', '/schemas/Fresh', { as: 'master' });
      expect(schema.json.fields.left).toEqual({ type: 'Number' });
      expect(schema.json.fields.right).toEqual({ type: 'String' });
      const found = await t.request('GET', '/classes/Fresh', { as: 'master', query: { where: { left: 1 } } });
      expect(found.json.results).toHaveLength(1);
    } finally {
      await t.close();
    }
  });

  it('a unique violation inside a transaction leaves the transaction usable, as in SQLite', async () => {
    const t = await startService({ postgresTestBase: BASE });
    try {
      const first = await t.request('POST', '/users', { body: { username: 'dup', password: 'pw-1' } });
      expect(first.status).toBe(201);
      const store = t.service.core.store;
      const schema = t.service.core.schemas.get('_User')!;
      const outcome = await store.transaction(async () => {
        const refused = await store
          .insert(schema, {
            objectId: 'second',
            createdAt: new Date().toISOString(),
            values: { username: { value: 'dup', type: 'String' } },
            acl: null,
            relations: [],
          })
          .catch((err: { code?: number }) => err.code);
        // The same transaction reads on after the refused insert.
        const held = await store.findInternal('_User', 'username', 'dup', []);
        return { refused, held: held.length };
      });
      expect(outcome).toEqual({ refused: 137, held: 1 });
    } finally {
      await t.close();
    }
  });

  it('drops a test service schema when the service closes', async () => {
    const t = await startService({ postgresTestBase: BASE });
    const schema = t.schema!;
    expect(schema).toMatch(/^bds_test_/);
    expect(await rows('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema])).toHaveLength(1);
    await t.close();
    expect(await rows('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema])).toEqual([]);
  });
});

describe('the PostgreSQL options', () => {
  it('databaseURI takes postgres:// and postgresql:// URIs; the pool size has a default and an env variable', () => {
    for (const uri of ['postgres://u@h:5432/db', 'postgresql://u@h/db?sslmode=require']) {
      expect(validateOptions({ ...KEYS, databaseURI: uri }).databaseURI).toBe(uri);
    }
    expect(() => validateOptions({ ...KEYS, databaseURI: 'postgres:/nohost' })).toThrow(
      /Invalid option "databaseURI": must be sqlite:<path to a file> \(the embedded store\) or postgres:\/\/<user>@<host>\/<database>/,
    );
    expect(validateOptions({ ...KEYS }).databasePoolSize).toBe(10);
    const env = { BDS_DATABASE_URL: 'postgres://u@h/db', BDS_DATABASE_POOL_SIZE: '25', ...envKeys };
    const { options } = loadOptions(env, undefined);
    expect([options.databaseURI, options.databasePoolSize]).toEqual(['postgres://u@h/db', 25]);
    expect(() => validateOptions({ ...KEYS, databasePoolSize: 0 })).toThrow(
      /Invalid option "databasePoolSize"/,
    );
  });
});

const envKeys = {
  BDS_APP_ID: KEYS.appId,
  BDS_MASTER_KEY: KEYS.masterKey,
  BDS_REST_API_KEY: KEYS.restAPIKey,
  BDS_JAVASCRIPT_KEY: KEYS.javascriptKey,
};
