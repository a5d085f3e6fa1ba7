import type { BatchItem, BatchRequest, Client, Result } from '@bds/client';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry, AuditLog, BffContext, ConsoleUser } from '../src/context.ts';
import { registerApiRoutes } from '../src/routes/index.ts';
import { COUNT_CONCURRENCY, mapConcurrent } from '../src/routes/schemas.ts';
import { type BffFetch, findLeaks, KEYS, type StartedBff, startBff } from './helpers/bff.ts';

/**
 * Bulk create (POST .../bulk/create), the schema list's counts and indexes, and the on-demand
 * count route, over HTTP against a real service.
 */

const A = '/bff/apps/test-app';
let t: StartedBff;
let admin: BffFetch;
let viewer: BffFetch;

const auditOf = (action: string) => t.bff.ctx.audit.list({ app: 'test-app', action, limit: 1000 });

beforeAll(async () => {
  t = await startBff();
  admin = await t.login('admin');
  viewer = await t.login('viewer');
  const created = await admin.post(`${A}/schemas`, {
    className: 'Item',
    fields: { name: { type: 'String' }, n: { type: 'Number' } },
    indexes: { by_n: { n: -1 } },
  });
  expect(created.status).toBe(201);
});
afterAll(async () => {
  await t?.close();
});

