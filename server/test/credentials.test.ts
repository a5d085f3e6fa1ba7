import { expect } from 'vitest';
import { KEYS } from './helpers/keys.ts';
import { runScenarios, type Scenario, type ScenarioContext } from './helpers/scenarios.ts';

/** docs/protocol.md#credentials: keys, X-Parse- aliases, the "POST with _method" form, master-only surfaces. */

const UNAUTHORIZED = { code: 119, error: 'unauthorized' };
const MASTER_REQUIRED = { code: 119, error: 'unauthorized: master key is required' };
const TEXT = { 'Content-Type': 'text/plain' };
/** Body credentials of the `_method` form, as the Parse JS SDK sends them. */
const JS_BODY = { _ApplicationId: KEYS.appId, _JavaScriptKey: KEYS.javascriptKey, _ClientVersion: 'js8.6.2' };
const parse = (k: string) => ({
  'X-Parse-Application-Id': KEYS.appId,
  ...(k === 'rest' ? { 'X-Parse-REST-API-Key': KEYS.restAPIKey } : {}),
  ...(k === 'js' ? { 'X-Parse-Javascript-Key': KEYS.javascriptKey } : {}),
  ...(k === 'master' ? { 'X-Parse-Master-Key': KEYS.masterKey } : {}),
});

async function seed(ctx: ScenarioContext) {
  for (const [name, n] of [
    ['t1', 1],
    ['t2', 2],
    ['t3', 3],
    ['tPut', 10],
    ['tDel', 20],
  ] as const) {
    const res = await ctx.t.request('POST', '/classes/Thing', { as: 'master', body: { n } });
    expect(res.status, res.text).toBe(201);
    ctx.vars[name] = res.json.objectId;
  }
}

