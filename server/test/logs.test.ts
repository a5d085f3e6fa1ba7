import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { LogLine } from '@bds/client/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WriteEvent } from '../src/kernel/events.ts';
import { createLogger } from '../src/kernel/log.ts';
import { TRACE_ID_LENGTH } from '../src/kernel/trace.ts';
import { LiveClient } from './helpers/live.ts';
import { REDIS_URL, redisAnswers, testPrefix } from './helpers/redis.ts';
import { KEYS, startService, type TestService } from './helpers/service.ts';

/** Request ids (X-Request-Id) and the logs explorer (docs/protocol.md#request-ids). */

const GENERATED = new RegExp(`^[A-Za-z0-9]{${TRACE_ID_LENGTH}}$`);

describe('request id: X-Request-Id on every answer', () => {
  let plain: TestService;
  let proxied: TestService;

  beforeAll(async () => {
    plain = await startService();
    // The test's requests come from 127.0.0.1: a trusted proxy for this one.
    proxied = await startService({ trustProxy: ['loopback'] });
  });
  afterAll(async () => {
    await plain?.close();
    await proxied?.close();
  });

  it('a new id on each answer: success, error, health, preflight', async () => {
    const ok = await plain.request('GET', '/classes/Thing');
    const missing = await plain.request('GET', '/classes/Thing/nope');
    const health = await plain.request('GET', '/health', { as: 'none' });
    const preflight = await fetch(`${plain.url}/classes/Thing`, { method: 'OPTIONS' });
    const ids = [ok, missing, health].map((r) => r.headers.get('X-Request-Id'));
    ids.push(preflight.headers.get('X-Request-Id'));
    expect(ok.status).toBe(200);
    expect(missing.status).toBe(404);
    for (const id of ids) expect(id).toMatch(GENERATED);
    expect(new Set(ids).size).toBe(4);
    expect(ok.headers.get('Access-Control-Expose-Headers')).toContain('X-Request-Id');
  });

  it('on an upload, a download, an account page and a refusal under /apps/ too', async () => {
    const upload = await plain.request('POST', '/files/hello.txt', {
      as: 'master',
      rawBody: 'hello',
      headers: { 'Content-Type': 'text/plain' },
    });
    expect(upload.status).toBe(201);
    const { url } = upload.json as { url: string };
    const download = await fetch(`${plain.url}${new URL(url).pathname.replace(/^\/api/, '')}`);
    expect(download.status).toBe(200);
    const page = await fetch(`${plain.url}/apps/${KEYS.appId}/verify_email?token=nope`);
    const missing = await fetch(`${plain.url}/apps/${KEYS.appId}/nothing-here`);
    for (const res of [upload.headers, download.headers, page.headers, missing.headers]) {
      expect(res.get('X-Request-Id')).toMatch(GENERATED);
    }
    // Not a page: a request without keys.
    expect(missing.status).toBe(403);
  });

  it("a client that is not a trusted proxy cannot choose its request's id", async () => {
    const res = await plain.request('GET', '/classes/Thing', {
      headers: { 'X-Request-Id': 'chosen-by-client' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('X-Request-Id')).toMatch(GENERATED);
  });

  it("a trusted proxy's id is kept when it is safe, replaced otherwise", async () => {
    const kept = await proxied.request('GET', '/classes/Thing', {
      headers: { 'X-Request-Id': 'edge-4f2a:01.b_c' },
    });
    expect(kept.headers.get('X-Request-Id')).toBe('edge-4f2a:01.b_c');
    for (const bad of ['with space', 'quote"d', 'x'.repeat(129), '<script>', 'a,b']) {
      const res = await proxied.request('GET', '/classes/Thing', { headers: { 'X-Request-Id': bad } });
      expect(res.status).toBe(200);
      expect(res.headers.get('X-Request-Id')).toMatch(GENERATED);
    }
    const longest = 'y'.repeat(128);
    const bounded = await proxied.request('GET', '/classes/Thing', { headers: { 'X-Request-Id': longest } });
    expect(bounded.headers.get('X-Request-Id')).toBe(longest);
  });

  it("the write event carries the request's id (row history records it)", async () => {
    const events: WriteEvent[] = [];
    const off = proxied.service.core.events.subscribe((e) => events.push(e));
    const res = await proxied.request('POST', '/classes/Traced', {
      as: 'master',
      body: { n: 1 },
      headers: { 'X-Request-Id': 'trace-write-1' },
    });
    off();
    expect(res.status).toBe(201);
    const created = events.find((e) => e.className === 'Traced' && e.op === 'create');
    expect(created?.requestId).toBe('trace-write-1');
  });
});

const CLOUD = fileURLToPath(new URL('./fixtures/logs-cloud.ts', import.meta.url));
const PARSE_CLOUD = fileURLToPath(new URL('./fixtures/logs-incumbent-cloud.cjs', import.meta.url));

type Line = LogLine;

describe('the request logs: GET /logs and GET /logs/<requestId>', () => {
  let t: TestService;
  let hookServer: Server;
  let hookUrl: string;
  const written: string[] = [];

  beforeAll(async () => {
    hookServer = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ success: 'hooked' }));
      });
    });
    await new Promise<void>((r) => hookServer.listen(0, '127.0.0.1', () => r()));
    hookUrl = `http://127.0.0.1:${(hookServer.address() as AddressInfo).port}/hook`;
    const sink = new Writable({
      write(chunk, _enc, done) {
        written.push(chunk.toString());
        done();
      },
    });
    t = await startService(
      {
        cloud: CLOUD,
        hooks: { allowInsecureUrls: true },
        trustProxy: ['loopback'],
        logLevel: 'info',
      },
      { log: createLogger('info', sink) },
    );
  });
  afterAll(async () => {
    await t?.close();
    await new Promise((r) => hookServer?.close(r));
  });

  const logs = async (query: Record<string, string> = {}) => {
    const res = await t.request('GET', `/logs?${new URLSearchParams(query)}`, { as: 'master' });
    expect(res.status).toBe(200);
    return (res.json as { results: Line[] }).results;
  };

  it('the request log line carries the request id', async () => {
    const res = await t.request('GET', '/classes/Thing', { headers: { 'X-Request-Id': 'log-line-id' } });
    expect(res.status).toBe(200);
    t.service.core.log.flush();
    await new Promise((r) => setTimeout(r, 60));
    const line = written
      .join('')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === 'request' && l.requestId === 'log-line-id');
    expect(line).toMatchObject({ method: 'GET', path: '/classes/Thing', status: 200, caller: 'anonymous' });
  });

  it('master only: 403, code 119 and its text for any other caller; nothing listed', async () => {
    for (const as of ['rest', 'js', 'none'] as const) {
      const list = await t.request('GET', '/logs', { as });
      const one = await t.request('GET', '/logs/anything', { as });
      for (const res of [list, one]) {
        expect([as, res.status, res.json]).toEqual([
          as,
          403,
          // Without the application's keys the key check refuses first.
          { code: 119, error: as === 'none' ? 'unauthorized' : 'unauthorized: master key is required' },
        ]);
      }
    }
  });

  it('filters: status, class of status, code, path, class, caller, user, request id, slower than, time', async () => {
    const signUp = await t.request('POST', '/users', { body: { username: 'logan', password: 'pw-logan-1' } });
    const { objectId: userId, sessionToken } = signUp.json as { objectId: string; sessionToken: string };
    const made = await t.request('POST', '/classes/Filtered', {
      as: 'master',
      body: { n: 1 },
      headers: { 'X-Request-Id': 'filter-create' },
    });
    const missing = await t.request('GET', '/classes/Filtered/nope', {
      sessionToken,
      headers: { 'X-Request-Id': 'filter-missing' },
    });
    expect([made.status, missing.status]).toEqual([201, 404]);
    const started = Date.now();

    const byId = await logs({ requestId: 'filter-create' });
    expect(byId).toHaveLength(1);
    expect(byId[0]).toMatchObject({
      kind: 'request',
      requestId: 'filter-create',
      method: 'POST',
      path: '/classes/Filtered',
      status: 201,
      caller: 'master',
      className: 'Filtered',
    });
    expect(typeof byId[0]!.ms).toBe('number');

    const notFound = await logs({ status: '404', className: 'Filtered' });
    expect(notFound.map((l) => l.requestId)).toEqual(['filter-missing']);
    expect(notFound[0]).toMatchObject({ code: 101, caller: 'user', user: userId });
    expect((await logs({ status: '4xx', path: '/classes/Filtered' })).map((l) => l.requestId)).toEqual([
      'filter-missing',
    ]);
    expect((await logs({ code: '101', user: userId })).map((l) => l.requestId)).toEqual(['filter-missing']);
    expect((await logs({ caller: 'master', className: 'Filtered' })).map((l) => l.requestId)).toEqual([
      'filter-create',
    ]);
    expect(await logs({ className: 'Filtered', slowerThan: '60000' })).toEqual([]);
    expect((await logs({ className: 'Filtered', slowerThan: '0' })).length).toBeGreaterThanOrEqual(0);
    expect(await logs({ className: 'Filtered', from: String(started + 60_000) })).toEqual([]);
    expect(
      (await logs({ className: 'Filtered', to: new Date(started + 60_000).toISOString() })).map(
        (l) => l.requestId,
      ),
    ).toEqual(['filter-missing', 'filter-create']);
    expect((await logs({ className: 'Filtered', limit: '1' })).map((l) => l.requestId)).toEqual([
      'filter-missing',
    ]);
  });

  it("a write cloud code makes while serving a request carries the request's id", async () => {
    const events: WriteEvent[] = [];
    const off = t.service.core.events.subscribe((e) => events.push(e));
    const res = await t.request('POST', '/functions/makeRow', {
      headers: { 'X-Request-Id': 'cloud-write-1' },
    });
    off();
    expect(res.json).toEqual({ result: 'made' });
    const made = events.find((e) => e.className === 'MadeByCloud');
    expect([made?.source, made?.requestId]).toEqual(['cloud', 'cloud-write-1']);
  });

  it('a bad filter answers 400, code 102 and its reason', async () => {
    const cases: Array<[Record<string, string>, string]> = [
      [{ status: 'abc' }, 'Invalid logs filter: status must be a whole number from 100 to 599.'],
      [
        { from: 'yesterday' },
        'Invalid logs filter: from must be an ISO date or milliseconds since the epoch.',
      ],
      [{ caller: 'root' }, 'Invalid logs filter: caller must be one of master, user, anonymous.'],
      [{ slowerThan: '-1' }, 'Invalid logs filter: slowerThan must be a number of ms.'],
      [{ limit: '0' }, 'Invalid logs filter: limit must be a whole number from 1 to 1000.'],
      [{ color: 'red' }, 'Invalid logs filter: unknown parameter color.'],
    ];
    for (const [query, error] of cases) {
      const res = await t.request('GET', `/logs?${new URLSearchParams(query)}`, { as: 'master' });
      expect(res.status).toBe(400);
      expect(res.json).toEqual({ code: 102, error });
    }
  });

  it("a request's lines: its request line, cloud code's console lines, webhook calls; no secret", async () => {
    const shout = await t.request('POST', '/functions/shout', {
      body: { word: 'hello', key: KEYS.masterKey },
      headers: { 'X-Request-Id': 'cloud-req-1' },
    });
    expect(shout.status).toBe(200);
    const saved = await t.request('POST', '/classes/Logged', {
      as: 'master',
      body: { n: 1 },
      headers: { 'X-Request-Id': 'cloud-req-2' },
    });
    expect(saved.status).toBe(201);
    const hook = await t.request('POST', '/hooks/functions', {
      as: 'master',
      body: { functionName: 'remote', url: hookUrl },
    });
    expect(hook.status).toBe(201);
    const remote = await t.request('POST', '/functions/remote', {
      headers: { 'X-Request-Id': 'hook-req-1' },
    });
    expect(remote.json).toEqual({ result: 'hooked' });

    const one = await t.request('GET', '/logs/cloud-req-1', { as: 'master' });
    expect(one.status).toBe(200);
    const { requestId, lines } = one.json as { requestId: string; lines: Line[] };
    expect(requestId).toBe('cloud-req-1');
    expect(lines.map((l) => [l.kind, l.level, l.text])).toEqual([
      ['cloud', 'info', 'shouting hello'],
      ['cloud', 'warn', '{"password":"[FILTERED]","note":"kept"} [FILTERED]'],
      ['request', undefined, undefined],
    ]);
    expect(lines[2]).toMatchObject({ path: '/functions/shout', status: 200 });
    expect(one.text).not.toContain('hunter2-in-cloud');
    expect(one.text).not.toContain(KEYS.masterKey);

    const second = (await t.request('GET', '/logs/cloud-req-2', { as: 'master' })).json as { lines: Line[] };
    expect(second.lines.map((l) => [l.kind, l.level, l.text])).toEqual([
      ['cloud', 'error', 'saving a Logged row'],
      ['request', undefined, undefined],
    ]);

    const hooked = (await t.request('GET', '/logs/hook-req-1', { as: 'master' })).json as { lines: Line[] };
    expect(hooked.lines.map((l) => l.kind)).toEqual(['webhook', 'request']);
    expect(hooked.lines[0]!.text).toMatch(
      /^webhook remote http:\/\/127\.0\.0\.1:\d+\/hook attempt 1: succeeded \(HTTP 200\) in \d+ ms$/,
    );

    expect((await t.request('GET', '/logs/no-such-request', { as: 'master' })).json).toEqual({
      requestId: 'no-such-request',
      lines: [],
    });
    // Nothing listed anywhere holds a key or a password.
    const all = await t.request('GET', '/logs?limit=1000', { as: 'master' });
    for (const secret of [KEYS.masterKey, KEYS.restAPIKey, 'pw-logan-1', 'hunter2-in-cloud']) {
      expect(all.text).not.toContain(secret);
    }
  });
});

