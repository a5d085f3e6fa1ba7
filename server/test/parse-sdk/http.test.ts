import type { AddressInfo } from 'node:net';
import ParseSDK from 'parse/node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createHttpServer } from '../../src/http/server.ts';
import { KEYS, startService, type TestService } from '../helpers/service.ts';

/**
 * The HTTP edges the stock `parse` SDK (v8) relies on, with the SDK unchanged against the real
 * service: the health poll of its offline queue (a POST with `_method: "GET"`), idempotency by
 * request id, and the CORS headers a browser needs to read answers; then the exact answers.
 */

// The package's "./node" entry exports the Parse object; its typings leave out initialize(), which on
// Node also takes the master key.
const Parse = ParseSDK as typeof ParseSDK & {
  initialize(applicationId: string, javaScriptKey: string, masterKey?: string): void;
};

/** The SDK's offline queue, set up by initialize() (its typings leave it out of the "./node" entry). */
const queue = () =>
  (
    ParseSDK as unknown as {
      EventuallyQueue: {
        save(object: ParseSDK.Object, serverOptions?: Record<string, unknown>): Promise<unknown>;
        length(): Promise<number>;
        poll(ms?: number): void;
        stopPoll(): void;
        isPolling(): boolean;
      };
    }
  ).EventuallyQueue;

const EXPOSED =
  'X-Backend-Job-Status-Id, X-Parse-Job-Status-Id, X-Backend-Push-Status-Id, X-Parse-Push-Status-Id, Location, X-Request-Id';
const ORIGIN = 'https://app.example.com';

let t: TestService;

beforeAll(async () => {
  t = await startService({
    idempotency: { paths: ['classes/IdempotentTest', 'functions/.*'], ttl: 120 },
    fileUpload: { enableForPublic: true },
  });
  Parse.initialize(KEYS.appId, KEYS.javascriptKey, KEYS.masterKey);
  Parse.serverURL = t.url;
  // One attempt: a failure must show up as a failure, not as a slow retry.
  Parse.CoreManager.set('REQUEST_ATTEMPT_LIMIT', 1);
  for (const className of ['IdempotentTest', 'Queued', 'Item']) {
    const res = await t.request('POST', `/schemas/${className}`, {
      as: 'master',
      body: { className, fields: { foo: { type: 'String' } } },
    });
    expect(res.status, res.text).toBe(200);
  }
});

afterAll(async () => {
  await t?.close();
});

