import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConsoleUser } from '../src/context.ts';
import { registerApiRoutes } from '../src/routes/index.ts';
import { type BffFetch, findLeaks, type StartedBff, startBff } from './helpers/bff.ts';

/**
 * A read-only console session gets 403 for EVERY write route. The table must list every
 * non-GET route that registerApiRoutes registers (checked against the router itself).
 */

const A = '/bff/apps/test-app';
const WRITE_ROUTES: Array<{
  method: 'POST' | 'PUT' | 'DELETE';
  route: string;
  path: string;
  body?: unknown;
}> = [
  {
    method: 'POST',
    route: '/apps/:appId/classes/:className/imports',
    path: `${A}/classes/Thing/imports`,
    body: { file: 'x.csv', format: 'csv', keepObjectIds: false, addFields: { f: { type: 'String' } } },
  },
  {
    method: 'POST',
    route: '/apps/:appId/classes/:className/imports/:importId/rows',
    path: `${A}/classes/Thing/imports/some-import/rows`,
    body: { rows: [{ line: 2, fields: { n: 2 } }] },
  },
  {
    method: 'POST',
    route: '/apps/:appId/classes/:className/imports/:importId/finish',
    path: `${A}/classes/Thing/imports/some-import/finish`,
    body: { rejected: [], rejectedCount: 0, rows: 0 },
  },
  {
    method: 'POST',
    route: '/apps/:appId/classes/:className/filters',
    path: `${A}/classes/Thing/filters`,
    body: { name: 'f', where: {} },
  },
  {
    method: 'PUT',
    route: '/apps/:appId/classes/:className/filters/:filterId',
    path: `${A}/classes/Thing/filters/1`,
    body: { shared: true },
  },
  {
    method: 'DELETE',
    route: '/apps/:appId/classes/:className/filters/:filterId',
    path: `${A}/classes/Thing/filters/1`,
  },
  { method: 'POST', route: '/apps/:appId/schemas', path: `${A}/schemas`, body: { className: 'RoClass' } },
  { method: 'DELETE', route: '/apps/:appId/schemas/:className', path: `${A}/schemas/Thing` },
  {
    method: 'POST',
    route: '/apps/:appId/schemas/:className/fields',
    path: `${A}/schemas/Thing/fields`,
    body: { name: 'f', type: 'String' },
  },
  {
    method: 'DELETE',
    route: '/apps/:appId/schemas/:className/fields/:fieldName',
    path: `${A}/schemas/Thing/fields/n`,
  },
  {
    method: 'POST',
    route: '/apps/:appId/schemas/:className/indexes',
    path: `${A}/schemas/Thing/indexes`,
    body: { name: 'i', keys: { n: 1 } },
  },
  {
    method: 'DELETE',
    route: '/apps/:appId/schemas/:className/indexes/:indexName',
    path: `${A}/schemas/Thing/indexes/i`,
  },
  {
    method: 'PUT',
    route: '/apps/:appId/schemas/:className/clp',
    path: `${A}/schemas/Thing/clp`,
    body: { classLevelPermissions: {} },
  },
  { method: 'POST', route: '/apps/:appId/classes/:className', path: `${A}/classes/Thing`, body: { n: 1 } },
  {
    method: 'PUT',
    route: '/apps/:appId/classes/:className/:objectId',
    path: `${A}/classes/Thing/ID`,
    body: { n: 2 },
  },
  { method: 'DELETE', route: '/apps/:appId/classes/:className/:objectId', path: `${A}/classes/Thing/ID` },
  {
    method: 'PUT',
    route: '/apps/:appId/classes/:className/:objectId/acl',
    path: `${A}/classes/Thing/ID/acl`,
    body: { ACL: {} },
  },
  {
    method: 'POST',
    route: '/apps/:appId/classes/:className/bulk/create',
    path: `${A}/classes/Thing/bulk/create`,
    body: { rows: [{ n: 4 }] },
  },
  {
    method: 'POST',
    route: '/apps/:appId/classes/:className/bulk/delete',
    path: `${A}/classes/Thing/bulk/delete`,
    body: { objectIds: ['ID'] },
  },
  {
    method: 'POST',
    route: '/apps/:appId/classes/:className/bulk/update',
    path: `${A}/classes/Thing/bulk/update`,
    body: { objectIds: ['ID'], field: 'n', value: 3 },
  },
  { method: 'POST', route: '/apps/:appId/roles', path: `${A}/roles`, body: { name: 'RoRole' } },
  { method: 'DELETE', route: '/apps/:appId/roles/:roleId', path: `${A}/roles/ROLE` },
  {
    method: 'POST',
    route: '/apps/:appId/roles/:roleId/users',
    path: `${A}/roles/ROLE/users`,
    body: { userIds: ['U'] },
  },
  { method: 'DELETE', route: '/apps/:appId/roles/:roleId/users/:userId', path: `${A}/roles/ROLE/users/U` },
  {
    method: 'POST',
    route: '/apps/:appId/roles/:roleId/roles',
    path: `${A}/roles/ROLE/roles`,
    body: { roleIds: ['R'] },
  },
  { method: 'DELETE', route: '/apps/:appId/roles/:roleId/roles/:childId', path: `${A}/roles/ROLE/roles/R` },
  {
    method: 'POST',
    route: '/apps/:appId/users',
    path: `${A}/users`,
    body: { username: 'ro', password: 'pw' },
  },
  {
    method: 'PUT',
    route: '/apps/:appId/users/:objectId',
    path: `${A}/users/U`,
    body: { email: 'x@example.com' },
  },
  { method: 'DELETE', route: '/apps/:appId/users/:objectId', path: `${A}/users/U` },
  { method: 'DELETE', route: '/apps/:appId/sessions/:objectId', path: `${A}/sessions/S` },
  { method: 'PUT', route: '/apps/:appId/config', path: `${A}/config`, body: { params: { ro: 1 } } },
  {
    method: 'POST',
    route: '/apps/:appId/console',
    path: `${A}/console`,
    body: { method: 'GET', path: '/classes/Thing' },
  },
  {
    method: 'POST',
    route: '/apps/:appId/cloud/functions/:name',
    path: `${A}/cloud/functions/hello`,
    body: {},
  },
  {
    method: 'POST',
    route: '/apps/:appId/cloud/functions/:name/rows',
    path: `${A}/cloud/functions/hello/rows`,
    body: { className: 'Thing', objectIds: ['abcdefghij'] },
  },
  { method: 'POST', route: '/apps/:appId/cloud/jobs/:name', path: `${A}/cloud/jobs/tick`, body: {} },
  {
    method: 'POST',
    route: '/apps/:appId/cloud/schedules',
    path: `${A}/cloud/schedules`,
    body: { jobName: 'tick', cron: '* * * * *' },
  },
  {
    method: 'PUT',
    route: '/apps/:appId/cloud/schedules/:objectId',
    path: `${A}/cloud/schedules/S`,
    body: {},
  },
  { method: 'DELETE', route: '/apps/:appId/cloud/schedules/:objectId', path: `${A}/cloud/schedules/S` },
  {
    method: 'POST',
    route: '/apps/:appId/cloud/hooks/functions',
    path: `${A}/cloud/hooks/functions`,
    body: { functionName: 'f', url: 'https://example.com/f' },
  },
  {
    method: 'POST',
    route: '/apps/:appId/cloud/hooks/triggers',
    path: `${A}/cloud/hooks/triggers`,
    body: { className: 'Thing', triggerName: 'afterSave', url: 'https://example.com/t' },
  },
  {
    method: 'PUT',
    route: '/apps/:appId/cloud/hooks/functions/:name',
    path: `${A}/cloud/hooks/functions/f`,
    body: { url: 'https://example.com/g' },
  },
  {
    method: 'PUT',
    route: '/apps/:appId/cloud/hooks/triggers/:className/:triggerName',
    path: `${A}/cloud/hooks/triggers/Thing/afterSave`,
    body: { url: 'https://example.com/g' },
  },
  {
    method: 'DELETE',
    route: '/apps/:appId/cloud/hooks/functions/:name',
    path: `${A}/cloud/hooks/functions/f`,
  },
  {
    method: 'DELETE',
    route: '/apps/:appId/cloud/hooks/triggers/:className/:triggerName',
    path: `${A}/cloud/hooks/triggers/Thing/afterSave`,
  },
  { method: 'POST', route: '/apps/:appId/files/:name', path: `${A}/files/x.txt`, body: { a: 1 } },
  {
    method: 'DELETE',
    route: '/apps/:appId/files/:name',
    path: `${A}/files/0123456789abcdef0123456789abcdef_x.txt`,
  },
  {
    method: 'POST',
    route: '/apps/:appId/push',
    path: `${A}/push`,
    body: { where: {}, data: { alert: 'x' } },
  },
  {
    method: 'POST',
    route: '/apps/:appId/users/:objectId/password-reset',
    path: `${A}/users/U/password-reset`,
  },
  {
    method: 'PUT',
    route: '/apps/:appId/users/:objectId/password',
    path: `${A}/users/U/password`,
    body: { password: 'read-only pw' },
  },
  {
    method: 'POST',
    route: '/apps/:appId/performance/classes/:className/indexes',
    path: `${A}/performance/classes/Thing/indexes`,
    body: { shape: 'Thing|eq:n|range:|sort:' },
  },
  {
    method: 'DELETE',
    route: '/apps/:appId/performance/classes/:className/indexes/:indexName',
    path: `${A}/performance/classes/Thing/indexes/Thing%3Aauto%3An`,
  },
  {
    method: 'POST',
    route: '/apps/:appId/transfer/parse',
    path: `${A}/transfer/parse`,
    body: { serverURL: 'http://127.0.0.1:9/parse', appId: 'a', masterKey: 'k' },
  },
  {
    method: 'POST',
    route: '/apps/:appId/history/:className/:objectId/revert',
    path: `${A}/history/Thing/ID/revert`,
    body: { version: 'v1' },
  },
  {
    method: 'POST',
    route: '/apps/:appId/history/:className/:objectId/restore',
    path: `${A}/history/Thing/ID/restore`,
    body: {},
  },
  // The API console and evaluate let read-only users through the guard for reads; writes stay refused.
  {
    method: 'POST',
    route: '/apps/:appId/api-console',
    path: `${A}/api-console`,
    body: { method: 'POST', path: '/classes/Thing', body: { n: 1 }, as: { kind: 'master' } },
  },
  {
    method: 'POST',
    route: '/apps/:appId/security/evaluate',
    path: `${A}/security/evaluate`,
    body: { viewpoint: { kind: 'anonymous' }, method: 'POST', path: '/classes/Thing', body: { n: 2 } },
  },
];

