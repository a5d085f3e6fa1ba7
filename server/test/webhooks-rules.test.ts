import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createService, type Service } from '../src/index.ts';
import { CLOUD_MODULE } from './helpers/cloud.ts';
import { credentialHeaders, KEYS, type TestResponse } from './helpers/keys.ts';
import { type Receiver, startReceiver } from './helpers/receiver.ts';

/**
 * The rules of `_Hooks` rows hold for every writer, not only the /hooks routes (143, the routes'
 * texts), and the webhook client itself refuses a plain http URL unless `hooks.allowInsecureUrls`.
 */

interface Running {
  service: Service;
  request(method: string, p: string, body?: unknown, query?: Record<string, string>): Promise<TestResponse>;
}

/** The service on a data dir the test keeps (so a restart sees the same store); master key calls. */
async function serve(dataDir: string, overrides: Record<string, unknown>): Promise<Running> {
  const service = await createService({
    ...KEYS,
    dataDir,
    port: 0,
    host: '127.0.0.1',
    logLevel: 'error',
    rateLimit: [],
    ...overrides,
  });
  const { url } = await service.listen(0, '127.0.0.1');
  return {
    service,
    async request(method, p, body, query) {
      const res = await fetch(`${url}${p}${query ? `?${new URLSearchParams(query)}` : ''}`, {
        method,
        headers: { ...credentialHeaders('master'), 'Content-Type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, headers: res.headers, text, json: text ? JSON.parse(text) : undefined };
    },
  };
}

const HTTPS_ONLY = 'url must use https (plain http needs the option hooks.allowInsecureUrls).';
let receiver: Receiver;
let plain: Receiver;
let dataDir: string;
let t: Running;

const refused = (res: TestResponse, error: string) => {
  expect(res.status, res.text).toBe(400);
  expect(res.json).toEqual({ code: 143, error });
};
const hookRows = async (where: Record<string, unknown> = {}) =>
  (await t.request('GET', '/classes/_Hooks', undefined, { where: JSON.stringify(where) })).json.results;

beforeAll(async () => {
  receiver = await startReceiver({ https: true });
  plain = await startReceiver();
  dataDir = mkdtempSync(path.join(tmpdir(), 'bds-hook-rules-'));
  t = await serve(dataDir, { cloud: CLOUD_MODULE, hooks: { trustedCA: receiver.cert, retries: 2 } });
  for (const className of ['Doc', 'Other']) {
    await t.request('POST', `/schemas/${className}`, { className });
  }
});
afterAll(async () => {
  await t?.service.close();
  await receiver?.close();
  await plain?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('a master write to /classes/_Hooks passes the rules of the /hooks routes (143)', () => {
  it('refuses plain http, unknown classes and trigger names, bad names; nothing is written', async () => {
    refused(
      await t.request('POST', '/classes/_Hooks', { functionName: 'x', url: `${plain.url}/x` }),
      HTTPS_ONLY,
    );
    refused(
      await t.request('POST', '/classes/_Hooks', {
        className: 'Doc',
        triggerName: 'beforeSave',
        url: `${plain.url}/x`,
      }),
      HTTPS_ONLY,
    );
    refused(
      await t.request('POST', '/classes/_Hooks', {
        className: 'Nope',
        triggerName: 'beforeSave',
        url: `${receiver.url}/x`,
      }),
      'Class Nope does not exist.',
    );
    refused(
      await t.request('POST', '/classes/_Hooks', {
        className: 'Doc',
        triggerName: 'beforeFly',
        url: `${receiver.url}/x`,
      }),
      'Invalid trigger name "beforeFly": use beforeSave, afterSave, beforeDelete, afterDelete.',
    );
    refused(
      await t.request('POST', '/classes/_Hooks', { functionName: '1bad', url: `${receiver.url}/x` }),
      'functionName must be a name of letters, digits, _, - and . (starting with a letter).',
    );
    refused(
      await t.request('POST', '/classes/_Hooks', { functionName: 'x', url: 'ftp://127.0.0.1/x' }),
      'url must use https, not ftp.',
    );
    refused(await t.request('POST', '/classes/_Hooks', { functionName: 'x' }), 'url must be a string.');
    refused(
      await t.request('POST', '/classes/_Hooks', {
        functionName: 'x',
        className: 'Doc',
        triggerName: 'afterSave',
        url: `${receiver.url}/x`,
      }),
      'A hook is a function hook {functionName, url} or a trigger hook {className, triggerName, url}, not both.',
    );
    refused(
      await t.request('POST', '/classes/_Hooks', { url: `${receiver.url}/x` }),
      'A hook needs functionName, or className and triggerName.',
    );
    refused(
      await t.request('POST', '/classes/_Hooks', { functionName: 'x', url: `${receiver.url}/x`, colour: 1 }),
      'Unknown field colour: a _Hooks row takes {functionName, className, triggerName, url, ACL}.',
    );
    expect(await hookRows()).toEqual([]);
  });

  it('refuses a second hook for the same function or the same class and trigger, however written', async () => {
    const fn = await t.request('POST', '/hooks/functions', {
      functionName: 'dup',
      url: `${receiver.url}/dup`,
    });
    expect(fn.status).toBe(201);
    const trig = await t.request('POST', '/hooks/triggers', {
      className: 'Doc',
      triggerName: 'afterSave',
      url: `${receiver.url}/doc`,
    });
    expect(trig.status).toBe(201);
    refused(
      await t.request('POST', '/classes/_Hooks', { functionName: 'dup', url: `${receiver.url}/dup2` }),
      'A function hook named dup already exists.',
    );
    refused(
      await t.request('POST', '/classes/_Hooks', {
        className: 'Doc',
        triggerName: 'afterSave',
        url: `${receiver.url}/doc2`,
      }),
      'Class Doc already has a hook for afterSave.',
    );
    const batch = await t.request('POST', '/batch', {
      requests: [
        { method: 'POST', path: '/classes/_Hooks', body: { functionName: 'dup', url: `${receiver.url}/b` } },
      ],
    });
    expect(batch.json).toEqual([
      { error: { code: 143, error: 'A function hook named dup already exists.' } },
    ]);
    expect(await hookRows({ functionName: 'dup' })).toHaveLength(1);
    expect(await hookRows({ className: 'Doc', triggerName: 'afterSave' })).toHaveLength(1);
  });

  it('checks an update of a row as the row it makes: plain http, a taken name, another trigger', async () => {
    const created = await t.request('POST', '/classes/_Hooks', {
      functionName: 'viaRows',
      url: `${receiver.url}/rows`,
    });
    expect(created.status).toBe(201);
    const id = created.json.objectId;
    refused(await t.request('PUT', `/classes/_Hooks/${id}`, { url: `${plain.url}/rows` }), HTTPS_ONLY);
    refused(
      await t.request('PUT', `/classes/_Hooks/${id}`, { functionName: 'dup' }),
      'A function hook named dup already exists.',
    );
    refused(
      await t.request('PUT', `/classes/_Hooks/${id}`, { url: { __op: 'Delete' } }),
      'url must be a string.',
    );
    // Its own name and a new https URL are fine; the registry follows the row.
    const moved = await t.request('PUT', `/classes/_Hooks/${id}`, {
      functionName: 'viaRows',
      url: `${receiver.url}/rows2`,
    });
    expect(moved.status).toBe(200);
    expect((await t.request('GET', '/hooks/functions/viaRows')).json).toEqual({
      functionName: 'viaRows',
      url: `${receiver.url}/rows2`,
    });
    receiver.on('/rows2', () => ({ json: { success: 'from rows' } }));
    expect((await t.request('POST', '/functions/viaRows', {})).json).toEqual({ result: 'from rows' });

    const other = await t.request('POST', '/classes/_Hooks', {
      className: 'Other',
      triggerName: 'afterSave',
      url: `${receiver.url}/other`,
    });
    refused(
      await t.request('PUT', `/classes/_Hooks/${other.json.objectId}`, { className: 'Doc' }),
      'Class Doc already has a hook for afterSave.',
    );
    expect((await t.request('GET', `/classes/_Hooks/${id}`)).json.url).toBe(`${receiver.url}/rows2`);
  });

  it('the routes answer the same texts (one copy of each rule)', async () => {
    refused(await t.request('PUT', '/hooks/functions/viaRows', { url: `${plain.url}/x` }), HTTPS_ONLY);
    refused(
      await t.request('POST', '/hooks/triggers', { triggerName: 'afterSave', url: `${receiver.url}/x` }),
      'className must be the name of an existing class.',
    );
    refused(
      await t.request('POST', '/hooks/triggers', { className: 'Doc', url: `${receiver.url}/x` }),
      'Invalid trigger name null: use beforeSave, afterSave, beforeDelete, afterDelete.',
    );
  });
});

describe('known limits, closed', () => {
  it('refuses a function hook with the name of a cloud code function (it would never be called)', async () => {
    const text =
      'Cloud code defines a function named hello: it would always be called instead of a function hook of that name.';
    refused(
      await t.request('POST', '/hooks/functions', { functionName: 'hello', url: `${receiver.url}/h` }),
      text,
    );
    refused(
      await t.request('POST', '/classes/_Hooks', { functionName: 'hello', url: `${receiver.url}/h` }),
      text,
    );
    expect(await hookRows({ functionName: 'hello' })).toEqual([]);
  });

  it('of two registrations at once exactly one is stored; the other is refused as a duplicate', async () => {
    for (let round = 0; round < 5; round++) {
      const name = `race${round}`;
      const answers = await Promise.all(
        [1, 2, 3].map((n) =>
          t.request('POST', '/hooks/functions', { functionName: name, url: `${receiver.url}/race/${n}` }),
        ),
      );
      expect(answers.map((a) => a.status).sort()).toEqual([201, 400, 400]);
      for (const a of answers.filter((x) => x.status === 400)) {
        expect(a.json).toEqual({ code: 143, error: `A function hook named ${name} already exists.` });
      }
      expect(await hookRows({ functionName: name })).toHaveLength(1);
    }
    const triggers = await Promise.all(
      [1, 2].map((n) =>
        t.request('POST', '/hooks/triggers', {
          className: 'Other',
          triggerName: 'beforeDelete',
          url: `${receiver.url}/trace/${n}`,
        }),
      ),
    );
    expect(triggers.map((a) => a.status).sort()).toEqual([201, 400]);
    expect(triggers.find((a) => a.status === 400)!.json).toEqual({
      code: 143,
      error: 'Class Other already has a hook for beforeDelete.',
    });
  });
});

describe('the webhook client sends to plain http only with hooks.allowInsecureUrls', () => {
  it('a stored http: hook (written while insecure URLs were allowed) fails cleanly after a restart without it', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'bds-hook-insecure-'));
    try {
      const loose = await serve(dir, { hooks: { allowInsecureUrls: true, retries: 2, retryBackoffMs: 10 } });
      await loose.request('POST', '/schemas/Guarded', { className: 'Guarded' });
      await loose.request('POST', '/schemas/Audited', { className: 'Audited' });
      for (const [p, body] of [
        ['/hooks/functions', { functionName: 'plainFn', url: `${plain.url}/fn` }],
        ['/hooks/triggers', { className: 'Guarded', triggerName: 'beforeSave', url: `${plain.url}/guard` }],
        ['/hooks/triggers', { className: 'Audited', triggerName: 'afterSave', url: `${plain.url}/audit` }],
      ] as const) {
        expect((await loose.request('POST', p, body)).status).toBe(201);
      }
      expect((await loose.request('POST', '/functions/plainFn', {})).json).toEqual({ result: true });
      await loose.service.close();
      const callsBefore = plain.calls.length;

      const strict = await serve(dir, { hooks: { retries: 2, retryBackoffMs: 10 } });
      try {
        const fn = await strict.request('POST', '/functions/plainFn', {});
        expect(fn.status).toBe(400);
        expect(fn.json).toEqual({
          code: 141,
          error: `The webhook ${plain.url}/fn was not called: ${HTTPS_ONLY}`,
        });
        const save = await strict.request('POST', '/classes/Guarded', { n: 1 });
        expect(save.status).toBe(400);
        expect(save.json).toEqual({
          code: 141,
          error: `The webhook ${plain.url}/guard was not called: ${HTTPS_ONLY}`,
        });
        expect(
          (await strict.request('GET', '/classes/Guarded', undefined, { count: '1', limit: '0' })).json,
        ).toEqual({ results: [], count: 0 });
        // An after-hook: the write stays, one failed delivery (a refused URL is not retried).
        const audited = await strict.request('POST', '/classes/Audited', { n: 1 });
        expect(audited.status).toBe(201);
        await strict.service.cloud.triggers.idle();
        const log = await strict.request('GET', '/hooks/deliveries', undefined, { className: 'Audited' });
        expect(log.json.results.map((d: any) => [d.attempt, d.status, d.error])).toEqual([
          [1, 'failed', `The webhook ${plain.url}/audit was not called: ${HTTPS_ONLY}`],
        ]);
        expect(plain.calls.length).toBe(callsBefore);
      } finally {
        await strict.service.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