const scenarios: Scenario[] = [
  // --- application id and keys ---
  {
    name: 'a missing application id',
    method: 'GET',
    path: '/classes/Thing',
    as: 'none',
    status: 403,
    expect: UNAUTHORIZED,
  },
  {
    name: 'a missing application id with a right REST key',
    method: 'GET',
    path: '/classes/Thing',
    as: 'none',
    headers: { 'X-Backend-REST-API-Key': KEYS.restAPIKey },
    status: 403,
    expect: UNAUTHORIZED,
  },
  {
    name: 'an unknown application id',
    method: 'GET',
    path: '/classes/Thing',
    as: 'none',
    headers: { 'X-Backend-Application-Id': 'other-app', 'X-Backend-REST-API-Key': KEYS.restAPIKey },
    status: 403,
    expect: UNAUTHORIZED,
  },
  {
    name: 'an unknown application id with the right master key',
    method: 'GET',
    path: '/schemas',
    as: 'none',
    headers: { 'X-Backend-Application-Id': 'other-app', 'X-Backend-Master-Key': KEYS.masterKey },
    status: 403,
    expect: UNAUTHORIZED,
  },
  {
    name: 'a wrong REST API key',
    method: 'GET',
    path: '/classes/Thing',
    as: 'app',
    headers: { 'X-Backend-REST-API-Key': 'wrong-rest-key' },
    status: 403,
    expect: UNAUTHORIZED,
  },
  {
    name: 'a wrong JavaScript key',
    method: 'GET',
    path: '/classes/Thing',
    as: 'app',
    headers: { 'X-Backend-JavaScript-Key': 'wrong-js-key' },
    status: 403,
    expect: UNAUTHORIZED,
  },
  {
    name: 'a wrong master key',
    method: 'GET',
    path: '/classes/Thing',
    as: 'app',
    headers: { 'X-Backend-Master-Key': 'wrong-master-key-000' },
    status: 403,
    expect: UNAUTHORIZED,
  },
  {
    name: 'a wrong master key next to a right REST key',
    method: 'GET',
    path: '/classes/Thing',
    as: 'rest',
    headers: { 'X-Backend-Master-Key': 'wrong-master-key-000' },
    status: 403,
    expect: UNAUTHORIZED,
  },
  {
    name: 'no client key while keys are configured',
    method: 'GET',
    path: '/classes/Thing',
    as: 'app',
    status: 403,
    expect: UNAUTHORIZED,
  },
  {
    name: 'no client key on a write',
    method: 'POST',
    path: '/classes/Thing',
    as: 'app',
    body: { n: 500 },
    status: 403,
    expect: UNAUTHORIZED,
    after: async (ctx) => {
      const count = await ctx.t.request('GET', '/classes/Thing', {
        as: 'master',
        query: { where: { n: 500 }, count: 1 },
      });
      expect(count.json.count).toBe(0);
    },
  },
  {
    name: 'the REST API key',
    method: 'GET',
    path: '/classes/Thing',
    as: 'rest',
    query: { where: { n: 1 } },
    status: 200,
    expect: { results: [{ n: 1 }] },
    after: async (ctx, res) => {
      expect(res.json.results.map((r: { objectId: string }) => r.objectId)).toEqual([ctx.vars.t1]);
    },
  },
  {
    name: 'the JavaScript key',
    method: 'GET',
    path: '/classes/Thing/{t2}',
    as: 'js',
    status: 200,
    expect: { n: 2 },
  },
  {
    name: 'the master key',
    method: 'GET',
    path: '/schemas/Thing',
    as: 'master',
    status: 200,
    expect: { className: 'Thing' },
  },

  // --- X-Parse- aliases ---
  {
    name: 'X-Parse-Application-Id with X-Parse-REST-API-Key',
    method: 'GET',
    path: '/classes/Thing/{t1}',
    as: 'none',
    headers: parse('rest'),
    status: 200,
    expect: { n: 1 },
    after: async (ctx, res) => {
      expect(res.json.objectId).toBe(ctx.vars.t1);
    },
  },
  {
    name: 'X-Parse-Application-Id with X-Parse-Javascript-Key',
    method: 'GET',
    path: '/classes/Thing/{t1}',
    as: 'none',
    headers: parse('js'),
    status: 200,
    expect: { n: 1 },
  },
  {
    name: 'X-Parse-Master-Key opens a master-only surface',
    method: 'GET',
    path: '/schemas',
    as: 'none',
    headers: parse('master'),
    status: 200,
    after: async (_ctx, res) => {
      expect(res.json.results.map((s: { className: string }) => s.className)).toContain('Thing');
    },
  },
  {
    name: 'a wrong X-Parse-REST-API-Key is checked',
    method: 'GET',
    path: '/classes/Thing',
    as: 'none',
    headers: { 'X-Parse-Application-Id': KEYS.appId, 'X-Parse-REST-API-Key': 'wrong' },
    status: 403,
    expect: UNAUTHORIZED,
  },
  {
    name: 'a wrong X-Parse-Master-Key is checked',
    method: 'GET',
    path: '/schemas',
    as: 'none',
    headers: { 'X-Parse-Application-Id': KEYS.appId, 'X-Parse-Master-Key': 'wrong-master-key-000' },
    status: 403,
    expect: UNAUTHORIZED,
  },
  {
    name: 'an unknown X-Parse-Application-Id',
    method: 'GET',
    path: '/classes/Thing',
    as: 'none',
    headers: { 'X-Parse-Application-Id': 'other-app', 'X-Parse-REST-API-Key': KEYS.restAPIKey },
    status: 403,
    expect: UNAUTHORIZED,
  },
  {
    name: 'X-Parse-Session-Token is read (an unknown one is a 209)',
    method: 'GET',
    path: '/classes/Thing',
    as: 'none',
    headers: { ...parse('rest'), 'X-Parse-Session-Token': 'r:00000000000000000000000000000000' },
    status: 400,
    code: 209,
    expect: { code: 209, error: 'Invalid session token' },
  },
  {
    name: 'X-Parse-Installation-Id and X-Parse-Request-Id are accepted',
    method: 'PUT',
    path: '/classes/Thing/{t3}',
    as: 'none',
    headers: {
      ...parse('rest'),
      'X-Parse-Installation-Id': 'installation-0001',
      'X-Parse-Request-Id': 'request-credentials-0001',
    },
    body: { label: 'three' },
    status: 200,
    after: async (ctx) => {
      const row = await ctx.t.request('GET', `/classes/Thing/${ctx.vars.t3}`, { as: 'master' });
      expect(row.json).toMatchObject({ n: 3, label: 'three' });
    },
  },
  {
    name: 'the two prefixes mix',
    method: 'GET',
    path: '/classes/Thing/{t1}',
    as: 'none',
    headers: { 'X-Parse-Application-Id': KEYS.appId, 'X-Backend-REST-API-Key': KEYS.restAPIKey },
    status: 200,
    expect: { n: 1 },
  },

  // --- the "POST with _method" form ---
  {
    name: '_method GET with where in a text/plain body runs a find with the body credentials',
    method: 'POST',
    path: '/classes/Thing',
    as: 'none',
    headers: TEXT,
    body: { _method: 'GET', ...JS_BODY, where: { n: 2 } },
    status: 200,
    after: async (ctx, res) => {
      expect(res.json.results).toHaveLength(1);
      expect(res.json.results[0]).toMatchObject({ objectId: ctx.vars.t2, n: 2 });
    },
  },
  {
    name: '_method GET takes order, limit and count from the body',
    method: 'POST',
    path: '/classes/Thing',
    as: 'none',
    headers: TEXT,
    body: { _method: 'GET', ...JS_BODY, where: { n: { $lte: 3 } }, order: '-n', limit: 2, count: 1 },
    status: 200,
    expect: { results: [{ n: 3 }, { n: 2 }], count: 3 },
    after: async (_ctx, res) => {
      expect(res.json.results).toHaveLength(2);
    },
  },
  {
    name: '_method GET on one object',
    method: 'POST',
    path: '/classes/Thing/{t1}',
    as: 'none',
    headers: TEXT,
    body: { _method: 'GET', ...JS_BODY },
    status: 200,
    expect: { n: 1 },
    after: async (ctx, res) => {
      expect(res.json.objectId).toBe(ctx.vars.t1);
    },
  },
  {
    name: '_method PUT updates with the body credentials; credential fields are not stored',
    method: 'POST',
    path: '/classes/Thing/{tPut}',
    as: 'none',
    headers: TEXT,
    body: { _method: 'PUT', ...JS_BODY, _InstallationId: 'installation-0002', n: 11 },
    status: 200,
    after: async (ctx, res) => {
      expect(res.json.updatedAt).toEqual(expect.any(String));
      const row = await ctx.t.request('GET', `/classes/Thing/${ctx.vars.tPut}`, { as: 'master' });
      expect(row.json.n).toBe(11);
      for (const key of Object.keys(row.json)) expect(key.startsWith('_'), key).toBe(false);
      const schema = await ctx.t.request('GET', '/schemas/Thing', { as: 'master' });
      for (const key of Object.keys(schema.json.fields)) expect(key.startsWith('_'), key).toBe(false);
    },
  },
  {
    name: '_method DELETE deletes',
    method: 'POST',
    path: '/classes/Thing/{tDel}',
    as: 'none',
    headers: TEXT,
    body: { _method: 'DELETE', ...JS_BODY },
    status: 200,
    expect: {},
    after: async (ctx) => {
      const row = await ctx.t.request('GET', `/classes/Thing/${ctx.vars.tDel}`, { as: 'master' });
      expect(row.status).toBe(404);
    },
  },
  {
    name: '_method with an application/json body works the same',
    method: 'POST',
    path: '/classes/Thing',
    as: 'none',
    body: { _method: 'GET', ...JS_BODY, where: { n: 1 } },
    status: 200,
    after: async (ctx, res) => {
      expect(res.json.results.map((r: { objectId: string }) => r.objectId)).toEqual([ctx.vars.t1]);
    },
  },
  {
    name: '_MasterKey in the body opens a master-only surface',
    method: 'POST',
    path: '/schemas',
    as: 'none',
    headers: TEXT,
    body: { _method: 'GET', _ApplicationId: KEYS.appId, _MasterKey: KEYS.masterKey },
    status: 200,
    after: async (_ctx, res) => {
      expect(Array.isArray(res.json.results)).toBe(true);
    },
  },
  {
    name: 'a wrong _MasterKey',
    method: 'POST',
    path: '/schemas',
    as: 'none',
    headers: TEXT,
    body: { _method: 'GET', _ApplicationId: KEYS.appId, _MasterKey: 'wrong-master-key-000' },
    status: 403,
    expect: UNAUTHORIZED,
  },
  {
    name: 'a wrong _JavaScriptKey',
    method: 'POST',
    path: '/classes/Thing',
    as: 'none',
    headers: TEXT,
    body: { _method: 'GET', _ApplicationId: KEYS.appId, _JavaScriptKey: 'wrong-js-key' },
    status: 403,
    expect: UNAUTHORIZED,
  },
  {
    name: 'an unknown _ApplicationId',
    method: 'POST',
    path: '/classes/Thing',
    as: 'none',
    headers: TEXT,
    body: { _method: 'GET', _ApplicationId: 'other-app', _JavaScriptKey: KEYS.javascriptKey },
    status: 403,
    expect: UNAUTHORIZED,
  },
  {
    name: '_method without an _ApplicationId',
    method: 'POST',
    path: '/classes/Thing',
    as: 'none',
    headers: TEXT,
    body: { _method: 'GET', _JavaScriptKey: KEYS.javascriptKey },
    status: 403,
    expect: UNAUTHORIZED,
  },
  {
    name: '_SessionToken is read (an unknown one is a 209)',
    method: 'POST',
    path: '/classes/Thing',
    as: 'none',
    headers: TEXT,
    body: { _method: 'GET', ...JS_BODY, _SessionToken: 'r:00000000000000000000000000000000' },
    status: 400,
    expect: { code: 209, error: 'Invalid session token' },
  },
  {
    name: 'a plain POST with body credentials creates, without storing them',
    method: 'POST',
    path: '/classes/Thing',
    as: 'none',
    headers: TEXT,
    body: { ...JS_BODY, _InstallationId: 'installation-0003', n: 30 },
    status: 201,
    after: async (ctx, res) => {
      const row = await ctx.t.request('GET', `/classes/Thing/${res.json.objectId}`, { as: 'master' });
      expect(row.json.n).toBe(30);
      for (const key of Object.keys(row.json)) expect(key.startsWith('_'), key).toBe(false);
    },
  },
  {
    name: 'an unsupported _method',
    method: 'POST',
    path: '/classes/Thing',
    as: 'none',
    headers: TEXT,
    body: { _method: 'PATCH', ...JS_BODY },
    status: 400,
    code: 107,
  },

  // --- master-only surfaces ---
  {
    name: 'GET /schemas with the REST key',
    method: 'GET',
    path: '/schemas',
    as: 'rest',
    status: 403,
    expect: MASTER_REQUIRED,
  },
  {
    name: 'GET /schemas with the JavaScript key',
    method: 'GET',
    path: '/schemas',
    as: 'js',
    status: 403,
    expect: MASTER_REQUIRED,
  },
  {
    name: 'PUT /config with the REST key',
    method: 'PUT',
    path: '/config',
    as: 'rest',
    body: { params: { planted: 1 } },
    status: 403,
    expect: MASTER_REQUIRED,
    after: async (ctx) => {
      const config = await ctx.t.request('GET', '/config', { as: 'master' });
      expect(config.status).toBe(200);
      expect(config.json.params?.planted).toBeUndefined();
    },
  },
  {
    name: 'DELETE /purge/Thing with the REST key',
    method: 'DELETE',
    path: '/purge/Thing',
    as: 'rest',
    status: 403,
    expect: MASTER_REQUIRED,
    after: async (ctx) => {
      const count = await ctx.t.request('GET', '/classes/Thing', {
        as: 'master',
        query: { count: 1, limit: 0 },
      });
      expect(count.json.count).toBeGreaterThanOrEqual(4);
    },
  },
  {
    name: 'DELETE /purge/Thing through _method with the JavaScript key',
    method: 'POST',
    path: '/purge/Thing',
    as: 'none',
    headers: TEXT,
    body: { _method: 'DELETE', ...JS_BODY },
    status: 403,
    expect: MASTER_REQUIRED,
    after: async (ctx) => {
      const count = await ctx.t.request('GET', '/classes/Thing', {
        as: 'master',
        query: { count: 1, limit: 0 },
      });
      expect(count.json.count).toBeGreaterThanOrEqual(4);
    },
  },

  // --- sessions ---
  {
    name: 'an unknown session token',
    method: 'GET',
    path: '/classes/Thing',
    as: 'rest',
    sessionToken: 'r:ffffffffffffffffffffffffffffffff',
    status: 400,
    expect: { code: 209, error: 'Invalid session token' },
  },
  {
    name: 'an unknown session token on a write changes nothing',
    method: 'PUT',
    path: '/classes/Thing/{t1}',
    as: 'rest',
    sessionToken: 'r:ffffffffffffffffffffffffffffffff',
    body: { n: 1000 },
    status: 400,
    code: 209,
    after: async (ctx) => {
      const row = await ctx.t.request('GET', `/classes/Thing/${ctx.vars.t1}`, { as: 'master' });
      expect(row.json.n).toBe(1);
    },
  },

  // --- health, serverInfo, CORS ---
  {
    name: 'GET /health needs no keys',
    method: 'GET',
    path: '/health',
    as: 'none',
    status: 200,
    after: async (ctx, res) => {
      expect(res.json).toEqual({ status: 'ok' });
      const root = await fetch(`http://127.0.0.1:${ctx.t.port}/health`);
      expect(root.status).toBe(200);
      expect(await root.json()).toEqual({ status: 'ok' });
    },
  },
  {
    name: 'GET /health ignores wrong keys',
    method: 'GET',
    path: '/health',
    as: 'none',
    headers: { 'X-Backend-Application-Id': 'other-app', 'X-Backend-Master-Key': 'wrong-master-key-000' },
    status: 200,
    expect: { status: 'ok' },
  },
  {
    name: 'GET /serverInfo with app keys',
    method: 'GET',
    path: '/serverInfo',
    as: 'rest',
    status: 200,
    after: async (_ctx, res) => {
      expect(res.json.serverVersion).toEqual(expect.any(String));
      expect(res.json.features).toEqual(expect.any(Object));
      expect(res.json.features.schemas).toEqual(expect.any(Object));
    },
  },
  {
    name: 'GET /serverInfo with the X-Parse- JavaScript key',
    method: 'GET',
    path: '/serverInfo',
    as: 'none',
    headers: parse('js'),
    status: 200,
    expect: { serverVersion: expect.any(String) },
  },
  {
    name: 'GET /serverInfo without keys',
    method: 'GET',
    path: '/serverInfo',
    as: 'none',
    status: 403,
    expect: UNAUTHORIZED,
  },
  {
    name: 'OPTIONS preflight answers CORS headers without keys',
    method: 'OPTIONS',
    path: '/classes/Thing/{t1}',
    as: 'none',
    headers: {
      Origin: 'http://example.test',
      'Access-Control-Request-Method': 'PUT',
      'Access-Control-Request-Headers': 'x-parse-application-id, x-parse-session-token, content-type',
    },
    status: 204,
    after: async (_ctx, res) => {
      expect(res.headers.get('access-control-allow-origin')).toBe('*');
      const methods = res.headers.get('access-control-allow-methods') ?? '';
      for (const m of ['GET', 'POST', 'PUT', 'DELETE']) expect(methods).toContain(m);
      const allowed = (res.headers.get('access-control-allow-headers') ?? '').toLowerCase();
      for (const h of [
        'content-type',
        'x-backend-application-id',
        'x-backend-rest-api-key',
        'x-backend-javascript-key',
        'x-backend-master-key',
        'x-backend-session-token',
        'x-parse-application-id',
        'x-parse-rest-api-key',
        'x-parse-javascript-key',
        'x-parse-master-key',
        'x-parse-session-token',
        'x-parse-installation-id',
      ]) {
        expect(allowed).toContain(h);
      }
    },
  },
  {
    name: 'answers carry Access-Control-Allow-Origin',
    method: 'GET',
    path: '/classes/Thing/{t1}',
    as: 'rest',
    status: 200,
    after: async (_ctx, res) => {
      expect(res.headers.get('access-control-allow-origin')).toBe('*');
    },
  },
];

