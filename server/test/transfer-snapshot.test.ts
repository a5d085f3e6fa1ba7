import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import type { Data } from '../src/data/data.ts';
import { MATCH_ALL } from '../src/kernel/query.ts';
import type { ClassSchema } from '../src/kernel/schema.ts';
import type { InsertSpec, StorageAdapter } from '../src/storage/adapter.ts';
import type { SqlDriver } from '../src/storage/sql/driver.ts';
import { exportApp } from '../src/transfer/export.ts';
import { ROW_PAGE, type TransferFiles } from '../src/transfer/format.ts';
import { openTransfer } from '../src/transfer/open.ts';
import { ON_POSTGRES, startService, type TestService } from './helpers/service.ts';

/**
 * The export reads one snapshot of the store (storage `snapshot`): rows created, changed or deleted
 * through the running service while an export is paused between pages are in it as they were when
 * it started. Runs on the store the helpers choose (SQLite, or PostgreSQL in `npm run test:pg`).
 */

/** Two and a half pages of rows, so the export reads the class in three queries. */
const SEEDED = ROW_PAGE * 2 + ROW_PAGE / 2;
const SEEDED_AT = '2024-05-06T07:08:09.000Z';
const idOf = (i: number) => `seed${String(i).padStart(4, '0')}`;
const SEEDED_IDS = Array.from({ length: SEEDED }, (_, i) => idOf(i));

const services: TestService[] = [];
afterEach(async () => {
  for (const t of services.splice(0)) await t.close();
});

async function service(options: Record<string, unknown> = {}): Promise<TestService> {
  const t = await startService(options);
  services.push(t);
  return t;
}

const noFiles: TransferFiles = {
  async *list() {},
  async *read() {},
  save: () => Promise.reject(new Error('not used')),
  delete: () => Promise.reject(new Error('not used')),
  validName: () => true,
};

function rowSpec(id: string, n: number, relations: InsertSpec['relations'] = []): InsertSpec {
  return {
    objectId: id,
    createdAt: SEEDED_AT,
    values: { label: { value: `row ${n}`, type: 'String' }, n: { value: n, type: 'Number' } },
    acl: null,
    relations,
  };
}

/** Class Item (label, n, tags: a Relation to Item) with SEEDED rows; seed0001's tags hold seed0002. */
async function seedItems(t: TestService): Promise<ClassSchema> {
  const created = await t.request('POST', '/schemas/Item', {
    as: 'master',
    body: {
      fields: {
        label: { type: 'String' },
        n: { type: 'Number' },
        tags: { type: 'Relation', targetClass: 'Item' },
      },
    },
  });
  expect(created.status, created.text).toBe(200);
  const { store, schemas } = t.service.core;
  const schema = schemas.get('Item')!;
  await store.transaction(async () => {
    for (let i = 0; i < SEEDED; i++) {
      const tags = i === 1 ? [{ field: 'tags', add: [idOf(2)], remove: [] }] : [];
      await store.insert(schema, rowSpec(idOf(i), i, tags));
    }
  });
  return schema;
}

/**
 * A stream that takes lines at once until the first `row` line of `className`, then holds that
 * line until `release`: the export waits for it to drain, between two pages of the class.
 */
function pausingSink(className: string) {
  const lines: Array<Record<string, any>> = [];
  let held: (() => void) | undefined;
  let released = false;
  let pausedNow!: () => void;
  const paused = new Promise<void>((resolve) => {
    pausedNow = resolve;
  });
  const out = new Writable({
    highWaterMark: 1,
    write(chunk: Buffer, _encoding, callback) {
      const line = JSON.parse(chunk.toString('utf8'));
      lines.push(line);
      if (!released && !held && line.type === 'row' && line.className === className) {
        held = () => callback();
        pausedNow();
        return;
      }
      callback();
    },
  });
  return {
    out,
    lines,
    paused,
    release() {
      released = true;
      held?.();
    },
  };
}

/**
 * Exports `data` while, with the export paused after the first Item row, the service creates three
 * rows, changes seed0900, deletes seed1000 and adds seed0003 to seed0001's tags (REST, master key).
 */
