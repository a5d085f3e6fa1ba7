import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLOUD_MODULE } from './helpers/cloud.ts';
import { type Receiver, startReceiver } from './helpers/receiver.ts';
import { startService, type TestService } from './helpers/service.ts';

const WEBHOOK_KEY = 'test-webhook-key-42';
let receiver: Receiver;
let t: TestService;
let ada: { objectId: string; sessionToken: string };

async function count(className: string): Promise<number> {
  return (await t.request('GET', `/classes/${className}`, { as: 'master', query: { count: 1, limit: 0 } }))
    .json.count;
}

beforeAll(async () => {
  receiver = await startReceiver({ https: true });
  t = await startService({
    cloud: CLOUD_MODULE,
    webhookKey: WEBHOOK_KEY,
    hooks: { trustedCA: receiver.cert, timeoutMs: 2000, retries: 2, retryBackoffMs: 20 },
  });
  ada = (await t.request('POST', '/users', { body: { username: 'ada', password: 'pw' } })).json;
  for (const className of ['Hooked', 'Audited', 'Guarded']) {
    await t.request('POST', `/schemas/${className}`, { as: 'master', body: { className } });
  }
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

describe('registering hooks (/hooks, master only, 143 for every refusal)', () => {
  const fail = async (method: string, p: string, body: unknown, error: string) => {
    const res = await t.request(method, p, { as: 'master', body });
    expect(res.status, res.text).toBe(400);
    expect(res.json).toEqual({ code: 143, error });
  };

  it('function hooks: create, list, get, change the URL, delete', async () => {
    const url = `${receiver.url}/fn/a`;
    const created = await t.request('POST', '/hooks/functions', {
      as: 'master',
      body: { functionName: 'remoteA', url },
    });
    expect(created.status).toBe(201);
    expect(created.json).toEqual({ functionName: 'remoteA', url });
    await fail(
      'POST',
      '/hooks/functions',
      { functionName: 'remoteA', url },
      'A function hook named remoteA already exists.',
    );
    expect((await t.request('GET', '/hooks/functions', { as: 'master' })).json.results).toContainEqual({
      functionName: 'remoteA',
      url,
    });
    expect((await t.request('GET', '/hooks/functions/remoteA', { as: 'master' })).json).toEqual({
      functionName: 'remoteA',
      url,
    });
    const changed = await t.request('PUT', '/hooks/functions/remoteA', {
      as: 'master',
      body: { url: `${receiver.url}/fn/b` },
    });
    expect(changed.json).toEqual({ functionName: 'remoteA', url: `${receiver.url}/fn/b` });
    const removed = await t.request('PUT', '/hooks/functions/remoteA', {
      as: 'master',
      body: { __op: 'Delete' },
    });
    expect(removed.json).toEqual({});
    await fail('GET', '/hooks/functions/remoteA', undefined, 'No function hook named remoteA.');
    await fail('DELETE', '/hooks/functions/remoteA', undefined, 'No function hook named remoteA.');
    expect(
      (
        await t.request('GET', '/classes/_Hooks', {
          as: 'master',
          query: { where: { functionName: 'remoteA' } },
        })
      ).json.results,
    ).toEqual([]);
  });

  it('refuses malformed bodies, plain http, unknown classes and trigger names', async () => {
    await fail('POST', '/hooks/functions', [1], 'A function hook takes a JSON object {functionName, url}.');
    await fail(
      'POST',
      '/hooks/functions',
      { functionName: 'x', url: 'https://a.example', extra: 1 },
      'Unknown field extra: A function hook takes {functionName, url}.',
    );
    await fail(
      'POST',
      '/hooks/functions',
      { functionName: '1bad', url: 'https://a.example' },
      'functionName must be a name of letters, digits, _, - and . (starting with a letter).',
    );
    await fail(
      'POST',
      '/hooks/functions',
      { functionName: 'x', url: 'http://127.0.0.1:9/x' },
      'url must use https (plain http needs the option hooks.allowInsecureUrls).',
    );
    await fail(
      'POST',
      '/hooks/functions',
      { functionName: 'x', url: 'not a url' },
      'url is not a valid URL: "not a url".',
    );
    await fail(
      'POST',
      '/hooks/triggers',
      { className: 'Nope', triggerName: 'beforeSave', url: 'https://a.example' },
      'Class Nope does not exist.',
    );
    await fail(
      'POST',
      '/hooks/triggers',
      { className: 'Hooked', triggerName: 'beforeFly', url: 'https://a.example' },
      'Invalid trigger name "beforeFly": use beforeSave, afterSave, beforeDelete, afterDelete.',
    );
    await fail(
      'PUT',
      '/hooks/triggers/Hooked/afterDelete',
      { url: 'https://a.example' },
      'No afterDelete hook for class Hooked.',
    );
    expect(await count('_Hooks')).toBe(0);
  });

  it('is master-only', async () => {
    for (const [method, p] of [
      ['GET', '/hooks/functions'],
      ['POST', '/hooks/triggers'],
      ['GET', '/hooks/deliveries'],
      ['DELETE', '/hooks/functions/x'],
    ]) {
      const res = await t.request(method!, p!, {
        sessionToken: ada.sessionToken,
        body: method === 'POST' ? {} : undefined,
      });
      expect(res.status).toBe(403);
      expect(res.json).toEqual({ code: 119, error: 'unauthorized: master key is required' });
    }
    expect((await t.request('GET', '/classes/_Hooks', { sessionToken: ada.sessionToken })).status).toBe(403);
  });
});

describe('function webhooks', () => {
  beforeAll(async () => {
    await t.request('POST', '/hooks/functions', {
      as: 'master',
      body: { functionName: 'remote', url: `${receiver.url}/fn/remote` },
    });
  });

  it('posts the protocol body with the webhook key over HTTPS (self-signed CA trusted); success is the result', async () => {
    receiver.on('/fn/remote', (call) => ({ json: { success: { got: call.body.params } } }));
    const res = await t.request('POST', '/functions/remote', {
      sessionToken: ada.sessionToken,
      body: { x: 1 },
    });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ result: { got: { x: 1 } } });
    const call = receiver.calls.at(-1)!;
    expect(call.headers['x-backend-webhook-key']).toBe(WEBHOOK_KEY);
    expect(call.body).toMatchObject({
      functionName: 'remote',
      params: { x: 1 },
      master: false,
      user: { objectId: ada.objectId, username: 'ada' },
      context: {},
    });
    expect(call.body.user).not.toHaveProperty('password');
    // An anonymous user's authData stays in the service.
    const anon = await t.request('POST', '/users', {
      body: { authData: { anonymous: { id: 'a1b2c3d4-anon' } } },
    });
    await t.request('POST', '/functions/remote', { sessionToken: anon.json.sessionToken });
    expect(receiver.calls.at(-1)!.body.user).toMatchObject({ objectId: anon.json.objectId });
    expect(receiver.calls.at(-1)!.body.user).not.toHaveProperty('authData');
  });

  it('{error} answers 141 with its text; garbage and a timeout answer 141 with a clear text', async () => {
    receiver.on('/fn/remote', () => ({ json: { error: 'remote says no' } }));
    expect((await t.request('POST', '/functions/remote', { as: 'master' })).json).toEqual({
      code: 141,
      error: 'remote says no',
    });
    receiver.on('/fn/remote', () => ({ raw: '<html>oops</html>' }));
    const garbage = await t.request('POST', '/functions/remote', { as: 'master' });
    expect(garbage.json).toEqual({
      code: 141,
      error: `The webhook ${receiver.url}/fn/remote answered something other than {"success": …} or {"error": "…"}.`,
    });
    receiver.on('/fn/remote', () => ({ delayMs: 5000, json: { success: 1 } }));
    const slow = await t.request('POST', '/functions/remote', { as: 'master' });
    expect(slow.status).toBe(400);
    expect(slow.json).toEqual({
      code: 141,
      error: `The webhook ${receiver.url}/fn/remote did not answer within 2000 ms.`,
    });
  });
});