/** POST routes that only ask a question (they change nothing whatever the body): open to read-only users. */
const QUESTIONS = [
  'POST /apps/:appId/security/explain',
  'POST /apps/:appId/security/impact',
  'POST /apps/:appId/api-console/curl',
];

/** The non-GET routes registerApiRoutes registers, read from the Express router. */
function registeredWriteRoutes(): string[] {
  const router = express.Router();
  registerApiRoutes(router, { apps: {} as never, audit: {} as never, filters: {} as never });
  const out: string[] = [];
  for (const layer of (router as unknown as { stack: any[] }).stack) {
    if (!layer.route) continue;
    for (const m of Object.keys(layer.route.methods)) {
      const route = `${m.toUpperCase()} ${layer.route.path}`;
      if (m !== 'get' && m !== 'head' && !QUESTIONS.includes(route)) out.push(route);
    }
  }
  return out.sort();
}

let t: StartedBff;
let viewer: BffFetch;
let admin: BffFetch;
const ids: Record<string, string> = {};

const realPath = (p: string) =>
  p
    .replace('/ID', `/${ids.row}`)
    .replace('/ROLE', `/${ids.role}`)
    .replace('/U', `/${ids.user}`)
    .replace('/S', `/${ids.session}`);

beforeAll(async () => {
  t = await startBff();
  admin = await t.login('admin');
  viewer = await t.login('viewer');
  // Real targets, so that a write that slipped through would have an effect.
  expect(
    (await admin.post(`${A}/schemas`, { className: 'Thing', fields: { n: { type: 'Number' } } })).status,
  ).toBe(201);
  ids.row = (await admin.post(`${A}/classes/Thing`, { n: 1 })).json.objectId;
  ids.role = (await admin.post(`${A}/roles`, { name: 'Existing' })).json.objectId;
  ids.user = (await admin.post(`${A}/users`, { username: 'target', password: 'pw' })).json.objectId;
  const login = await t.service.request('POST', '/login', { body: { username: 'target', password: 'pw' } });
  ids.session = (await admin.get(`${A}/sessions?user=${ids.user}`)).json.results[0].objectId;
  expect(login.status).toBe(200);
});
afterAll(async () => {
  await t?.close();
});