describe('POST /bff/apps/:appId/classes/:className/bulk/create', () => {
  it('creates rows across several /batch segments and answers per row', async () => {
    const rows = Array.from({ length: 120 }, (_, i) => ({ name: `item ${i}`, n: i }));
    rows[75] = { name: 'bad', n: 'not a number' } as never;
    const auditBefore = auditOf('rows.bulkCreate').length;
    const res = await admin.post(`${A}/classes/Item/bulk/create`, { rows });
    expect(res.status, res.text).toBe(200);
    expect(res.json).toMatchObject({ succeeded: 119, failed: 1 });
    expect(res.json.results).toHaveLength(120);
    for (const [i, r] of res.json.results.entries()) {
      if (i === 75) continue;
      expect(r.success.objectId).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(typeof r.success.createdAt).toBe('string');
    }
    // The service's own error for the refused row, with its code and text.
    expect(res.json.results[75].error).toEqual({ code: 111, error: expect.any(String) });

    // Order is kept: row i of the answer is row i of the request.
    const row60 = await admin.get(`${A}/classes/Item/${res.json.results[60].success.objectId}`);
    expect(row60.json).toMatchObject({ name: 'item 60', n: 60 });
    expect((await admin.get(`${A}/classes/Item/count`)).json).toEqual({ count: 119 });

    // One audit entry for the whole operation, after = the answer.
    const entries = auditOf('rows.bulkCreate');
    expect(entries).toHaveLength(auditBefore + 1);
    const [entry] = entries;
    expect(entry).toMatchObject({
      user: 'admin',
      app: 'test-app',
      action: 'rows.bulkCreate',
      target: 'Item',
    });
    expect(entry!.before).toBeNull();
    expect(entry!.after).toEqual(res.json);
  });

  it('accepts exactly 1,000 rows', async () => {
    const rows = Array.from({ length: 1000 }, (_, i) => ({ name: 'many', n: i }));
    const res = await admin.post(`${A}/classes/Many/bulk/create`, { rows });
    expect(res.status, res.text).toBe(200);
    expect(res.json).toMatchObject({ succeeded: 1000, failed: 0 });
    expect((await admin.get(`${A}/classes/Many/count`)).json).toEqual({ count: 1000 });
  });

  it.each([
    ['no rows', { rows: [] }, 'rows'],
    ['more than 1,000 rows', { rows: Array.from({ length: 1001 }, () => ({ n: 1 })) }, 'rows'],
    ['a row that is not an object', { rows: [{ n: 1 }, 2] }, 'rows.1'],
    ['rows missing', { objects: [{ n: 1 }] }, 'rows'],
    ['an unknown key', { rows: [{ n: 1 }], transaction: true }, 'transaction'],
  ])('zod refuses %s (400, code 107, names the field)', async (_name, body, field) => {
    const auditBefore = auditOf('rows.bulkCreate').length;
    const res = await admin.post(`${A}/classes/Item/bulk/create`, body);
    expect(res.status).toBe(400);
    expect(res.json.code).toBe(107);
    expect(res.json.error).toContain('Invalid bulk create');
    expect(res.json.error).toContain(field);
    expect(auditOf('rows.bulkCreate')).toHaveLength(auditBefore);
  });

  it('refuses a bad class name', async () => {
    const res = await admin.post(`${A}/classes/bad-name/bulk/create`, { rows: [{ n: 1 }] });
    expect(res.status).toBe(400);
    expect(res.json.code).toBe(107);
  });

  it("passes the service's errors through per row (nothing created, still audited)", async () => {
    const auditBefore = auditOf('rows.bulkCreate').length;
    const res = await admin.post(`${A}/classes/Item/bulk/create`, {
      rows: [{ n: 'x' }, { name: 5 }],
    });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ succeeded: 0, failed: 2 });
    for (const r of res.json.results) {
      expect(r.error.code).toBe(111);
      expect(typeof r.error.error).toBe('string');
    }
    expect(auditOf('rows.bulkCreate')).toHaveLength(auditBefore + 1);
  });

  it('hides credentials the service answers with (users created in bulk)', async () => {
    const res = await admin.post(`${A}/classes/_User/bulk/create`, {
      rows: [
        { username: 'bulk1', password: 'pw-bulk-1' },
        { username: 'bulk1', password: 'pw-bulk-2' },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ succeeded: 1, failed: 1 });
    expect(res.json.results[1].error.code).toBe(202);
    expect(res.text).not.toContain('pw-bulk-');
    expect(res.text).not.toMatch(/"sessionToken":"r:/);
    const [entry] = auditOf('rows.bulkCreate');
    expect(JSON.stringify(entry)).not.toMatch(/"sessionToken":"r:|pw-bulk-/);
  });

  it('is refused for a read-only console user (403, code 119), nothing created or audited', async () => {
    const auditBefore = t.bff.ctx.audit.list({ limit: 1000 }).length;
    const before = (await admin.get(`${A}/classes/Item/count`)).json.count;
    const res = await viewer.post(`${A}/classes/Item/bulk/create`, { rows: [{ name: 'ro', n: 1 }] });
    expect(res.status).toBe(403);
    expect(res.json.code).toBe(119);
    expect((await admin.get(`${A}/classes/Item/count`)).json.count).toBe(before);
    expect(t.bff.ctx.audit.list({ limit: 1000 })).toHaveLength(auditBefore);
  });

  it('is refused without the CSRF header', async () => {
    const res = await admin.post(`${A}/classes/Item/bulk/create`, { rows: [{ n: 1 }] }, { csrf: false });
    expect(res.status).toBe(403);
  });
});

describe('bulk create when a whole /batch segment fails', () => {
  /** The routes on a stub client whose /batch refuses the segment number `failAt` (0-based). */
  async function withStub(
    failAt: number,
    fn: (base: string, audit: AuditEntry[], calls: BatchRequest[][]) => Promise<void>,
  ) {
    const calls: BatchRequest[][] = [];
    const client = {
      async batch(requests: BatchRequest[]): Promise<Result<BatchItem[]>> {
        calls.push(requests);
        if (requests.length > 50) throw new Error('a segment larger than 50');
        if (calls.length - 1 === failAt) {
          return { success: false, status: 400, code: 107, error: 'Segment refused.' } as never;
        }
        return {
          success: true,
          status: 200,
          data: requests.map((_, i) => ({ success: { objectId: `id${calls.length}_${i}` } })),
        };
      },
    } as unknown as Client;
    const audit: AuditEntry[] = [];
    const log: AuditLog = {
      record: (e) => audit.push({ ...e, id: audit.length + 1, at: new Date().toISOString() }),
      list: () => audit,
      close: () => {},
    };
    const ctx: BffContext = {
      apps: {
        list: () => [],
        clientFor: () => client,
        has: () => true,
        parseSources: () => [],
        secrets: () => [],
      },
      audit: log,
      filters: {} as never,
    };
    const user: ConsoleUser = { username: 'stub-admin', role: 'admin' };
    const app = express();
    app.use((req, _res, next) => {
      (req as typeof req & { consoleUser: ConsoleUser }).consoleUser = user;
      next();
    });
    const router = express.Router();
    registerApiRoutes(router, ctx);
    app.use('/bff', router);
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    try {
      await fn(`http://127.0.0.1:${(server.address() as { port: number }).port}`, audit, calls);
    } finally {
      await new Promise((r) => server.close(r));
    }
  }
  const post = (base: string, rows: unknown[]) =>
    fetch(`${base}/bff/apps/stub/classes/Item/bulk/create`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ rows }),
    });
  const rows = (n: number) => Array.from({ length: n }, (_, i) => ({ n: i }));

  it('a later segment: earlier rows kept, the rest carry the service error, one audit entry', async () => {
    await withStub(1, async (base, audit, calls) => {
      const res = await post(base, rows(130));
      expect(res.status).toBe(200);
      const json = (await res.json()) as any;
      expect(calls.map((c) => c.length)).toEqual([50, 50]);
      expect(json).toMatchObject({ succeeded: 50, failed: 80 });
      expect(json.results[49]).toEqual({ success: { objectId: 'id1_49' } });
      expect(json.results[50]).toEqual({ error: { code: 107, error: 'Segment refused.' } });
      expect(json.results[129]).toEqual({ error: { code: 107, error: 'Segment refused.' } });
      expect(audit).toHaveLength(1);
      expect(audit[0]).toMatchObject({ action: 'rows.bulkCreate', target: 'Item', user: 'stub-admin' });
      expect(audit[0]!.after).toEqual(json);
    });
  });

  it('the first segment: the service error is the answer, nothing audited', async () => {
    await withStub(0, async (base, audit) => {
      const res = await post(base, rows(10));
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ code: 107, error: 'Segment refused.' });
      expect(audit).toHaveLength(0);
    });
  });

  it('segments of 50 POSTs to the class path', async () => {
    await withStub(-1, async (base, audit, calls) => {
      const res = await post(base, rows(101));
      expect(res.status).toBe(200);
      expect(calls.map((c) => c.length)).toEqual([50, 50, 1]);
      expect(calls[0]![0]).toEqual({ method: 'POST', path: '/classes/Item', body: { n: 0 } });
      expect(audit).toHaveLength(1);
    });
  });
});