async function exportWhileWriting(t: TestService, data: Data) {
  const sink = pausingSink('Item');
  const exported = exportApp(data, noFiles, sink.out, { service: 'test', sessions: false });
  exported.catch(() => undefined);
  await sink.paused;
  // Mid-class: one Item row out, the rest of the class not read yet.
  expect(
    sink.lines.filter((l) => l.type === 'row' && l.className === 'Item').map((l) => l.row.objectId),
  ).toEqual(['seed0000']);

  const ok = (res: { status: number; text: string }, status: number) =>
    expect(res.status, res.text).toBe(status);
  for (const objectId of ['seed0000a', 'seed0600a', 'seed9999']) {
    ok(
      await t.request('POST', '/classes/Item', { as: 'master', body: { objectId, label: 'new', n: -1 } }),
      201,
    );
  }
  ok(
    await t.request('PUT', '/classes/Item/seed0900', { as: 'master', body: { label: 'changed', n: 9000 } }),
    200,
  );
  ok(await t.request('DELETE', '/classes/Item/seed1000', { as: 'master' }), 200);
  const seed0003 = { __type: 'Pointer', className: 'Item', objectId: 'seed0003' };
  ok(
    await t.request('PUT', '/classes/Item/seed0001', {
      as: 'master',
      body: { tags: { __op: 'AddRelation', objects: [seed0003] } },
    }),
    200,
  );

  sink.release();
  const summary = await exported;
  return { summary, lines: sink.lines };
}

/** The export holds the rows and relation of the seeded Item class exactly, and the service the new state. */
async function expectSnapshotExported(
  t: TestService,
  { summary, lines }: Awaited<ReturnType<typeof exportWhileWriting>>,
): Promise<void> {
  const items = new Map<string, Record<string, unknown>>();
  for (const line of lines)
    if (line.type === 'row' && line.className === 'Item') items.set(line.row.objectId, line.row);
  expect([...items.keys()]).toEqual(SEEDED_IDS);
  expect(items.get('seed0900')).toEqual({
    objectId: 'seed0900',
    createdAt: SEEDED_AT,
    updatedAt: SEEDED_AT,
    label: 'row 900',
    n: 900,
  });
  expect(items.get('seed1000')).toEqual({
    objectId: 'seed1000',
    createdAt: SEEDED_AT,
    updatedAt: SEEDED_AT,
    label: 'row 1000',
    n: 1000,
  });
  expect(lines.filter((l) => l.type === 'relation')).toEqual([
    { type: 'relation', className: 'Item', field: 'tags', owningId: 'seed0001', relatedIds: ['seed0002'] },
  ]);
  const end = lines.at(-1)!;
  expect(end).toMatchObject({ type: 'end', lines: lines.length, relations: 1 });
  expect(summary.rows).toBe(lines.filter((l) => l.type === 'row').length);

  // The service reads what it wrote.
  const changed = await t.request('GET', '/classes/Item/seed0900', { as: 'master' });
  expect(changed.json).toMatchObject({ objectId: 'seed0900', label: 'changed', n: 9000 });
  const deleted = await t.request('GET', '/classes/Item/seed1000', { as: 'master' });
  expect(deleted.status).toBe(404);
  const count = await t.request('GET', '/classes/Item', { as: 'master', query: { count: 1, limit: 0 } });
  expect(count.json.count).toBe(SEEDED - 1 + 3);
  const fresh = await t.request('GET', '/classes/Item', {
    as: 'master',
    query: { where: { n: -1 }, order: 'objectId', keys: 'objectId' },
  });
  expect(fresh.json.results.map((r: { objectId: string }) => r.objectId)).toEqual([
    'seed0000a',
    'seed0600a',
    'seed9999',
  ]);
  const tagged = await t.request('GET', '/classes/Item', {
    as: 'master',
    query: {
      where: {
        $relatedTo: { object: { __type: 'Pointer', className: 'Item', objectId: 'seed0001' }, key: 'tags' },
      },
      order: 'objectId',
      keys: 'objectId',
    },
  });
  expect(tagged.json.results.map((r: { objectId: string }) => r.objectId)).toEqual(['seed0002', 'seed0003']);
}

