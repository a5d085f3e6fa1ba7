import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createService, type Service } from '../src/index.ts';
import { createLogger } from '../src/kernel/log.ts';
import { credentialHeaders, KEYS, type TestResponse } from './helpers/keys.ts';
import { type Receiver, startReceiver } from './helpers/receiver.ts';

/** Scenario tests of the /hooks routes and of webhook calls, against a real HTTPS receiver. */

interface Running {
  service: Service;
  request(
    method: string,
    p: string,
    options?: { body?: unknown; query?: Record<string, string>; sessionToken?: string },
  ): Promise<TestResponse>;
}

/** The service on a data dir the test keeps (a restart sees the same store); master key unless a session. */
async function serve(
  dataDir: string,
  overrides: Record<string, unknown>,
  extra: Parameters<typeof createService>[1] = {},
): Promise<Running> {
  const service = await createService(
    { ...KEYS, dataDir, port: 0, host: '127.0.0.1', logLevel: 'error', rateLimit: [], ...overrides },
    extra,
  );
  const { url } = await service.listen(0, '127.0.0.1');
  return {
    service,
    async request(method, p, { body, query, sessionToken } = {}) {
      const headers: Record<string, string> = sessionToken
        ? { ...credentialHeaders('rest'), 'X-Backend-Session-Token': sessionToken }
        : credentialHeaders('master');
      if (body !== undefined) headers['Content-Type'] = 'application/json';
      const res = await fetch(`${url}${p}${query ? `?${new URLSearchParams(query)}` : ''}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, headers: res.headers, text, json: text ? JSON.parse(text) : undefined };
    },
  };
}

/** A cloud module whose afterSave of `Both` takes its time and leaves its trace in a shared list. */
const MODULE = `
export default function register(cloud) {
  cloud.afterSave('Both', async (req) => {
    globalThis.__hookOrder.push('cloud:start ' + req.object.objectId);
    await new Promise((resolve) => setTimeout(resolve, 300));
    globalThis.__hookOrder.push('cloud:end ' + req.object.objectId);
  });
}
`;
const order: string[] = [];
(globalThis as { __hookOrder?: string[] }).__hookOrder = order;

let receiver: Receiver;
let dataDir: string;
let options: Record<string, unknown>;
let t: Running;
let ada: { objectId: string; sessionToken: string };

const expectError = (res: TestResponse, status: number, code: number, error: string) => {
  expect(res.status, res.text).toBe(status);
  expect(res.json).toEqual({ code, error });
};

beforeAll(async () => {
  receiver = await startReceiver({ https: true });
  dataDir = mkdtempSync(path.join(tmpdir(), 'bds-hook-scenarios-'));
  const module = path.join(dataDir, 'cloud.mjs');
  writeFileSync(module, MODULE);
  options = {
    cloud: module,
    webhookKey: 'scenario-key',
    hooks: { trustedCA: receiver.cert, timeoutMs: 3000, retries: 1, retryBackoffMs: 10 },
  };
  t = await serve(dataDir, options);
  ada = (await t.request('POST', '/users', { body: { username: 'ada', password: 'pw' } })).json;
  for (const className of ['Doc', 'Both', 'Kept']) {
    await t.request('POST', `/schemas/${className}`, { body: { className } });
  }
});
afterAll(async () => {
  await t?.service.close();
  await receiver?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('/hooks/triggers: list, get, change the URL, remove (PUT Delete and DELETE), twice', () => {
  it('GET /hooks/triggers lists them; GET /hooks/triggers/<C>/<trigger> answers one, or 143', async () => {
    const a = await t.request('POST', '/hooks/triggers', {
      body: { className: 'Doc', triggerName: 'beforeSave', url: `${receiver.url}/doc/before` },
    });
    expect(a.status).toBe(201);
    expect(a.json).toEqual({
      className: 'Doc',
      triggerName: 'beforeSave',
      url: `${receiver.url}/doc/before`,
    });
    await t.request('POST', '/hooks/triggers', {
      body: { className: 'Doc', triggerName: 'afterSave', url: `${receiver.url}/doc/after` },
    });
    const list = await t.request('GET', '/hooks/triggers');
    expect(list.status).toBe(200);
    expect(list.json).toEqual({
      results: [
        { className: 'Doc', triggerName: 'beforeSave', url: `${receiver.url}/doc/before` },
        { className: 'Doc', triggerName: 'afterSave', url: `${receiver.url}/doc/after` },
      ],
    });
    const one = await t.request('GET', '/hooks/triggers/Doc/afterSave');
    expect(one.status).toBe(200);
    expect(one.json).toEqual({
      className: 'Doc',
      triggerName: 'afterSave',
      url: `${receiver.url}/doc/after`,
    });
    expectError(
      await t.request('GET', '/hooks/triggers/Doc/beforeDelete'),
      400,
      143,
      'No beforeDelete hook for class Doc.',
    );
  });

  it('registering the same trigger twice is 143', async () => {
    expectError(
      await t.request('POST', '/hooks/triggers', {
        body: { className: 'Doc', triggerName: 'beforeSave', url: `${receiver.url}/elsewhere` },
      }),
      400,
      143,
      'Class Doc already has a hook for beforeSave.',
    );
  });

  it('PUT {url} changes the receiver: the next call goes to the new URL', async () => {
    const changed = await t.request('PUT', '/hooks/triggers/Doc/beforeSave', {
      body: { url: `${receiver.url}/doc/before2` },
    });
    expect(changed.status).toBe(200);
    expect(changed.json).toEqual({
      className: 'Doc',
      triggerName: 'beforeSave',
      url: `${receiver.url}/doc/before2`,
    });
    receiver.on('/doc/before2', (call) => ({ json: { success: { ...call.body.object, via: 'before2' } } }));
    const saved = await t.request('POST', '/classes/Doc', { body: { n: 1 } });
    expect(saved.status).toBe(201);
    expect((await t.request('GET', `/classes/Doc/${saved.json.objectId}`)).json.via).toBe('before2');
    expect(receiver.calls.filter((c) => c.path === '/doc/before')).toEqual([]);
    expectError(
      await t.request('PUT', '/hooks/triggers/Doc/beforeSave', { body: { url: 'http://127.0.0.1:9/x' } }),
      400,
      143,
      'url must use https (plain http needs the option hooks.allowInsecureUrls).',
    );
  });

  it('PUT {"__op":"Delete"} and DELETE remove one (then 143); the hook is no longer called', async () => {
    const put = await t.request('PUT', '/hooks/triggers/Doc/beforeSave', { body: { __op: 'Delete' } });
    expect(put.status).toBe(200);
    expect(put.json).toEqual({});
    const del = await t.request('DELETE', '/hooks/triggers/Doc/afterSave');
    expect(del.status).toBe(200);
    expect(del.json).toEqual({});
    expectError(
      await t.request('DELETE', '/hooks/triggers/Doc/afterSave'),
      400,
      143,
      'No afterSave hook for class Doc.',
    );
    expectError(
      await t.request('PUT', '/hooks/triggers/Doc/beforeSave', { body: { __op: 'Delete' } }),
      400,
      143,
      'No beforeSave hook for class Doc.',
    );
    expect((await t.request('GET', '/hooks/triggers')).json).toEqual({ results: [] });
    const before = receiver.calls.length;
    expect((await t.request('POST', '/classes/Doc', { body: { n: 2 } })).status).toBe(201);
    await t.service.cloud.triggers.idle();
    expect(receiver.calls.length).toBe(before);
  });
});

describe('delete webhooks', () => {
  it('beforeDelete and afterDelete are called with the documented body; a beforeDelete {error} keeps the row (142)', async () => {
    for (const triggerName of ['beforeDelete', 'afterDelete']) {
      await t.request('POST', '/hooks/triggers', {
        body: { className: 'Kept', triggerName, url: `${receiver.url}/kept/${triggerName}` },
      });
    }
    const row = await t.request('POST', '/classes/Kept', {
      sessionToken: ada.sessionToken,
      body: { title: 'gone soon' },
    });
    expect(row.status).toBe(201);
    const id = row.json.objectId;
    receiver.on('/kept/beforeDelete', (_call, nth) =>
      nth === 1 ? { json: { error: 'keep it' } } : { json: { success: {} } },
    );
    expectError(
      await t.request('DELETE', `/classes/Kept/${id}`, { sessionToken: ada.sessionToken }),
      400,
      142,
      'keep it',
    );
    expect((await t.request('GET', `/classes/Kept/${id}`)).status).toBe(200);
    const gone = await t.request('DELETE', `/classes/Kept/${id}`, { sessionToken: ada.sessionToken });
    expect(gone.status).toBe(200);
    await t.service.cloud.triggers.idle();
    expect((await t.request('GET', `/classes/Kept/${id}`)).status).toBe(404);

    const calls = receiver.calls.filter((c) => c.path.startsWith('/kept/'));
    expect(calls.map((c) => c.path)).toEqual([
      '/kept/beforeDelete',
      '/kept/beforeDelete',
      '/kept/afterDelete',
    ]);
    for (const call of calls) expect(call.headers['x-backend-webhook-key']).toBe('scenario-key');
    const object = {
      className: 'Kept',
      objectId: id,
      title: 'gone soon',
      createdAt: row.json.createdAt,
      updatedAt: row.json.createdAt,
    };
    const before = calls[1]!.body;
    expect(Object.keys(before).sort()).toEqual([
      'context',
      'master',
      'object',
      'original',
      'triggerName',
      'user',
    ]);
    expect(before).toMatchObject({
      triggerName: 'beforeDelete',
      object,
      original: object,
      master: false,
      user: { objectId: ada.objectId, username: 'ada' },
      context: {},
    });
    const after = calls[2]!.body;
    expect(Object.keys(after).sort()).toEqual(['context', 'master', 'object', 'triggerName', 'user']);
    expect(after).toMatchObject({
      triggerName: 'afterDelete',
      object,
      master: false,
      user: { objectId: ada.objectId, username: 'ada' },
      context: {},
    });
  });
});

describe('afterSave with an in-process trigger and a webhook', () => {
  it('both run, the in-process trigger first (the webhook waits for it to finish)', async () => {
    await t.request('POST', '/hooks/triggers', {
      body: { className: 'Both', triggerName: 'afterSave', url: `${receiver.url}/both` },
    });
    receiver.on('/both', (call) => {
      order.push(`webhook ${call.body.object.objectId}`);
      return { json: { success: true } };
    });
    const saved = await t.request('POST', '/classes/Both', { body: { n: 1 } });
    expect(saved.status).toBe(201);
    await t.service.cloud.triggers.idle();
    const id = saved.json.objectId;
    expect(order).toEqual([`cloud:start ${id}`, `cloud:end ${id}`, `webhook ${id}`]);
  });
});

describe('function webhooks that fail in transit', () => {
  it('an unreachable receiver is 141 with a clean text, no stack', async () => {
    const gone = await startReceiver({ https: true });
    await gone.close();
    await t.request('POST', '/hooks/functions', {
      body: { functionName: 'nowhere', url: `${gone.url}/fn?token=s3cret` },
    });
    const res = await t.request('POST', '/functions/nowhere', { body: {} });
    expectError(res, 400, 141, `The webhook ${gone.url}/fn is unreachable (ECONNREFUSED).`);
    expect(res.text).not.toContain('s3cret');
  });

  it('a receiver answering HTTP 500 is 141 with a clean text; its body (a stack) is not passed on', async () => {
    await t.request('POST', '/hooks/functions', {
      body: { functionName: 'broken', url: `${receiver.url}/fn/500` },
    });
    receiver.on('/fn/500', () => ({
      status: 500,
      raw: 'TypeError: x is undefined\n    at handler (/srv/receiver.js:12:3)',
    }));
    const res = await t.request('POST', '/functions/broken', { body: {} });
    expectError(res, 400, 141, `The webhook ${receiver.url}/fn/500 answered HTTP 500.`);
    expect(res.text).not.toContain('at handler');
  });

  it('the delivery log refuses a limit that is not a whole number from 1 to 1000 (102); limit=1 gives one', async () => {
    for (const limit of ['0', '1001', 'abc', '2.5', '-1']) {
      expectError(
        await t.request('GET', '/hooks/deliveries', { query: { limit } }),
        400,
        102,
        'limit must be a whole number from 1 to 1000.',
      );
    }
    const one = await t.request('GET', '/hooks/deliveries', { query: { limit: '1', kind: 'function' } });
    expect(one.status).toBe(200);
    expect(one.json.results).toHaveLength(1);
    expect(one.json.results[0]).toMatchObject({
      kind: 'function',
      functionName: 'broken',
      status: 'failed',
      httpStatus: 500,
      attempt: 1,
      error: `The webhook ${receiver.url}/fn/500 answered HTTP 500.`,
    });
  });
});

describe('across a restart', () => {
  it('hooks registered before a restart on the same data dir are listed and called after it', async () => {
    await t.request('POST', '/hooks/functions', {
      body: { functionName: 'durable', url: `${receiver.url}/durable` },
    });
    const functions = (await t.request('GET', '/hooks/functions')).json;
    const triggers = (await t.request('GET', '/hooks/triggers')).json;
    expect(triggers.results.length).toBeGreaterThan(0);
    await t.service.close();
    t = await serve(dataDir, options);
    expect((await t.request('GET', '/hooks/functions')).json).toEqual(functions);
    expect((await t.request('GET', '/hooks/triggers')).json).toEqual(triggers);
    receiver.on('/durable', () => ({ json: { success: 'still here' } }));
    expect((await t.request('POST', '/functions/durable', { body: {} })).json).toEqual({
      result: 'still here',
    });
  });
});

describe('a small service: the delivery log bound and the start warning', () => {
  it('keeps the last hooks.deliveryLogSize attempts (the oldest go first); warns at start about plain http', async () => {
    const lines: string[] = [];
    const log = createLogger('warn', { write: (line: string) => lines.push(line) });
    const dir = mkdtempSync(path.join(tmpdir(), 'bds-hook-small-'));
    const plain = await startReceiver();
    const small = await serve(dir, { hooks: { allowInsecureUrls: true, deliveryLogSize: 3 } }, { log });
    try {
      const warnings = lines.map((l) => JSON.parse(l)).filter((l) => l.level === 40);
      expect(warnings.map((w) => w.msg)).toContain(
        'hooks.allowInsecureUrls is on: webhooks may use plain http (for tests and local development only)',
      );
      await small.request('POST', '/hooks/functions', {
        body: { functionName: 'count', url: `${plain.url}/count` },
      });
      plain.on('/count', (call) => ({ json: { success: call.body.params.n } }));
      for (let n = 1; n <= 5; n++) {
        expect((await small.request('POST', '/functions/count', { body: { n } })).json).toEqual({
          result: n,
        });
      }
      const kept = (await small.request('GET', '/hooks/deliveries')).json.results;
      expect(kept.map((d: { id: number }) => d.id)).toEqual([5, 4, 3]);
      expect(kept.every((d: { status: string }) => d.status === 'succeeded')).toBe(true);
    } finally {
      await small.service.close();
      await plain.close();
      rmSync(dir, { recursive: true, force: true });
    }
    // Without the option, no such warning.
    const quiet: string[] = [];
    const dir2 = mkdtempSync(path.join(tmpdir(), 'bds-hook-quiet-'));
    const strict = await serve(
      dir2,
      {},
      { log: createLogger('warn', { write: (line: string) => quiet.push(line) }) },
    );
    await strict.service.close();
    rmSync(dir2, { recursive: true, force: true });
    expect(quiet.join('')).not.toContain('allowInsecureUrls');
  });
});