describe('GET /bff/apps/:appId/schemas: counts and indexes', () => {
  it('every class carries its exact count, countExact and its indexes', async () => {
    const res = await viewer.get(`${A}/schemas`);
    expect(res.status).toBe(200);
    for (const c of res.json.results) {
      expect(typeof c.count, c.className).toBe('number');
      expect(c.countExact, c.className).toBe(true);
      expect(typeof c.indexes, c.className).toBe('object');
    }
    const item = res.json.results.find((c: any) => c.className === 'Item');
    expect(item.count).toBe((await admin.get(`${A}/classes/Item/count`)).json.count);
    expect(item.indexes).toMatchObject({ by_n: { n: -1 } });
    expect(res.json.results.find((c: any) => c.className === 'Many').count).toBe(1000);
  });

  it('an index added later shows up in the list', async () => {
    expect(
      (await admin.post(`${A}/schemas/Item/indexes`, { name: 'by_name', keys: { name: 1 } })).status,
    ).toBe(201);
    const res = await admin.get(`${A}/schemas`);
    const item = res.json.results.find((c: any) => c.className === 'Item');
    expect(item.indexes).toMatchObject({ by_n: { n: -1 }, by_name: { name: 1 } });
  });

  it('answers the classes in the service order with many classes', async () => {
    for (let i = 0; i < 6; i++) {
      expect((await admin.post(`${A}/schemas`, { className: `Extra${i}` })).status).toBe(201);
    }
    const direct = await t.service.request('GET', '/schemas', { as: 'master' });
    const res = await admin.get(`${A}/schemas`);
    expect(res.json.results.map((c: any) => c.className)).toEqual(
      direct.json.results.map((c: any) => c.className),
    );
  });

  it('counts run at most COUNT_CONCURRENCY at a time, results in order', async () => {
    expect(COUNT_CONCURRENCY).toBe(4);
    let inFlight = 0;
    let peak = 0;
    const out = await mapConcurrent(
      Array.from({ length: 11 }, (_, i) => i),
      COUNT_CONCURRENCY,
      async (n) => {
        inFlight++;
        peak = Math.max(peak, inFlight);
        await new Promise((r) => setTimeout(r, 5 + ((n * 7) % 11)));
        inFlight--;
        return n * 2;
      },
    );
    expect(peak).toBe(4);
    expect(out).toEqual(Array.from({ length: 11 }, (_, i) => i * 2));
    expect(await mapConcurrent([], 4, async () => 1)).toEqual([]);
    await expect(
      mapConcurrent([1, 2, 3], 2, async (n) => {
        if (n === 2) throw new Error('boom');
        return n;
      }),
    ).rejects.toThrow('boom');
  });

  it('an unreachable service answers 502 {code: 100}', async () => {
    const down = await startBff({
      options: {
        apps: [
          {
            id: 'down',
            name: 'Down',
            serverURL: 'http://127.0.0.1:9/api',
            appId: KEYS.appId,
            masterKey: KEYS.masterKey,
          },
        ],
      },
    });
    try {
      const a = await down.login('admin');
      const list = await a.get('/bff/apps/down/schemas');
      expect(list.status).toBe(502);
      expect(list.json.code).toBe(100);
      const bulk = await a.post('/bff/apps/down/classes/Item/bulk/create', { rows: [{ n: 1 }] });
      expect(bulk.status).toBe(502);
      expect(bulk.json.code).toBe(100);
      expect(down.bff.ctx.audit.list({})).toEqual([]);
    } finally {
      await down.close();
    }
  });
});