describe('the export reads one snapshot of the store', () => {
  it('the rows, relations and counts as they were when it started, though the service wrote meanwhile (export on the service’s own store)', async () => {
    const t = await service();
    await seedItems(t);
    await expectSnapshotExported(t, await exportWhileWriting(t, t.service.data));
  });

  it('the same from a second store on the same database, as `npm run server -- export` opens it', async () => {
    const t = await service();
    await seedItems(t);
    const app = await openTransfer(t.service.options, () => noFiles);
    try {
      await expectSnapshotExported(t, await exportWhileWriting(t, app.data));
    } finally {
      await app.close();
    }
  });
});

describe('store.snapshot', () => {
  const ids = async (store: StorageAdapter, schema: ClassSchema) =>
    (
      await store.find(
        schema,
        { where: MATCH_ALL, order: [{ path: ['objectId'], descending: false }], limit: 5000, skip: 0 },
        () => schema,
      )
    ).map((r) => r.objectId as string);

  it('refuses every write inside it with SnapshotWriteError, and reads on after a refusal', async () => {
    const t = await service();
    const schema = await seedItems(t);
    const { store } = t.service.core;
    const refused = { name: 'SnapshotWriteError', message: 'Writes are refused inside a read snapshot.' };
    const seen = await store.snapshot(async () => {
      await expect(store.insert(schema, rowSpec('inside', 1))).rejects.toMatchObject(refused);
      await expect(
        store.update(schema, { objectId: 'seed0005', updatedAt: SEEDED_AT, writes: [], relations: [] }),
      ).rejects.toMatchObject(refused);
      await expect(store.delete(schema, 'seed0006')).rejects.toMatchObject(refused);
      await expect(store.setConfig({ params: { a: 1 }, masterKeyOnly: {} })).rejects.toMatchObject(refused);
      await expect(store.transaction(async () => 1)).rejects.toMatchObject(refused);
      return ids(store, schema);
    });
    expect(seen).toEqual(SEEDED_IDS);
    expect(await store.getConfig()).toEqual({ params: {}, masterKeyOnly: {} });
    const row = await t.request('GET', '/classes/Item/seed0006', { as: 'master' });
    expect(row.json).toMatchObject({ objectId: 'seed0006', label: 'row 6' });
  });

  it('a write statement that reaches the database inside it is refused there; the snapshot ends and later writes succeed', async () => {
    const t = await service();
    const schema = await seedItems(t);
    const { store } = t.service.core;
    const driver = (store as unknown as { driver: SqlDriver }).driver;
    const update = 'UPDATE "Item" SET "n" = 0 RETURNING "objectId"';
    await expect(store.snapshot(() => driver.all(update, []))).rejects.toMatchObject(
      ON_POSTGRES
        ? { code: '25006', message: 'cannot execute UPDATE in a read-only transaction' }
        : { code: 'SQLITE_READONLY', message: 'attempt to write a readonly database' },
    );
    await expect(
      store.snapshot(async () => {
        await ids(store, schema);
        throw new Error('stopped inside');
      }),
    ).rejects.toThrow('stopped inside');

    await store.insert(schema, rowSpec('after', 7));
    const written = await t.request('PUT', '/classes/Item/seed0007', { as: 'master', body: { n: 70 } });
    expect(written.status, written.text).toBe(200);
    expect((await t.request('GET', '/classes/Item/after', { as: 'master' })).json).toMatchObject({ n: 7 });
    expect((await t.request('GET', '/classes/Item/seed0007', { as: 'master' })).json).toMatchObject({
      n: 70,
    });
    expect((await t.request('GET', '/classes/Item/seed0008', { as: 'master' })).json).toMatchObject({ n: 8 });
  });

  it('starts while a transaction is open elsewhere without seeing or waiting for it; nested calls share it; refused inside a transaction', async () => {
    const t = await service();
    const schema = await seedItems(t);
    const { store } = t.service.core;
    let commit!: () => void;
    const held = new Promise<void>((resolve) => {
      commit = resolve;
    });
    let opened!: () => void;
    const inTransaction = new Promise<void>((resolve) => {
      opened = resolve;
    });
    const transaction = store.transaction(async () => {
      await store.insert(schema, rowSpec('pending', 1));
      opened();
      await held;
    });
    await inTransaction;
    const seen = await store.snapshot(async () => {
      const before = await ids(store, schema);
      commit();
      await transaction;
      const nested = await store.snapshot(() => ids(store, schema));
      return { before, nested, after: await ids(store, schema) };
    });
    expect(seen).toEqual({ before: SEEDED_IDS, nested: SEEDED_IDS, after: SEEDED_IDS });
    expect(await ids(store, schema)).toEqual(['pending', ...SEEDED_IDS]);

    await expect(store.transaction(() => store.snapshot(async () => 1))).rejects.toMatchObject({
      name: 'SnapshotInTransactionError',
      message: 'A read snapshot cannot start inside a transaction.',
    });
  });

  it('on an in-memory SQLite store (one connection), writes from elsewhere wait until it ends', async () => {
    const t = await service({ databaseURI: 'sqlite::memory:' });
    const schema = await seedItems(t);
    const { store } = t.service.core;
    let answered = false;
    let put!: Promise<number>;
    const seen = await store.snapshot(async () => {
      put = t.request('PUT', '/classes/Item/seed0004', { as: 'master', body: { n: 40 } }).then((res) => {
        answered = true;
        return res.status;
      });
      await new Promise((resolve) => setTimeout(resolve, 100));
      await expect(store.setConfig({ params: { a: 1 }, masterKeyOnly: {} })).rejects.toMatchObject({
        name: 'SnapshotWriteError',
      });
      return { answered, rows: (await ids(store, schema)).length };
    });
    expect(seen).toEqual({ answered: false, rows: SEEDED });
    expect(await put).toBe(200);
    expect((await t.request('GET', '/classes/Item/seed0004', { as: 'master' })).json).toMatchObject({
      n: 40,
    });
    await expect(store.snapshot(() => Promise.reject(new Error('stopped inside')))).rejects.toThrow(
      'stopped inside',
    );
    await store.setConfig({ params: { a: 2 }, masterKeyOnly: {} });
    expect(await store.getConfig()).toEqual({ params: { a: 2 }, masterKeyOnly: {} });
  });

  it.skipIf(ON_POSTGRES)(
    'reads by id inside it neither answer from nor fill the row cache (SQLite: the PostgreSQL store has none)',
    async () => {
      const t = await service({ rowCacheMB: 8 });
      const schema = await seedItems(t);
      const { store } = t.service.core;
      const byId = async (objectId: string) =>
        (
          await store.find(
            schema,
            {
              where: { type: 'compare', path: ['objectId'], op: 'eq', value: objectId },
              order: [],
              limit: 1,
              skip: 0,
            },
            () => schema,
          )
        )[0]?.n;
      const put = async (objectId: string, n: number) => {
        const res = await t.request('PUT', `/classes/Item/${objectId}`, { as: 'master', body: { n } });
        expect(res.status, res.text).toBe(200);
      };
      const seen = await store.snapshot(async () => {
        // seed0010: changed, then read through the REST API (cached as changed), then in the snapshot.
        // seed0011: changed, then read first in the snapshot (which must not be kept).
        await put('seed0010', 100);
        await put('seed0011', 110);
        expect((await t.request('GET', '/classes/Item/seed0010', { as: 'master' })).json.n).toBe(100);
        return { seed0010: await byId('seed0010'), seed0011: await byId('seed0011') };
      });
      expect(seen).toEqual({ seed0010: 10, seed0011: 11 });
      expect(await byId('seed0010')).toBe(100);
      expect(await byId('seed0011')).toBe(110);
      expect((await t.request('GET', '/classes/Item/seed0011', { as: 'master' })).json.n).toBe(110);
    },
  );
});