describe('trigger webhooks', () => {
  it('both run for one class: the in-process trigger first, then the webhook, whose answer is saved', async () => {
    await t.request('POST', '/hooks/triggers', {
      as: 'master',
      body: { className: 'Hooked', triggerName: 'beforeSave', url: `${receiver.url}/t/hooked` },
    });
    receiver.on('/t/hooked', (call) => ({
      json: { success: { ...call.body.object, trail: [...call.body.object.trail, 'webhook'] } },
    }));
    const res = await t.request('POST', '/classes/Hooked', {
      sessionToken: ada.sessionToken,
      body: { name: 'x' },
    });
    expect(res.status).toBe(201);
    const stored = await t.request('GET', `/classes/Hooked/${res.json.objectId}`, { as: 'master' });
    expect(stored.json).toMatchObject({ name: 'x', trail: ['cloud', 'webhook'] });
    expect(receiver.calls.at(-1)!.body).toMatchObject({
      triggerName: 'beforeSave',
      object: { className: 'Hooked', name: 'x', trail: ['cloud'] },
      master: false,
    });
  });

  it('a before webhook that refuses, times out or answers garbage writes nothing (142, 141, 141)', async () => {
    await t.request('POST', '/hooks/triggers', {
      as: 'master',
      body: { className: 'Guarded', triggerName: 'beforeSave', url: `${receiver.url}/t/guard` },
    });
    const cases: Array<[() => object, number, string]> = [
      [() => ({ json: { error: 'not today' } }), 142, 'not today'],
      [
        () => ({ delayMs: 5000, json: { success: {} } }),
        141,
        `The webhook ${receiver.url}/t/guard did not answer within 2000 ms.`,
      ],
      [
        () => ({ raw: 'nope' }),
        141,
        `The webhook ${receiver.url}/t/guard answered something other than {"success": …} or {"error": "…"}.`,
      ],
    ];
    for (const [reply, code, error] of cases) {
      receiver.on('/t/guard', reply);
      const res = await t.request('POST', '/classes/Guarded', { as: 'master', body: { n: 1 } });
      expect(res.json).toEqual({ code, error });
    }
    expect(await count('Guarded')).toBe(0);
  });

  it('an after webhook is retried with backoff; every attempt is in the delivery log', async () => {
    await t.request('POST', '/hooks/triggers', {
      as: 'master',
      body: { className: 'Audited', triggerName: 'afterSave', url: `${receiver.url}/t/audit` },
    });
    receiver.on('/t/audit', (_call, nth) =>
      nth < 3 ? { status: 503, raw: 'busy' } : { json: { success: true } },
    );
    const res = await t.request('POST', '/classes/Audited', { as: 'master', body: { n: 1 } });
    expect(res.status).toBe(201);
    await t.service.cloud.triggers.idle();
    const log = await t.request('GET', '/hooks/deliveries', {
      as: 'master',
      query: { className: 'Audited' },
    });
    expect(log.json.results.map((d: any) => [d.attempt, d.status, d.httpStatus])).toEqual([
      [3, 'succeeded', 200],
      [2, 'retrying', 503],
      [1, 'retrying', 503],
    ]);
    expect(log.json.results[0]).toMatchObject({
      kind: 'trigger',
      hook: 'Audited.afterSave',
      triggerName: 'afterSave',
      objectId: res.json.objectId,
      url: `${receiver.url}/t/audit`,
    });
    expect(log.json.results[2].error).toBe(`The webhook ${receiver.url}/t/audit answered HTTP 503.`);
    expect(receiver.calls.filter((c) => c.path === '/t/audit').map((c) => c.body.object.objectId)).toEqual(
      Array(3).fill(res.json.objectId),
    );
  });

  it('gives up after the bounded retries; the write stays', async () => {
    receiver.on('/t/audit', () => ({ status: 500, raw: 'down' }));
    const res = await t.request('POST', '/classes/Audited', { as: 'master', body: { n: 2 } });
    await t.service.cloud.triggers.idle();
    const log = await t.request('GET', '/hooks/deliveries', {
      as: 'master',
      query: { className: 'Audited', limit: 3 },
    });
    expect(log.json.results.map((d: any) => [d.attempt, d.status])).toEqual([
      [3, 'failed'],
      [2, 'retrying'],
      [1, 'retrying'],
    ]);
    expect((await t.request('GET', `/classes/Audited/${res.json.objectId}`, { as: 'master' })).status).toBe(
      200,
    );
  });

  it('the delivery log filters by status and kind and refuses unknown filters', async () => {
    const failed = await t.request('GET', '/hooks/deliveries', { as: 'master', query: { status: 'failed' } });
    expect(failed.json.results.length).toBeGreaterThan(0);
    expect(failed.json.results.every((d: any) => d.status === 'failed')).toBe(true);
    const fns = await t.request('GET', '/hooks/deliveries', { as: 'master', query: { kind: 'function' } });
    expect(fns.json.results.every((d: any) => d.kind === 'function' && d.functionName === 'remote')).toBe(
      true,
    );
    const bad = await t.request('GET', '/hooks/deliveries', { as: 'master', query: { colour: 'red' } });
    expect(bad.json).toEqual({
      code: 102,
      error: 'Unknown filter colour: use kind, hook, className, triggerName, functionName, status or limit.',
    });
  });
});