runScenarios('credentials', scenarios, { setup: seed });

runScenarios(
  'credentials with a client key configured',
  [
    {
      name: 'X-Backend-Client-Key',
      method: 'GET',
      path: '/classes/Thing',
      as: 'app',
      headers: { 'X-Backend-Client-Key': 'test-client-key' },
      status: 200,
    },
    {
      name: 'X-Parse-Client-Key',
      method: 'GET',
      path: '/classes/Thing',
      as: 'none',
      headers: { 'X-Parse-Application-Id': KEYS.appId, 'X-Parse-Client-Key': 'test-client-key' },
      status: 200,
    },
    {
      name: '_ClientKey in the body',
      method: 'POST',
      path: '/classes/Thing',
      as: 'none',
      headers: TEXT,
      body: { _method: 'GET', _ApplicationId: KEYS.appId, _ClientKey: 'test-client-key' },
      status: 200,
    },
    {
      name: 'a wrong client key',
      method: 'GET',
      path: '/classes/Thing',
      as: 'app',
      headers: { 'X-Backend-Client-Key': 'wrong-client-key' },
      status: 403,
      expect: UNAUTHORIZED,
    },
    {
      name: 'no client key',
      method: 'GET',
      path: '/classes/Thing',
      as: 'app',
      status: 403,
      expect: UNAUTHORIZED,
    },
  ],
  { serviceOptions: { clientKey: 'test-client-key' }, setup: seed },
);

runScenarios(
  'credentials with no client keys configured',
  [
    {
      name: 'the application id alone is enough',
      method: 'GET',
      path: '/classes/Thing',
      as: 'app',
      status: 200,
    },
    {
      name: 'master-only surfaces still need the master key',
      method: 'GET',
      path: '/schemas',
      as: 'app',
      status: 403,
      expect: MASTER_REQUIRED,
    },
    {
      name: 'an unknown application id is still refused',
      method: 'GET',
      path: '/classes/Thing',
      as: 'none',
      headers: { 'X-Backend-Application-Id': 'other-app' },
      status: 403,
      expect: UNAUTHORIZED,
    },
  ],
  { serviceOptions: { restAPIKey: undefined, javascriptKey: undefined }, setup: seed },
);