describe('request.log of cloud code written for the incumbent', () => {
  it('its lines are lines of the request, scrubbed, and its log records carry the request id', async () => {
    const written: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        written.push(chunk.toString());
        done();
      },
    });
    const t = await startService(
      { parseCloud: PARSE_CLOUD, trustProxy: ['loopback'], logLevel: 'info' },
      { log: createLogger('info', sink) },
    );
    try {
      const res = await t.request('POST', '/functions/logged', {
        headers: { 'X-Request-Id': 'parse-log-1' },
      });
      expect(res.json).toEqual({ result: 'ok' });
      const lines = (await t.request('GET', '/logs/parse-log-1', { as: 'master' })).json as { lines: Line[] };
      expect(lines.lines.map((l) => [l.kind, l.level, l.text])).toEqual([
        ['cloud', 'info', 'from request.log {"sessionToken":"[FILTERED]","n":1}'],
        ['cloud', 'error', 'it went wrong'],
        ['request', undefined, undefined],
      ]);
      t.service.core.log.flush();
      await new Promise((r) => setTimeout(r, 60));
      const records = written
        .join('')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((l) => l.msg === 'cloud code');
      expect(records.map((r) => [r.requestId, r.trigger, r.level])).toEqual([
        ['parse-log-1', 'logged', 30],
        ['parse-log-1', 'logged', 50],
      ]);
      // The service's log holds the line as kept: the token inside the text is scrubbed there too.
      expect(records.map((r) => r.cloud)).toEqual([
        'from request.log {"sessionToken":"[FILTERED]","n":1}',
        'it went wrong',
      ]);
      expect(written.join('')).not.toContain('tok-secret-1');
    } finally {
      await t.close();
    }
  });
});

