import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { realtimeTiming } from '../src/routes/realtime.ts';
import { type BffFetch, findLeaks, startBff } from './helpers/bff.ts';

type Started = Awaited<ReturnType<typeof startBff>>;
let t: Started;
let admin: BffFetch;
let viewer: BffFetch;
const base = '/bff/apps/test-app/realtime';
/** Every SSE body read by these tests (scanned for keys at the end). */
const streamed: Array<{ path: string; text: string }> = [];
const opened: Stream[] = [];

interface SseEvent {
  event: string;
  data: any;
}

interface Stream {
  events: SseEvent[];
  waitFor(pred: (e: SseEvent) => boolean, ms?: number): Promise<SseEvent>;
  /** Resolves when the bff ends the stream. */
  ended: Promise<void>;
  close(): void;
  status: number;
}

async function openStream(f: BffFetch, query: Record<string, string>): Promise<Stream> {
  const path = `${base}/stream?${new URLSearchParams(query)}`;
  const ac = new AbortController();
  const res = await fetch(`${t.url}${path}`, { headers: { Cookie: f.cookie }, signal: ac.signal });
  const events: SseEvent[] = [];
  const waiters = new Set<() => void>();
  const record = { path, text: '' };
  streamed.push(record);
  const ended = (async () => {
    if (!res.body) return;
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    let buf = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        const chunk = dec.decode(value, { stream: true });
        record.text += chunk;
        buf += chunk;
        let i = buf.indexOf('\n\n');
        while (i >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          let event = 'message';
          let data = '';
          for (const line of block.split('\n')) {
            if (line.startsWith('event: ')) event = line.slice(7);
            else if (line.startsWith('data: ')) data += line.slice(6);
          }
          if (data) {
            events.push({ event, data: JSON.parse(data) });
            for (const w of waiters) w();
          }
          i = buf.indexOf('\n\n');
        }
      }
    } catch {
      // aborted
    }
  })();
  const stream: Stream = {
    events,
    status: res.status,
    ended,
    close: () => ac.abort(),
    waitFor(pred, ms = 5_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const hit = events.find(pred);
          if (hit) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(hit);
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no matching event in ${ms} ms; got ${JSON.stringify(events)}`));
        }, ms);
        waiters.add(check);
        check();
      });
    },
  };
  opened.push(stream);
  return stream;
}

async function signUp(username: string): Promise<{ id: string; token: string }> {
  const res = await t.service.request('POST', '/users', { body: { username, password: 'pw secret 1' } });
  expect(res.status).toBe(201);
  return { id: res.json.objectId, token: res.json.sessionToken };
}

const inspectSessions = async (userId: string) => {
  const res = await t.service.request('GET', '/classes/_Session', {
    as: 'master',
    query: { where: { user: { __type: 'Pointer', className: '_User', objectId: userId } } },
  });
  return (res.json.results as Array<{ objectId: string; createdWith?: { action?: string } }>).filter(
    (s) => s.createdWith?.action === 'inspect',
  );
};

async function until(fn: () => Promise<boolean>, ms = 5_000): Promise<void> {
  const stop = Date.now() + ms;
  while (Date.now() < stop) {
    if (await fn()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('condition not met in time');
}

const saved = { ...realtimeTiming };
beforeAll(async () => {
  realtimeTiming.traceMs = 100;
  realtimeTiming.sessionCheckMs = 200;
  t = await startBff();
  admin = await t.login('admin');
  viewer = await t.login('viewer');
  for (const [className, fields] of [
    ['Note', { title: { type: 'String' }, room: { type: 'String' } }],
    ['Secret', { label: { type: 'String' } }],
  ] as const) {
    const res = await t.service.request('POST', `/schemas/${className}`, {
      as: 'master',
      body: { className, fields },
    });
    expect(res.status).toBe(200);
  }
});
afterAll(async () => {
  for (const s of opened) s.close();
  Object.assign(realtimeTiming, saved);
  await t?.close();
});

describe('realtime inspector streams (SSE)', () => {
  it('streams a REST write to a master inspector', async () => {
    const s = await openStream(admin, { className: 'Note', viewpoint: 'master' });
    expect(s.status).toBe(200);
    const ready = await s.waitFor((e) => e.event === 'ready');
    expect(ready.data).toMatchObject({ className: 'Note', viewpoint: 'master' });
    const created = await t.service.request('POST', '/classes/Note', { body: { title: 'hello live' } });
    const ev = await s.waitFor((e) => e.event === 'live');
    expect(ev.data).toMatchObject({
      op: 'create',
      object: { objectId: created.json.objectId, title: 'hello live' },
    });
    await t.service.request('PUT', `/classes/Note/${created.json.objectId}`, { body: { title: 'changed' } });
    const upd = await s.waitFor((e) => e.event === 'live' && e.data.op === 'update');
    expect(upd.data.object.title).toBe('changed');
    expect(upd.data.original.title).toBe('hello live');
    s.close();
  });

  it('applies the where and lets read-only console users watch', async () => {
    const s = await openStream(viewer, {
      className: 'Note',
      viewpoint: 'master',
      where: JSON.stringify({ room: 'a' }),
    });
    expect(s.status).toBe(200);
    await s.waitFor((e) => e.event === 'ready');
    await t.service.request('POST', '/classes/Note', { body: { title: 'other room', room: 'b' } });
    await t.service.request('POST', '/classes/Note', { body: { title: 'my room', room: 'a' } });
    const ev = await s.waitFor((e) => e.event === 'live');
    expect(ev.data.object.title).toBe('my room');
    const filtered = await s.waitFor((e) => e.event === 'filtered');
    expect(filtered.data.reason).toBe('where');
    expect(s.events.filter((e) => e.event === 'live')).toHaveLength(1);
    s.close();
  });

  it('a user viewpoint gets only what the user may read, through a marked inspection session deleted on close', async () => {
    const alice = await signUp('alice');
    const bob = await signUp('bob');
    const s = await openStream(admin, { className: 'Secret', viewpoint: 'user', userId: alice.id });
    const ready = await s.waitFor((e) => e.event === 'ready');
    expect(ready.data).toMatchObject({ viewpoint: 'user', userId: alice.id });
    // The inspection session exists while the stream is open and is marked as such.
    const open = await inspectSessions(alice.id);
    expect(open).toHaveLength(1);
    expect(open[0]!.objectId).toBe(ready.data.inspectionSession);
    expect(open[0]!.createdWith).toMatchObject({ action: 'inspect', authProvider: 'master' });
    // Its token never reaches the browser.
    expect(JSON.stringify(s.events)).not.toMatch(/r:[0-9a-f]{48}/);

    const forBob = await t.service.request('POST', '/classes/Secret', {
      as: 'master',
      body: { label: 'bob only', ACL: { [bob.id]: { read: true, write: true } } },
    });
    const forAlice = await t.service.request('POST', '/classes/Secret', {
      as: 'master',
      body: { label: 'alice only', ACL: { [alice.id]: { read: true } } },
    });
    const got = await s.waitFor((e) => e.event === 'live');
    expect(got.data.object).toMatchObject({ objectId: forAlice.json.objectId, label: 'alice only' });
    const filtered = await s.waitFor((e) => e.event === 'filtered');
    expect(filtered.data).toMatchObject({ objectId: forBob.json.objectId, reason: 'acl', op: 'create' });
    expect(s.events.filter((e) => e.event === 'live').map((e) => e.data.object.label)).toEqual([
      'alice only',
    ]);

    s.close();
    await until(async () => (await inspectSessions(alice.id)).length === 0);
    // The user's own session (from sign-up) is untouched.
    const all = await t.service.request('GET', '/classes/_Session', {
      as: 'master',
      query: { where: { user: { __type: 'Pointer', className: '_User', objectId: alice.id } } },
    });
    expect(all.json.results).toHaveLength(1);
    const audit = await admin.get('/bff/audit?action=realtime.inspect');
    expect(audit.json.results[0]).toMatchObject({ user: 'admin', target: `_User/${alice.id}` });
  });

  it('an anonymous viewpoint sees public rows only', async () => {
    const s = await openStream(admin, { className: 'Secret', viewpoint: 'anonymous' });
    await s.waitFor((e) => e.event === 'ready');
    await t.service.request('POST', '/classes/Secret', {
      as: 'master',
      body: { label: 'private', ACL: {} },
    });
    await t.service.request('POST', '/classes/Secret', { body: { label: 'public' } });
    const got = await s.waitFor((e) => e.event === 'live');
    expect(got.data.object.label).toBe('public');
    expect((await s.waitFor((e) => e.event === 'filtered')).data.reason).toBe('acl');
    s.close();
  });

  it('reports bad input on the stream, and the trace through its own route', async () => {
    const bad = await openStream(admin, { className: 'Note', where: '{nope' });
    expect((await bad.waitFor((e) => e.event === 'fail')).data.error).toMatch(/where is not JSON/);
    await bad.ended;
    const noUser = await openStream(admin, { className: 'Note', viewpoint: 'user', userId: 'zzzzzzzzzz' });
    expect((await noUser.waitFor((e) => e.event === 'fail')).data.code).toBe(101);
    await noUser.ended;
    const trace = await viewer.get(`${base}/trace/Note`);
    expect(trace.status).toBe(200);
    expect(trace.json.results.length).toBeGreaterThan(0);
    expect((await viewer.get(`${base}/trace/no%20class`)).status).toBe(400);
    expect((await t.anonymous().get(`${base}/stream?className=Note`)).status).toBe(401);
  });

  it("answers the service's resume window to any console user of the app, and nothing to anyone else", async () => {
    const service = await t.service.request('GET', '/live/retention', { as: 'master' });
    expect(service.status).toBe(200);
    expect(service.json.count).toBeGreaterThan(0);
    const seen = await viewer.get(`${base}/retention`);
    expect(seen.status).toBe(200);
    expect(seen.json).toEqual(service.json);
    expect(seen.json).toMatchObject({ retentionMs: 300_000, retentionMaxEvents: 10_000 });
    expect(await t.anonymous().get(`${base}/retention`)).toMatchObject({ status: 401 });
    const unknown = await viewer.get('/bff/apps/no-such-app/realtime/retention');
    expect(unknown.status).toBe(404);
    expect(unknown.json).toEqual({ code: 101, error: 'Unknown app: no-such-app.' });
  });

  it('ends the stream when the console session ends, and deletes the inspection session', async () => {
    const carol = await signUp('carol');
    const me = await t.login('admin');
    const s = await openStream(me, { className: 'Note', viewpoint: 'user', userId: carol.id });
    await s.waitFor((e) => e.event === 'ready');
    expect(await inspectSessions(carol.id)).toHaveLength(1);
    expect((await me.post('/bff/logout')).status).toBe(200);
    const fail = await s.waitFor((e) => e.event === 'fail', 5_000);
    expect(fail.data).toMatchObject({ code: 209 });
    await s.ended;
    await until(async () => (await inspectSessions(carol.id)).length === 0);
  });

  it('sends no configured key in any stream', () => {
    const leaks = findLeaks(
      streamed.map((r) => ({
        method: 'GET',
        path: r.path,
        status: 200,
        headers: {},
        setCookies: [],
        text: r.text,
      })),
      t.secrets,
    );
    expect(leaks).toEqual([]);
    expect(streamed.length).toBeGreaterThan(5);
  });
});

describe('closing the bff', () => {
  it('ends open inspector streams and deletes their inspection sessions', async () => {
    const other = await startBff();
    try {
      const owner = await other.login('admin');
      const signUp = await other.service.request('POST', '/users', {
        body: { username: 'carol', password: 'pw secret 1' },
      });
      const userId = signUp.json.objectId as string;
      await other.service.request('POST', '/schemas/Note', {
        as: 'master',
        body: { className: 'Note', fields: { title: { type: 'String' } } },
      });
      const query = new URLSearchParams({ className: 'Note', viewpoint: 'user', userId });
      const res = await fetch(`${other.url}${base}/stream?${query}`, { headers: { Cookie: owner.cookie } });
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let text = '';
      while (!text.includes('event: ready')) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`the stream ended before it was ready: ${text}`);
        text += decoder.decode(value, { stream: true });
      }
      const inspecting = async () => {
        const sessions = await other.service.request('GET', '/classes/_Session', {
          as: 'master',
          query: { where: { user: { __type: 'Pointer', className: '_User', objectId: userId } } },
        });
        return (sessions.json.results as Array<{ createdWith?: { action?: string } }>).filter(
          (s) => s.createdWith?.action === 'inspect',
        ).length;
      };
      expect(await inspecting()).toBe(1);

      // Without ending its streams, close() would wait for the browser to hang up.
      await other.bff.close();
      for (;;) {
        const { done } = await reader.read();
        if (done) break;
      }
      expect(await inspecting()).toBe(0);
    } finally {
      await other.close();
    }
  });
});
