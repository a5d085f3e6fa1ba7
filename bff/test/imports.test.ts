import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BffFetch, findLeaks, type StartedBff, startBff } from './helpers/bff.ts';

/** Imports (start, rows, finish: one audit entry) and saved filters, over HTTP against a real service. */

const A = '/bff/apps/test-app';
const IMPORTS = `${A}/classes/Item/imports`;
let t: StartedBff;
let admin: BffFetch;
let other: BffFetch;
let viewer: BffFetch;

const auditOf = (action: string) => t.bff.ctx.audit.list({ app: 'test-app', action, limit: 1000 });
const count = async (cls = 'Item') => (await admin.get(`${A}/classes/${cls}/count`)).json.count as number;

beforeAll(async () => {
  t = await startBff({
    users: [
      { username: 'admin', role: 'admin' },
      { username: 'other', role: 'admin' },
      { username: 'viewer', role: 'read-only' },
    ],
  });
  admin = await t.login('admin');
  other = await t.login('other');
  viewer = await t.login('viewer');
  const created = await admin.post(`${A}/schemas`, {
    className: 'Item',
    fields: { name: { type: 'String' }, n: { type: 'Number' } },
  });
  expect(created.status).toBe(201);
});
afterAll(async () => {
  await t?.close();
});

describe('imports', () => {
  it('creates rows chunk by chunk and audits the whole import as one entry', async () => {
    const before = t.bff.ctx.audit.list({ app: 'test-app', limit: 1000 }).length;
    const start = await admin.post(IMPORTS, {
      file: 'items.csv',
      format: 'csv',
      keepObjectIds: false,
      addFields: { price: { type: 'Number' }, seen: { type: 'Date' } },
    });
    expect(start.status, start.text).toBe(201);
    const id = start.json.importId as string;
    expect(id).toMatch(/^[A-Za-z0-9_-]{16}$/);
    // The mapped columns exist before any row, with their types, each audited.
    const schema = (await admin.get(`${A}/schemas/Item`)).json;
    expect(schema.fields.price).toEqual({ type: 'Number' });
    expect(schema.fields.seen).toEqual({ type: 'Date' });
    expect(auditOf('schema.addField').map((e) => e.target)).toEqual(['Item.seen', 'Item.price']);

    // 130 rows: three segments of 50 (two at a time), one refused by the service.
    const rows = Array.from({ length: 130 }, (_, i) => ({
      line: i + 2,
      fields: { name: `r${i}`, n: i, price: i },
    }));
    rows[70]!.fields.n = 'seventy' as never;
    const first = await admin.post(`${IMPORTS}/${id}/rows`, { rows: rows.slice(0, 100) });
    expect(first.status, first.text).toBe(200);
    expect(first.json.created).toBe(99);
    expect(first.json.rejected).toEqual([{ line: 72, reason: expect.stringMatching(/^Error 111: /) }]);
    const second = await admin.post(`${IMPORTS}/${id}/rows`, { rows: rows.slice(100) });
    expect(second.json).toEqual({ created: 30, rejected: [] });
    expect(await count()).toBe(129);

    const done = await admin.post(`${IMPORTS}/${id}/finish`, {
      rejected: [
        { line: 140, reason: 'n: "x" is not a number' },
        { line: 3, reason: 'not a JSON object' },
      ],
      rejectedCount: 2,
      rows: 132,
    });
    expect(done.status, done.text).toBe(200);
    expect(done.json).toMatchObject({ created: 129, rejectedCount: 3, rows: 132 });
    // Rejected rows in file order, the service's and the browser's together.
    expect(done.json.rejected.map((r: { line: number }) => r.line)).toEqual([3, 72, 140]);

    const entries = auditOf('rows.import');
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      user: 'admin',
      target: 'Item',
      before: null,
      after: {
        file: 'items.csv',
        format: 'csv',
        keepObjectIds: false,
        addedFields: ['price', 'seen'],
        created: 129,
        rejectedCount: 3,
      },
    });
    // Two schema entries and one import entry: nothing per row.
    expect(t.bff.ctx.audit.list({ app: 'test-app', limit: 1000 }).length).toBe(before + 3);
    expect(auditOf('row.create')).toEqual([]);
    expect(auditOf('rows.bulkCreate')).toEqual([]);

    // A finished import takes no more rows.
    const late = await admin.post(`${IMPORTS}/${id}/rows`, { rows: rows.slice(0, 1) });
    expect(late.status).toBe(404);
    expect(late.json).toEqual({ code: 101, error: 'No such import in progress (finished or expired).' });
    expect(await count()).toBe(129);
  });

  it('keeps objectIds from the file only when asked', async () => {
    const keep = (await admin.post(IMPORTS, { file: 'a.json', format: 'json', keepObjectIds: true })).json
      .importId;
    const res = await admin.post(`${IMPORTS}/${keep}/rows`, {
      rows: [
        { line: 2, fields: { objectId: 'kept_1', name: 'kept' } },
        { line: 3, fields: { objectId: 'kept_1', name: 'again' } },
      ],
    });
    expect(res.json).toEqual({
      created: 1,
      rejected: [
        { line: 3, reason: 'Error 137: A duplicate value for a field with unique values was provided.' },
      ],
    });
    expect((await admin.get(`${A}/classes/Item/kept_1`)).json.name).toBe('kept');
    await admin.post(`${IMPORTS}/${keep}/finish`, { rejected: [], rejectedCount: 0, rows: 2 });

    const fresh = (await admin.post(IMPORTS, { file: 'b.json', format: 'json', keepObjectIds: false })).json
      .importId;
    const res2 = await admin.post(`${IMPORTS}/${fresh}/rows`, {
      rows: [{ line: 1, fields: { objectId: 'kept_2', name: 'new id' } }],
    });
    expect(res2.json.created).toBe(1);
    expect((await admin.get(`${A}/classes/Item/kept_2`)).status).toBe(404);
    await admin.post(`${IMPORTS}/${fresh}/finish`, { rejected: [], rejectedCount: 0, rows: 1 });
  });

  it('another console user cannot feed or finish my import', async () => {
    const id = (await admin.post(IMPORTS, { file: 'c.csv', format: 'csv', keepObjectIds: false })).json
      .importId;
    const n = await count();
    const res = await other.post(`${IMPORTS}/${id}/rows`, { rows: [{ line: 2, fields: { name: 'x' } }] });
    expect(res.status).toBe(404);
    expect(res.json.code).toBe(101);
    const fin = await other.post(`${IMPORTS}/${id}/finish`, { rejected: [], rejectedCount: 0, rows: 0 });
    expect(fin.status).toBe(404);
    expect(await count()).toBe(n);
    const mine = await admin.post(`${IMPORTS}/${id}/finish`, { rejected: [], rejectedCount: 0, rows: 0 });
    expect(mine.status).toBe(200);
  });

  it('refuses bad input with 107 and changes nothing', async () => {
    const n = await count();
    const entries = t.bff.ctx.audit.list({ app: 'test-app', limit: 1000 }).length;
    const bad = await admin.post(IMPORTS, { file: '', format: 'xml', keepObjectIds: 'yes' });
    expect(bad.status).toBe(400);
    expect(bad.json.code).toBe(107);
    expect(bad.json.error).toMatch(/^Invalid import: /);
    const badType = await admin.post(IMPORTS, {
      file: 'x.csv',
      format: 'csv',
      keepObjectIds: false,
      addFields: { p: { type: 'Pointer' } },
    });
    expect(badType.status).toBe(400);
    expect(badType.json.error).toContain('targetClass is required');
    const id = (await admin.post(IMPORTS, { file: 'd.csv', format: 'csv', keepObjectIds: false })).json
      .importId;
    const noLine = await admin.post(`${IMPORTS}/${id}/rows`, { rows: [{ fields: { name: 'x' } }] });
    expect(noLine.status).toBe(400);
    expect(noLine.json.error).toMatch(/^Invalid import rows: rows\.0\.line/);
    const short = await admin.post(`${IMPORTS}/${id}/finish`, {
      rejected: [{ line: 1, reason: 'a' }],
      rejectedCount: 0,
      rows: 1,
    });
    expect(short.status).toBe(400);
    expect(short.json).toEqual({
      code: 107,
      error: 'Invalid import summary: rejectedCount is below the rows listed.',
    });
    expect(await count()).toBe(n);
    expect(t.bff.ctx.audit.list({ app: 'test-app', limit: 1000 }).length).toBe(entries);
    await admin.post(`${IMPORTS}/${id}/finish`, { rejected: [], rejectedCount: 0, rows: 0 });
  });

  it('adds a Vector column with its dimension, and refuses a Vector without one', async () => {
    const noDim = await admin.post(IMPORTS, {
      file: 'v.json',
      format: 'json',
      keepObjectIds: false,
      addFields: { emb: { type: 'Vector' } },
    });
    expect(noDim.status).toBe(400);
    expect(noDim.json.error).toBe(
      'Invalid import: addFields.emb: dimension is required for Vector fields, and only for them',
    );
    const stray = await admin.post(IMPORTS, {
      file: 'v.json',
      format: 'json',
      keepObjectIds: false,
      addFields: { label: { type: 'String', dimension: 3 } },
    });
    expect(stray.status).toBe(400);
    expect(stray.json.error).toBe(
      'Invalid import: addFields.label: dimension is required for Vector fields, and only for them',
    );
    expect((await admin.get(`${A}/schemas/Item`)).json.fields.emb).toBeUndefined();

    const start = await admin.post(IMPORTS, {
      file: 'v.json',
      format: 'json',
      keepObjectIds: false,
      addFields: { emb: { type: 'Vector', dimension: 3 } },
    });
    expect(start.status, start.text).toBe(201);
    expect((await admin.get(`${A}/schemas/Item`)).json.fields.emb).toEqual({ type: 'Vector', dimension: 3 });
    const id = start.json.importId as string;
    const res = await admin.post(`${IMPORTS}/${id}/rows`, {
      rows: [
        { line: 2, fields: { name: 'vec ok', emb: [1, 2, 3] } },
        { line: 3, fields: { name: 'vec short', emb: [1, 2] } },
      ],
    });
    expect(res.json).toEqual({
      created: 1,
      rejected: [{ line: 3, reason: 'Error 111: emb is a Vector of dimension 3; got 2 numbers.' }],
    });
    await admin.post(`${IMPORTS}/${id}/finish`, { rejected: [], rejectedCount: 0, rows: 2 });
    const added = auditOf('schema.addField').find((e) => e.target === 'Item.emb');
    expect(added).toMatchObject({ before: null, after: { type: 'Vector', dimension: 3 } });
  });

  it('reports the fields the class has no column for in the summary and the audit entry', async () => {
    const id = (await admin.post(IMPORTS, { file: 'late.json', format: 'json', keepObjectIds: false })).json
      .importId;
    await admin.post(`${IMPORTS}/${id}/rows`, { rows: [{ line: 2, fields: { name: 'late' } }] });
    const unknownColumns = [
      { name: 'colour', line: 251, rows: 3 },
      { name: 'size', line: 260, rows: 1 },
    ];
    const bad = await admin.post(`${IMPORTS}/${id}/finish`, {
      rejected: [],
      rejectedCount: 0,
      rows: 1,
      unknownColumns: [{ name: 'colour', line: 251, rows: 0 }],
    });
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatch(/^Invalid import summary: unknownColumns\.0\.rows/);
    const done = await admin.post(`${IMPORTS}/${id}/finish`, {
      rejected: [],
      rejectedCount: 0,
      rows: 1,
      unknownColumns,
    });
    expect(done.status, done.text).toBe(200);
    expect(done.json).toMatchObject({ created: 1, rejectedCount: 0, rows: 1, unknownColumns });
    const entry = auditOf('rows.import').find((e) => (e.after as { file: string }).file === 'late.json');
    expect(entry?.after).toMatchObject({ created: 1, unknownColumns });

    // Without any: an empty list.
    const plain = (await admin.post(IMPORTS, { file: 'plain.json', format: 'json', keepObjectIds: false }))
      .json.importId;
    const fin = await admin.post(`${IMPORTS}/${plain}/finish`, { rejected: [], rejectedCount: 0, rows: 0 });
    expect(fin.json.unknownColumns).toEqual([]);
  });

  it('read-only users cannot import', async () => {
    const res = await viewer.post(IMPORTS, { file: 'e.csv', format: 'csv', keepObjectIds: false });
    expect(res.status).toBe(403);
    expect(res.json.code).toBe(119);
  });
});