describe('realtime deliveries of a request', () => {
  it("the fan-out of a request's write is a line of that request", async () => {
    const t = await startService({ trustProxy: ['loopback'], liveQuery: { classNames: ['Watched'] } });
    try {
      const c = await LiveClient.connect(t, { masterKey: KEYS.masterKey });
      await c.subscribe(1, { className: 'Watched', where: { room: 'a' } });
      const res = await t.request('POST', '/classes/Watched', {
        as: 'master',
        body: { room: 'a' },
        headers: { 'X-Request-Id': 'live-write-1' },
      });
      expect(res.status).toBe(201);
      expect(await c.take()).toMatchObject({ op: 'create', requestId: 1 });
      c.close();
      const objectId = (res.json as { objectId: string }).objectId;
      await expect
        .poll(async () => {
          const lines = (await t.request('GET', '/logs/live-write-1', { as: 'master' })).json as {
            lines: Line[];
          };
          return lines.lines.map((l) => [l.kind, l.text]);
        })
        .toEqual([
          ['request', undefined],
          ['realtime', `realtime create Watched/${objectId}: 1 subscriptions, delivered to 1`],
        ]);
    } finally {
      await t.close();
    }
  });
});

describe('the request logs are bounded, and can be off', () => {
  it('keeps the last requestLogSize lines', async () => {
    const t = await startService({ requestLogSize: 5 });
    try {
      for (let i = 0; i < 12; i++) {
        await t.request('GET', `/classes/Bound${i}`, { headers: {} });
      }
      const res = await t.request('GET', '/logs?limit=1000', { as: 'master' });
      const paths = (res.json as { results: Line[] }).results.map((l) => l.path);
      expect(paths).toEqual([
        '/classes/Bound11',
        '/classes/Bound10',
        '/classes/Bound9',
        '/classes/Bound8',
        '/classes/Bound7',
      ]);
    } finally {
      await t.close();
    }
  });

  it("the explorer's own reads are not kept", async () => {
    const t = await startService();
    try {
      await t.request('GET', '/classes/Read');
      await t.request('GET', '/logs', { as: 'master' });
      await t.request('GET', '/logs/abc', { as: 'master' });
      await t.request('GET', '/logsbook', { as: 'master' });
      const res = await t.request('GET', '/logs', { as: 'master' });
      expect((res.json as { results: Line[] }).results.map((l) => [l.path, l.status])).toEqual([
        ['/logsbook', 404],
        ['/classes/Read', 200],
      ]);
    } finally {
      await t.close();
    }
  });

  it('requestLogSize 0 keeps nothing and answers no lines', async () => {
    const t = await startService({ requestLogSize: 0 });
    try {
      await t.request('GET', '/classes/Off');
      const res = await t.request('GET', '/logs', { as: 'master' });
      expect(res.status).toBe(200);
      expect(res.json).toEqual({ results: [] });
    } finally {
      await t.close();
    }
  });
});

