import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runScenarios, type Scenario, type ScenarioContext } from './helpers/scenarios.ts';
import { credentialHeaders, KEYS, startService, type TestService } from './helpers/service.ts';

/** Body limits: over `maxUploadSize` is a 413 with code 116; malformed JSON is a 400 with 107; neither writes. */

const LIMIT = 1024; // maxUploadSize: '1kb'
const big = (bytes: number) => 'x'.repeat(bytes);

async function countThings(ctx: ScenarioContext): Promise<number> {
  const res = await ctx.t.request('GET', '/classes/Thing', { as: 'master', query: { count: 1, limit: 0 } });
  expect(res.status, res.text).toBe(200);
  return res.json.count;
}

/** Checks that nothing was written: the row count and the seeded row are as the setup left them. */
async function unchanged(ctx: ScenarioContext): Promise<void> {
  expect(await countThings(ctx)).toBe(Number(ctx.vars.count));
  const row = await ctx.t.request('GET', `/classes/Thing/${ctx.vars.id}`, { as: 'master' });
  expect(row.json).toMatchObject({ n: 1, label: 'seed' });
  const schema = await ctx.t.request('GET', '/schemas/Thing', { as: 'master' });
  expect(Object.keys(schema.json.fields)).not.toContain('blob');
  const health = await ctx.t.request('GET', '/health', { as: 'none' });
  expect(health.json).toEqual({ status: 'ok' });
}

const TOO_LARGE = { status: 413, code: 116, after: unchanged } as const;
const BAD_JSON = { status: 400, code: 107, after: unchanged } as const;

const scenarios: Scenario[] = [
  {
    name: 'a create over the limit',
    method: 'POST',
    path: '/classes/Thing',
    body: { blob: big(2 * LIMIT) },
    ...TOO_LARGE,
  },
  {
    name: 'a create one byte over the limit',
    method: 'POST',
    path: '/classes/Thing',
    rawBody: `{"blob":"${big(LIMIT - 10)}"}`,
    headers: { 'Content-Type': 'application/json' },
    ...TOO_LARGE,
  },
  {
    name: 'an update over the limit',
    method: 'PUT',
    path: '/classes/Thing/{id}',
    body: { n: 2, blob: big(4 * LIMIT) },
    ...TOO_LARGE,
  },
  {
    name: 'a batch over the limit',
    method: 'POST',
    path: '/batch',
    body: {
      requests: Array.from({ length: 20 }, (_, i) => ({
        method: 'POST',
        path: '/classes/Thing',
        body: { n: 100 + i, blob: big(100) },
      })),
    },
    ...TOO_LARGE,
  },
  {
    name: 'the _method form over the limit',
    method: 'POST',
    path: '/classes/Thing/{id}',
    as: 'none',
    headers: { 'Content-Type': 'text/plain' },
    body: {
      _method: 'PUT',
      _ApplicationId: KEYS.appId,
      _JavaScriptKey: KEYS.javascriptKey,
      blob: big(2 * LIMIT),
    },
    ...TOO_LARGE,
  },
  {
    name: 'the master key over the limit',
    method: 'POST',
    path: '/classes/Thing',
    as: 'master',
    body: { blob: big(2 * LIMIT) },
    ...TOO_LARGE,
  },
  {
    name: 'a body over the limit without keys is still a 413, not an error from reading it',
    method: 'POST',
    path: '/classes/Thing',
    as: 'none',
    body: { blob: big(2 * LIMIT) },
    ...TOO_LARGE,
  },
  {
    name: 'malformed JSON on a create',
    method: 'POST',
    path: '/classes/Thing',
    rawBody: '{"n": 5, "blob": ',
    headers: { 'Content-Type': 'application/json' },
    ...BAD_JSON,
  },
  {
    name: 'malformed JSON on an update',
    method: 'PUT',
    path: '/classes/Thing/{id}',
    rawBody: '{"n": 2,}',
    headers: { 'Content-Type': 'application/json' },
    ...BAD_JSON,
  },
  {
    name: 'malformed JSON in a text/plain body',
    method: 'POST',
    path: '/classes/Thing',
    rawBody: `{"_method":"PUT","_ApplicationId":"${KEYS.appId}"`,
    as: 'none',
    headers: { 'Content-Type': 'text/plain' },
    ...BAD_JSON,
  },
  {
    name: 'malformed JSON on a batch',
    method: 'POST',
    path: '/batch',
    rawBody: '{"requests": [{"method": "POST", "path": "/classes/Thing", "body": {"n": 9}}',
    headers: { 'Content-Type': 'application/json' },
    ...BAD_JSON,
  },
  {
    name: 'a body that is not JSON at all',
    method: 'POST',
    path: '/classes/Thing',
    rawBody: 'n=5&blob=abc',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    ...BAD_JSON,
  },
  {
    name: 'a body of exactly the limit is accepted',
    method: 'POST',
    path: '/classes/Thing',
    rawBody: `{"label":"${big(LIMIT - 12)}"}`,
    headers: { 'Content-Type': 'application/json' },
    status: 201,
    after: async (ctx, res) => {
      expect(await countThings(ctx)).toBe(Number(ctx.vars.count) + 1);
      const removed = await ctx.t.request('DELETE', `/classes/Thing/${res.json.objectId}`, { as: 'master' });
      expect(removed.status).toBe(200);
    },
  },
];

runScenarios('body limits (maxUploadSize 1kb)', scenarios, {
  serviceOptions: { maxUploadSize: '1kb' },
  setup: async (ctx) => {
    const created = await ctx.t.request('POST', '/classes/Thing', {
      as: 'master',
      body: { n: 1, label: 'seed' },
    });
    expect(created.status, created.text).toBe(201);
    ctx.vars.id = created.json.objectId;
    ctx.vars.count = String(await countThings(ctx));
  },
});

describe('body limits without a Content-Length', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService({ maxUploadSize: '1kb' });
    const created = await t.request('POST', '/classes/Thing', { as: 'master', body: { n: 1 } });
    expect(created.status, created.text).toBe(201);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('a chunked body over the limit is a 413 with 116 and writes nothing', async () => {
    const chunk = new TextEncoder().encode(`{"blob":"${big(3 * LIMIT)}"}`);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < chunk.length; i += 256) controller.enqueue(chunk.subarray(i, i + 256));
        controller.close();
      },
    });
    const res = await fetch(`${t.url}/classes/Thing`, {
      method: 'POST',
      headers: { ...credentialHeaders('rest'), 'Content-Type': 'application/json' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expect(res.headers.get('content-length')).not.toBeNull();
    const body = (await res.json()) as { code: number };
    expect(res.status).toBe(413);
    expect(body.code).toBe(116);
    const count = await t.request('GET', '/classes/Thing', { as: 'master', query: { count: 1, limit: 0 } });
    expect(count.json.count).toBe(1);
  });
});

describe('the default body limit', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('takes bodies well over 1kb', async () => {
    const res = await t.request('POST', '/classes/Thing', { as: 'master', body: { blob: big(256 * 1024) } });
    expect(res.status, res.text).toBe(201);
    const row = await t.request('GET', `/classes/Thing/${res.json.objectId}`, { as: 'master' });
    expect(row.json.blob).toHaveLength(256 * 1024);
  });

  it('refuses a body over 20 MB with 413 and 116', async () => {
    const res = await t.request('POST', '/classes/Thing', {
      as: 'master',
      rawBody: `{"blob":"${big(20 * 1024 * 1024 + 16)}"}`,
      headers: { 'Content-Type': 'application/json' },
    });
    expect(res.status).toBe(413);
    expect(res.json.code).toBe(116);
  });
});