describe('saved filters', () => {
  const F = `${A}/classes/Item/filters`;

  it('are shared by the console users of the app, and replaced by name per owner', async () => {
    const saved = await admin.post(F, { name: 'cheap', where: { price: { $lt: 10 } } });
    expect(saved.status, saved.text).toBe(201);
    expect(saved.json).toMatchObject({
      className: 'Item',
      owner: 'admin',
      name: 'cheap',
      where: { price: { $lt: 10 } },
    });
    const again = await admin.post(F, { name: 'cheap', where: { price: { $lt: 5 } } });
    expect(again.json.id).toBe(saved.json.id);
    const others = await other.post(F, { name: 'cheap', where: { price: { $lt: 1 } } });
    // Filters are their owner's until shared (console-trial.test.ts): both share theirs.
    await admin.put(`${F}/${saved.json.id}`, { shared: true });
    await other.put(`${F}/${others.json.id}`, { shared: true });

    // Another user (read-only too) sees them all, from another session.
    const list = (await viewer.get(F)).json.results;
    expect(list.map((f: { owner: string; where: unknown }) => [f.owner, f.where])).toEqual([
      ['admin', { price: { $lt: 5 } }],
      ['other', { price: { $lt: 1 } }],
    ]);
    // Per class.
    expect((await admin.get(`${A}/classes/Other/filters`)).json.results).toEqual([]);
  });

  it('only the owner deletes a filter', async () => {
    const mine = (await admin.get(F)).json.results.find((f: { owner: string }) => f.owner === 'admin');
    const refused = await other.delete(`${F}/${mine.id}`);
    expect(refused.status).toBe(403);
    expect(refused.json).toEqual({
      code: 119,
      error: 'Only admin, who saved the filter "cheap", may delete it.',
    });
    expect((await admin.get(F)).json.results).toHaveLength(2);
    const ok = await admin.delete(`${F}/${mine.id}`);
    expect(ok.status).toBe(200);
    expect((await admin.get(F)).json.results.map((f: { owner: string }) => f.owner)).toEqual(['other']);
    const gone = await admin.delete(`${F}/${mine.id}`);
    expect(gone.status).toBe(404);
    expect(gone.json).toEqual({ code: 101, error: `No saved filter ${mine.id} on Item.` });
  });

  it('refuses a bad filter with 107, and read-only users cannot save', async () => {
    const bad = await admin.post(F, { name: '', where: [] });
    expect(bad.status).toBe(400);
    expect(bad.json.code).toBe(107);
    expect(bad.json.error).toMatch(/^Invalid saved filter: /);
    const ro = await viewer.post(F, { name: 'mine', where: {} });
    expect(ro.status).toBe(403);
    expect(ro.json.code).toBe(119);
    expect((await admin.get(F)).json.results).toHaveLength(1);
  });

  it('no key in any response', () => {
    expect(findLeaks(t.responses, t.secrets)).toEqual([]);
  });
});