describe('GET /bff/apps/:appId/classes/:className/count', () => {
  it('counts on demand, with a where, for read-only users too', async () => {
    const all = await viewer.get(`${A}/classes/Item/count`);
    expect(all.status).toBe(200);
    expect(all.json).toEqual({ count: 119 });
    const some = await viewer.get(
      `${A}/classes/Item/count?where=${encodeURIComponent(JSON.stringify({ n: { $lt: 10 } }))}`,
    );
    expect(some.json).toEqual({ count: 10 });
  });

  it('zod refuses a where that is not JSON and unknown parameters', async () => {
    const bad = await viewer.get(`${A}/classes/Item/count?where=%7Bnope`);
    expect(bad.status).toBe(400);
    expect(bad.json.code).toBe(107);
    const extra = await viewer.get(`${A}/classes/Item/count?limit=1`);
    expect(extra.status).toBe(400);
    expect(extra.json.error).toContain('limit');
  });

  it("passes the service's query error through", async () => {
    const res = await viewer.get(
      `${A}/classes/Item/count?where=${encodeURIComponent(JSON.stringify({ n: { $bogus: 1 } }))}`,
    );
    expect(res.status).toBe(400);
    expect(res.json.code).toBe(102);
    expect(typeof res.json.error).toBe('string');
  });

  it('no key in any response of this suite', () => {
    expect(findLeaks(t.responses, t.secrets)).toEqual([]);
  });
});