describe('read-only console users', () => {
  it('the table lists every write route registerApiRoutes registers', () => {
    const listed = WRITE_ROUTES.map((r) => `${r.method} ${r.route}`).sort();
    expect(listed).toEqual(registeredWriteRoutes());
  });

  for (const r of WRITE_ROUTES) {
    it(`${r.method} ${r.route} → 403`, async () => {
      const before = t.bff.ctx.audit.list({ limit: 1000 }).length;
      const res = await viewer(realPath(r.path), { method: r.method, body: r.body });
      expect(res.status).toBe(403);
      expect(res.json.code).toBe(119);
      expect(typeof res.json.error).toBe('string');
      expect(t.bff.ctx.audit.list({ limit: 1000 }).length).toBe(before);
    });
  }

  it('nothing changed', async () => {
    expect((await admin.get(`${A}/classes/Thing/${ids.row}`)).json.n).toBe(1);
    expect((await admin.get(`${A}/classes/Thing/count`)).json.count).toBe(1);
    expect((await admin.get(`${A}/schemas/Thing`)).json.fields.f).toBeUndefined();
    expect((await admin.get(`${A}/users/${ids.user}`)).status).toBe(200);
    expect((await admin.get(`${A}/sessions/?user=${ids.user}`)).json.results).toHaveLength(1);
    expect((await admin.get(`${A}/config`)).json.params).toEqual({});
  });

  it('read-only users can still read', async () => {
    for (const p of [
      '/bff/apps',
      `${A}/schemas`,
      `${A}/schemas/Thing`,
      `${A}/classes/Thing`,
      `${A}/classes/Thing/count`,
      `${A}/classes/Thing/${ids.row}`,
      `${A}/roles`,
      `${A}/roles/${ids.role}`,
      `${A}/users`,
      `${A}/users/${ids.user}`,
      `${A}/sessions`,
      `${A}/config`,
      '/bff/audit',
    ]) {
      const res = await viewer.get(p);
      expect(res.status, p).toBe(200);
    }
  });

  it('the routes refuse writes by themselves too (without the foundation guard)', async () => {
    const user: ConsoleUser = { username: 'viewer', role: 'read-only' };
    const app = express();
    app.use((req, _res, next) => {
      (req as typeof req & { consoleUser: ConsoleUser }).consoleUser = user;
      next();
    });
    const router = express.Router();
    registerApiRoutes(router, t.bff.ctx);
    app.use('/bff', router);
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    try {
      const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
      for (const r of WRITE_ROUTES) {
        const res = await fetch(`${base}${realPath(r.path)}`, {
          method: r.method,
          headers: { 'Content-Type': 'application/json' },
          body: r.body === undefined ? undefined : JSON.stringify(r.body),
        });
        expect(res.status, `${r.method} ${r.route}`).toBe(403);
        expect(((await res.json()) as { code: number }).code).toBe(119);
      }
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it('no key in any response', () => {
    expect(findLeaks(t.responses, t.secrets)).toEqual([]);
  });
});