/** Waits until `check` holds (the SDK polls on its own timer), failing after `ms`. */
async function until(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('HTTP edges with the stock Parse JS SDK', () => {
  afterEach(() => {
    Parse.CoreManager.set('REQUEST_HEADERS', {});
    queue().stopPoll();
  });

  it("the health check as the SDK sends it (POST, _method GET) answers {status: 'ok'}", async () => {
    const rest = Parse.CoreManager.getRESTController();
    expect(await rest.request('GET', 'health')).toEqual({ status: 'ok' });
  });

  it('the offline queue polls /health and sends what it holds once the service answers ok', async () => {
    const queued = new Parse.Object('Queued', { foo: 'offline' });
    await queue().save(queued, { useMasterKey: true });
    expect(await queue().length()).toBe(1);
    queue().poll(200);
    await until(() => !queue().isPolling(), 'the queue stops polling once /health is ok');
    const rows = await t.request('GET', '/classes/Queued', { as: 'master' });
    const deadline = Date.now() + 10_000;
    let found = rows.json.results;
    while (found.length === 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
      found = (await t.request('GET', '/classes/Queued', { as: 'master' })).json.results;
    }
    // A poll still in flight when the first "ok" arrives sends the queue again (the SDK's own race).
    expect([...new Set(found.map((r: { foo: string }) => r.foo))]).toEqual(['offline']);
  });

  it('a repeated request id answers "Duplicate request" on create and on update; reads are not guarded', async () => {
    Parse.CoreManager.set('REQUEST_HEADERS', { 'X-Parse-Request-Id': 'sdk-1234' });
    const item = new Parse.Object('IdempotentTest');
    await item.save();
    await expect(item.save()).rejects.toMatchObject({ code: 159, message: 'Duplicate request' });

    Parse.CoreManager.set('REQUEST_HEADERS', { 'X-Parse-Request-Id': 'sdk-5678' });
    item.set('foo', 'bar');
    await item.save();
    item.set('foo', 'baz');
    await expect(item.save()).rejects.toMatchObject({ code: 159, message: 'Duplicate request' });

    // Still with the same request id: a find is not a write, and it sees the one row as first updated.
    const results = await new Parse.Query('IdempotentTest').find();
    expect(results.map((r) => r.get('foo'))).toEqual(['bar']);
  });
});

describe('HTTP edges over REST', () => {
  it('POST /health with _method GET answers like GET /health, without keys', async () => {
    for (const body of [
      { _method: 'GET' },
      { _method: 'get', _ApplicationId: KEYS.appId, _ClientVersion: 'js8.6.2' },
    ]) {
      const res = await fetch(`${t.url}/health`, {
        method: 'POST',
        headers: { 'Content-Type': 'text/plain' },
        body: JSON.stringify(body),
      });
      expect([res.status, await res.json()]).toEqual([200, { status: 'ok' }]);
      expect(res.headers.get('access-control-allow-origin')).toBe('*');
    }
  });

  it('idempotency patterns match from the start of the path: classes/IdempotentTest covers PUT classes/IdempotentTest/<id>', async () => {
    const created = await t.request('POST', '/classes/IdempotentTest', { as: 'master', body: { foo: 'a' } });
    expect(created.status).toBe(201);
    const path = `/classes/IdempotentTest/${created.json.objectId}`;
    const headers = { 'X-Backend-Request-Id': 'rest-put-1' };
    const first = await t.request('PUT', path, { as: 'master', headers, body: { foo: 'b' } });
    expect(first.status).toBe(200);
    const again = await t.request('PUT', path, { as: 'master', headers, body: { foo: 'c' } });
    expect([again.status, again.json]).toEqual([400, { code: 159, error: 'Duplicate request' }]);
    // The same id on reads (and on a path no pattern covers) is not claimed.
    for (let i = 0; i < 2; i++) {
      expect((await t.request('GET', path, { as: 'master', headers })).json.foo).toBe('b');
      const other = await t.request('POST', '/classes/Item', { as: 'master', headers, body: { foo: 'x' } });
      expect(other.status).toBe(201);
    }
  });

  it('a browser-like preflight is allowed for the headers the SDKs send', async () => {
    const requested = [
      'content-type',
      'x-parse-application-id',
      'x-parse-javascript-key',
      'x-parse-session-token',
      'x-parse-installation-id',
      'x-parse-request-id',
      'x-parse-client-version',
      'x-parse-revocable-session',
      'x-parse-upload-mode',
      'x-parse-file-metadata',
      'x-parse-file-tags',
      'x-parse-file-directory',
      'x-parse-file-max-upload-size',
      'x-requested-with',
      'x-backend-application-id',
      'x-backend-master-key',
    ];
    const res = await fetch(`${t.url}/classes/Item`, {
      method: 'OPTIONS',
      headers: {
        Origin: ORIGIN,
        'Access-Control-Request-Method': 'PUT',
        'Access-Control-Request-Headers': requested.join(','),
      },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-methods')?.split(', ')).toContain('PUT');
    const allowed = res.headers
      .get('access-control-allow-headers')!
      .split(', ')
      .map((h) => h.toLowerCase());
    for (const header of requested) expect(allowed, header).toContain(header);
    expect(res.headers.get('access-control-expose-headers')).toBe(EXPOSED);
  });

  it('every answer carries the CORS headers: success, errors, downloads and uploads', async () => {
    const upload = await t.request('POST', '/files/cors.txt', {
      headers: { 'Content-Type': 'text/plain', Origin: ORIGIN },
      rawBody: 'x',
      as: 'js',
    });
    expect(upload.status).toBe(201);
    const answers: Array<[string, number, Response | Awaited<ReturnType<TestService['request']>>]> = [
      ['upload', 201, upload],
      ['download', 200, await fetch(upload.json.url, { headers: { Origin: ORIGIN } })],
      [
        'missing download',
        404,
        await fetch(`${t.url}/files/${KEYS.appId}/nope.txt`, { headers: { Origin: ORIGIN } }),
      ],
      ['find', 200, await t.request('GET', '/classes/Item', { headers: { Origin: ORIGIN } })],
      ['not found', 404, await t.request('GET', '/classes/Item/nope012345', { headers: { Origin: ORIGIN } })],
      ['no keys', 403, await t.request('GET', '/classes/Item', { as: 'none', headers: { Origin: ORIGIN } })],
      ['master only', 403, await t.request('GET', '/schemas', { headers: { Origin: ORIGIN } })],
      [
        'bad json',
        400,
        await t.request('POST', '/classes/Item', { rawBody: '{', headers: { Origin: ORIGIN } }),
      ],
      ['health', 200, await fetch(`${t.url}/health`, { headers: { Origin: ORIGIN } })],
    ];
    for (const [what, status, res] of answers) {
      expect(res.status, what).toBe(status);
      expect(res.headers.get('access-control-allow-origin'), what).toBe('*');
      expect(res.headers.get('access-control-expose-headers'), what).toBe(EXPOSED);
    }
  });
  it('while the service starts, its 503 answers carry the CORS headers too (health asked either way)', async () => {
    const http = createHttpServer();
    await new Promise<void>((resolve) => http.server.listen(0, '127.0.0.1', () => resolve()));
    const { port } = http.server.address() as AddressInfo;
    try {
      const base = `http://127.0.0.1:${port}/api`;
      const answers = [
        await fetch(`${base}/health`, { headers: { Origin: ORIGIN } }),
        await fetch(`${base}/health`, {
          method: 'POST',
          headers: { Origin: ORIGIN, 'Content-Type': 'text/plain' },
          body: JSON.stringify({ _method: 'GET' }),
        }),
        await fetch(`${base}/classes/Item`, { headers: { Origin: ORIGIN } }),
      ];
      for (const res of answers) {
        expect(res.status).toBe(503);
        expect(res.headers.get('access-control-allow-origin')).toBe('*');
        expect(res.headers.get('access-control-expose-headers')).toBe(EXPOSED);
      }
      expect(await answers[1]!.json()).toEqual({ status: 'starting' });
    } finally {
      http.server.close();
    }
  });
});

describe('the JSON form of an upload passes the rate limits and idempotency as the raw form does', () => {
  let guarded: TestService;
  beforeAll(async () => {
    guarded = await startService({
      fileUpload: { enableForPublic: true },
      idempotency: { paths: ['files/'] },
      rateLimit: [{ path: '^/files/[^/]+$', methods: ['POST'], window: 60, max: 2, by: 'ip' }],
    });
  });
  afterAll(async () => {
    await guarded?.close();
  });

  it('a repeated request id answers 159, and past the limit 429 (155)', async () => {
    const upload = (requestId: string) =>
      fetch(`${guarded.url}/files/once.txt`, {
        method: 'POST',
        headers: { 'Content-Type': 'text/plain', 'X-Parse-Request-Id': requestId },
        body: JSON.stringify({
          base64: 'eA==',
          _ApplicationId: KEYS.appId,
          _JavaScriptKey: KEYS.javascriptKey,
        }),
      });
    expect((await upload('up-1')).status).toBe(201);
    const again = await upload('up-1');
    expect([again.status, await again.json()]).toEqual([400, { code: 159, error: 'Duplicate request' }]);
    const limited = await upload('up-2');
    expect(limited.status).toBe(429);
    expect(((await limited.json()) as { code: number }).code).toBe(155);
    const stored = await guarded.request('GET', '/files/orphans', { as: 'master' });
    expect(stored.json.results).toHaveLength(1);
  });
});