describe('trust', () => {
  it('an HTTPS receiver whose certificate is not trusted is unreachable (141), nothing written', async () => {
    const other = await startService({ cloud: CLOUD_MODULE });
    try {
      await other.request('POST', '/schemas/Guarded', { as: 'master', body: { className: 'Guarded' } });
      await other.request('POST', '/hooks/triggers', {
        as: 'master',
        body: { className: 'Guarded', triggerName: 'beforeSave', url: `${receiver.url}/t/guard` },
      });
      const res = await other.request('POST', '/classes/Guarded', { as: 'master', body: { n: 1 } });
      expect(res.status).toBe(400);
      expect(res.json.code).toBe(141);
      expect(res.json.error).toMatch(
        new RegExp(
          `^The webhook ${receiver.url}/t/guard is unreachable \\((SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT)\\)\\.$`,
        ),
      );
      expect(
        (await other.request('GET', '/classes/Guarded', { as: 'master', query: { count: 1, limit: 0 } })).json
          .count,
      ).toBe(0);
    } finally {
      await other.close();
    }
  });

  it('hooks.trustedCA also takes a file path; plain http only with allowInsecureUrls', async () => {
    const plain = await startReceiver();
    const other = await startService({ hooks: { allowInsecureUrls: true } });
    const caFile = path.join(other.dataDir, 'ca.pem');
    writeFileSync(caFile, receiver.cert!);
    const third = await startService({ hooks: { trustedCA: caFile } });
    try {
      await other.request('POST', '/hooks/functions', {
        as: 'master',
        body: { functionName: 'p', url: `${plain.url}/p` },
      });
      expect((await other.request('POST', '/functions/p', { as: 'master' })).json).toEqual({ result: true });
      await third.request('POST', '/hooks/functions', {
        as: 'master',
        body: { functionName: 's', url: `${receiver.url}/s` },
      });
      expect((await third.request('POST', '/functions/s', { as: 'master' })).json).toEqual({ result: true });
    } finally {
      await other.close();
      await third.close();
      await plain.close();
    }
  });
});