const redisUp = await redisAnswers();
if (!redisUp) console.log(`logs: Redis cases skipped, no Redis answers at ${REDIS_URL}`);

describe.skipIf(!redisUp)('the request logs of two instances through Redis', () => {
  let space: ReturnType<typeof testPrefix>;
  let a: TestService;
  let b: TestService;
  let dataDir: string;

  beforeAll(async () => {
    space = testPrefix();
    dataDir = mkdtempSync(path.join(tmpdir(), 'bds-logs-redis-'));
    const options = {
      dataDir,
      redisURL: REDIS_URL,
      redis: { keyPrefix: space.prefix },
      requestLogSize: 4,
      trustProxy: true,
    };
    a = await startService(options);
    b = await startService(options);
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await space?.cleanup();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('a request served by one instance is listed by the other, and the stream is capped', async () => {
    const res = await a.request('GET', '/classes/Across', { headers: { 'X-Request-Id': 'across-1' } });
    expect(res.status).toBe(200);
    // Each instance sends its lines to Redis within LOGS_FLUSH_MS (100 ms).
    await expect
      .poll(async () => {
        const seen = await b.request('GET', '/logs?requestId=across-1', { as: 'master' });
        return (seen.json as { results: Line[] }).results.map((l) => [l.path, l.status]);
      })
      .toEqual([['/classes/Across', 200]]);
    const lines = await b.request('GET', '/logs/across-1', { as: 'master' });
    expect((lines.json as { lines: Line[] }).lines.map((l) => l.kind)).toEqual(['request']);
    for (let i = 0; i < 6; i++) await (i % 2 ? a : b).request('GET', `/classes/Cap${i}`);
    await new Promise((r) => setTimeout(r, 250));
    const all = (await b.request('GET', '/logs?limit=1000', { as: 'master' })).json as { results: Line[] };
    expect(all.results.length).toBeLessThanOrEqual(4);
    expect(await space.admin.xlen(`${space.prefix}logs`)).toBe(4);
  });
});
