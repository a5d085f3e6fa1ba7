import type { LogLine } from '@bds/client/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logsTiming } from '../src/routes/logs.ts';
import { type BffFetch, KEYS, type StartedBff, startBff } from './helpers/bff.ts';

/**
 * The console's Logs section through the bff: GET /bff/apps/<app>/logs (filters passed on),
 * .../logs/<requestId> (a request's lines) and .../logs/tail (server-sent events). Every console
 * user of the app reads them; the browser never gets a key. Real service, real bff.
 */

let t: StartedBff;
let admin: BffFetch;
let viewer: BffFetch;
const L = '/bff/apps/test-app/logs';

beforeAll(async () => {
  logsTiming.pollMs = 100;
  t = await startBff();
  admin = await t.login('admin');
  viewer = await t.login('viewer');
});
afterAll(async () => {
  await t?.close();
});

/** A request to the service with a request id of our choosing is not possible (no trusted proxy): read its id back. */
async function serviceRequest(path: string): Promise<string> {
  const res = await t.service.request('GET', path);
  return res.headers.get('X-Request-Id')!;
}

describe('the Logs routes', () => {
  it('every console user lists request lines with the filters; no key in the answer', async () => {
    const id = await serviceRequest('/classes/BffLogged/missing');
    for (const user of [admin, viewer]) {
      const res = await user.get(`${L}?${new URLSearchParams({ className: 'BffLogged', status: '404' })}`);
      expect(res.status).toBe(200);
      expect(res.json.results.map((l: LogLine) => [l.requestId, l.path, l.status, l.code])).toEqual([
        [id, '/classes/BffLogged/missing', 404, 101],
      ]);
      expect(res.text).not.toContain(KEYS.masterKey);
    }
  });

  it("a request's lines", async () => {
    const id = await serviceRequest('/classes/BffOne');
    const res = await viewer.get(`${L}/${id}`);
    expect(res.status).toBe(200);
    expect(res.json.requestId).toBe(id);
    expect(res.json.lines.map((l: LogLine) => [l.kind, l.path])).toEqual([['request', '/classes/BffOne']]);
  });

  it("the service's refusal of a bad filter, and the bff's of an unknown one or a bad id", async () => {
    const bad = await admin.get(`${L}?status=abc`);
    expect(bad.status).toBe(400);
    expect(bad.json).toEqual({
      code: 102,
      error: 'Invalid logs filter: status must be a whole number from 100 to 599.',
    });
    const unknown = await admin.get(`${L}?color=red`);
    expect(unknown.status).toBe(400);
    expect(unknown.json).toEqual({ code: 107, error: 'Invalid logs filter: Unrecognized key: "color"' });
    const id = await admin.get(`${L}/${encodeURIComponent('not an id')}`);
    expect(id.status).toBe(400);
    expect(id.json).toEqual({ code: 107, error: 'Invalid request id: must be a request id' });
    const app = await admin.get('/bff/apps/nope/logs');
    expect(app.status).toBe(404);
    expect(app.json).toEqual({ code: 101, error: 'Unknown app: nope.' });
  });

  it('the tail streams each new request line once, oldest first', async () => {
    const ac = new AbortController();
    const res = await fetch(`${t.url}${L}/tail`, { headers: { Cookie: viewer.cookie }, signal: ac.signal });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const reader = res.body!.getReader();
    const dec = new TextDecoder();
    let text = '';
    const lines = (): LogLine[] =>
      text
        .split('\n\n')
        .filter((b) => b.startsWith('event: line\n'))
        .map((b) => JSON.parse(b.slice(b.indexOf('data: ') + 6)) as LogLine);
    const readUntil = async (done: () => boolean) => {
      const deadline = Date.now() + 5_000;
      while (!done() && Date.now() < deadline) {
        const { value } = await reader.read();
        text += dec.decode(value, { stream: true });
      }
    };
    await readUntil(() => text.includes('event: ready'));
    const first = await serviceRequest('/classes/Tailed1');
    const second = await serviceRequest('/classes/Tailed2');
    await readUntil(() => lines().filter((l) => l.path?.startsWith('/classes/Tailed')).length >= 2);
    const third = await serviceRequest('/classes/Tailed3');
    await readUntil(() => lines().some((l) => l.requestId === third));
    await new Promise((r) => setTimeout(r, 300));
    ac.abort();
    const tailed = lines().filter((l) => l.path?.startsWith('/classes/Tailed'));
    expect(tailed.map((l) => l.requestId)).toEqual([first, second, third]);
    expect(text).not.toContain(KEYS.masterKey);
  });
});
