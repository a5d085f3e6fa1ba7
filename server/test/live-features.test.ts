import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import {
  createClass,
  createRow,
  createUser,
  PUBLIC_OPERATIONS,
  pointer,
  type TestUser,
} from './helpers/access-world.ts';
import { EVENT_ID_PATTERN, flush, LiveClient, subscribeMarker } from './helpers/live.ts';
import { KEYS, startService, type TestService } from './helpers/service.ts';

const EVENTS_CLOUD = fileURLToPath(new URL('./fixtures/events-cloud.ts', import.meta.url));

let t: TestService;
let alice: TestUser;
let bob: TestUser;

beforeAll(async () => {
  t = await startService({
    cloud: EVENTS_CLOUD,
    allowClientClassCreation: true,
    liveQuery: { retentionMaxEvents: 50 },
  });
  alice = await createUser(t);
  bob = await createUser(t);
  await createClass(
    t,
    'Author',
    { name: { type: 'String' }, secret: { type: 'String' } },
    {
      ...PUBLIC_OPERATIONS,
      protectedFields: { '*': ['secret'] },
    },
  );
  await createClass(t, 'Book', {
    title: { type: 'String' },
    author: { type: 'Pointer', targetClass: 'Author' },
  });
});
afterAll(async () => {
  await t?.close();
});

async function client(who: TestUser | 'anonymous' | 'master'): Promise<LiveClient> {
  const extra =
    who === 'master' ? { masterKey: KEYS.masterKey } : who === 'anonymous' ? {} : { sessionToken: who.token };
  const c = await LiveClient.connect(t, extra);
  await subscribeMarker(c);
  return c;
}

describe('include', () => {
  it('pointers are expanded per subscriber, each included row checked on its own', async () => {
    const open = await createRow(t, 'Author', { name: 'Open', secret: 's1' });
    const closed = await createRow(t, 'Author', {
      name: 'Closed',
      secret: 's2',
      ACL: { [alice.id]: { read: true } },
    });
    const [a, b] = await Promise.all([client(alice), client(bob)]);
    await a.subscribe(1, { className: 'Book' }, { include: ['author'] });
    await b.subscribe(1, { className: 'Book' }, { include: ['author'] });
    const b1 = await createRow(t, 'Book', { title: 'one', author: pointer('Author', open) });
    const b2 = await createRow(t, 'Book', { title: 'two', author: pointer('Author', closed) });
    const [fa, fb] = await flush(t, a, b);
    expect(fa.map((f) => f.object.author)).toEqual([
      {
        __type: 'Object',
        className: 'Author',
        objectId: open,
        name: 'Open',
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      },
      {
        __type: 'Object',
        className: 'Author',
        objectId: closed,
        name: 'Closed',
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
        ACL: { [alice.id]: { read: true } },
      },
    ]);
    // Bob may not read the closed author: it stays a bare pointer. Nobody sees the protected field.
    expect(fb.map((f) => [f.object.objectId, f.object.author])).toEqual([
      [b1, expect.objectContaining({ __type: 'Object', objectId: open, name: 'Open' })],
      [b2, pointer('Author', closed)],
    ]);
    expect(fb[0].object.author.secret).toBeUndefined();
    a.close();
    b.close();
  });

  it('an update carries the included row in object and original', async () => {
    const author = await createRow(t, 'Author', { name: 'A' });
    const c = await client(bob);
    await c.subscribe(1, { className: 'Book', where: { title: 'upd' } }, { include: ['author'] });
    const id = await createRow(t, 'Book', { title: 'upd', author: pointer('Author', author) });
    await t.request('PUT', `/classes/Book/${id}`, { as: 'master', body: { title: 'upd', n: 1 } });
    const [frames] = await flush(t, c);
    expect(frames.map((f) => f.op)).toEqual(['create', 'update']);
    expect(frames[1].object.author).toMatchObject({ __type: 'Object', name: 'A' });
    expect(frames[1].original.author).toMatchObject({ __type: 'Object', name: 'A' });
    c.close();
  });
});

describe('snapshot', () => {
  it('answers the current matching rows the subscriber may see, then live events', async () => {
    await createClass(
      t,
      'Task',
      { n: { type: 'Number' }, secret: { type: 'String' } },
      { ...PUBLIC_OPERATIONS, protectedFields: { '*': ['secret'] } },
    );
    const r1 = await createRow(t, 'Task', { n: 1, secret: 'x' });
    await createRow(t, 'Task', { n: 2, ACL: { [alice.id]: { read: true } } });
    await createRow(t, 'Task', { n: 100 });
    const c = await client(bob);
    c.send({
      op: 'subscribe',
      requestId: 1,
      query: { className: 'Task', where: { n: { $lt: 10 } } },
      snapshot: true,
    });
    expect(await c.take()).toEqual({
      op: 'subscribed',
      clientId: expect.any(Number),
      requestId: 1,
      eventId: expect.stringMatching(EVENT_ID_PATTERN),
    });
    const snap = await c.take();
    expect(snap).toEqual({
      op: 'snapshot',
      clientId: expect.any(Number),
      requestId: 1,
      results: [
        {
          className: 'Task',
          objectId: r1,
          n: 1,
          createdAt: expect.any(String),
          updatedAt: expect.any(String),
        },
      ],
    });
    const r4 = await createRow(t, 'Task', { n: 3 });
    expect(await c.take()).toMatchObject({ op: 'create', object: { objectId: r4 } });
    c.close();
  });
});

describe('resume with since', () => {
  it('replays in order the events after the id that this subscription would have received', async () => {
    const c = await client(bob);
    await c.subscribe(1, { className: 'Log' });
    const first = await t.request('POST', '/classes/Log', { body: { n: 1 } });
    const seen = await c.take();
    c.close();
    // While away: one public row, one private to Alice, one update.
    const r2 = await createRow(t, 'Log', { n: 2 });
    await createRow(t, 'Log', { n: 3, ACL: { [alice.id]: { read: true } } });
    await t.request('PUT', `/classes/Log/${first.json.objectId}`, { as: 'master', body: { n: 11 } });
    const d = await client(bob);
    d.send({ op: 'subscribe', requestId: 1, query: { className: 'Log' }, since: seen.eventId });
    expect((await d.take()).op).toBe('subscribed');
    const replayed = [await d.take(), await d.take()];
    expect(replayed.map((f) => [f.op, f.object.objectId])).toEqual([
      ['create', r2],
      ['update', first.json.objectId],
    ]);
    expect(replayed[0].eventId > seen.eventId).toBe(true);
    expect(replayed[1].eventId > replayed[0].eventId).toBe(true);
    const live = await createRow(t, 'Log', { n: 4 });
    expect(await d.take()).toMatchObject({ op: 'create', object: { objectId: live } });
    d.close();
  });

  it('an event published while the resuming subscribe waits in the queue is sent once, live', async () => {
    const c = await client(bob);
    await c.subscribe(1, { className: 'Log' });
    await createRow(t, 'Log', { n: 0 });
    const since = (await c.take()).eventId;
    c.close();
    const d = await client(bob);
    // Hold the service's event queue so that the subscribe waits in it while rows are written
    // (white-box: the queue is private; this is the window the replay must not double).
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    (t.service.live as unknown as { enqueue(task: () => Promise<void>): void }).enqueue(() => held);
    d.send({ op: 'subscribe', requestId: 1, query: { className: 'Log' }, since });
    // Generous: the subscribe only resolves its caller before it joins the queue.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await createRow(t, 'Log', { n: 100 + i }));
    release();
    const [frames] = await flush(t, d);
    const events = frames!.filter((f) => f.requestId === 1 && f.op === 'create');
    expect(events.map((f) => f.object.objectId)).toEqual(ids);
    d.close();
  });

  it('an id older than the retention window (or not an id of this service): 5, reconnect false', async () => {
    const c = await client(bob);
    await c.subscribe(1, { className: 'Log' });
    await createRow(t, 'Log', { n: 1 });
    const old = (await c.take()).eventId;
    // retentionMaxEvents is 50: push the id out of the window.
    for (let i = 0; i < 60; i++) await createRow(t, 'Log', { n: i });
    const d = await client(bob);
    d.send({ op: 'subscribe', requestId: 2, query: { className: 'Log' }, since: old });
    expect((await d.take()).op).toBe('subscribed');
    expect(await d.take()).toEqual({
      op: 'error',
      code: 5,
      error: `The events after ${old} are no longer kept (resume window exceeded); subscribe again with a snapshot.`,
      reconnect: false,
      requestId: 2,
    });
    d.send({ op: 'subscribe', requestId: 3, query: { className: 'Log' }, since: 'zzz' });
    expect((await d.take()).op).toBe('subscribed');
    expect(await d.take()).toMatchObject({ op: 'error', code: 5, reconnect: false, requestId: 3 });
    // The ended subscription is gone: its id may be used again.
    expect((await d.subscribe(2, { className: 'Log' })).op).toBe('subscribed');
    c.close();
    d.close();
  });
});

describe('events from every write path', () => {
  it('batch, sign-up and login (users and sessions, seen by master), and cloud code', async () => {
    const m = await client('master');
    await m.subscribe('notes', { className: 'Note' });
    await m.subscribe('users', { className: '_User' });
    await m.subscribe('sessions', { className: '_Session' });
    const batch = await t.request('POST', '/batch', {
      body: {
        requests: [
          { method: 'POST', path: '/api/classes/Note', body: { via: 'batch', n: 1 } },
          { method: 'POST', path: '/api/classes/Note', body: { via: 'batch', n: 2 } },
        ],
      },
    });
    expect(batch.status).toBe(200);
    const signup = await t.request('POST', '/users', {
      body: { username: 'live-signup', password: 'pw-123456' },
    });
    const fn = await t.request('POST', '/functions/createNote', { body: { via: 'cloud' } });
    expect(fn.status).toBe(200);
    const [frames] = await flush(t, m);
    const summary = frames.map((f) => [
      f.requestId,
      f.op,
      f.object.via ?? f.object.username ?? f.object.className,
    ]);
    expect(summary).toEqual([
      ['notes', 'create', 'batch'],
      ['notes', 'create', 'batch'],
      ['users', 'create', 'live-signup'],
      ['sessions', 'create', '_Session'],
      ['notes', 'create', 'cloud'],
    ]);
    expect(frames[2].object.password).toBeUndefined();
    expect(signup.status).toBe(201);
    m.close();
  });
});

describe('delivery trace (master only)', () => {
  it('lists for the last events which subscriptions received each and why the others did not', async () => {
    await createClass(t, 'Traced', { room: { type: 'String' } });
    const [a, b, anon] = await Promise.all([client(alice), client(bob), client('anonymous')]);
    await a.subscribe(1, { className: 'Traced', where: { room: 'r1' } });
    await b.subscribe(1, { className: 'Traced', where: { room: 'r2' } });
    await anon.subscribe(1, { className: 'Traced' });
    const id = await createRow(t, 'Traced', {
      room: 'r1',
      ACL: { [alice.id]: { read: true }, [bob.id]: { read: true } },
    });
    await flush(t, a, b, anon);
    const denied = await t.request('GET', '/live/trace/Traced');
    expect(denied.status).toBe(403);
    expect(denied.json).toEqual({ code: 119, error: 'unauthorized: master key is required' });
    const res = await t.request('GET', '/live/trace/Traced', { as: 'master' });
    expect(res.status).toBe(200);
    const [entry] = res.json.results;
    expect(entry).toMatchObject({
      op: 'create',
      objectId: id,
      subscriptions: 3,
      delivered: 1,
      filtered: { where: 1, acl: 1, clp: 0, kind: 0, session: 0, cloud: 0 },
      omitted: 0,
    });
    const byUser = Object.fromEntries(
      entry.deliveries.map((d: any) => [d.userId ?? 'anonymous', d.delivered ?? `filtered:${d.filteredBy}`]),
    );
    expect(byUser).toEqual({ [alice.id]: 'create', [bob.id]: 'filtered:where', anonymous: 'filtered:acl' });
    a.close();
    b.close();
    anon.close();
  });
});

describe('connection life cycle', () => {
  it('close() of the service sends every realtime client a close frame (1001)', async () => {
    const s = await startService({});
    const c = await LiveClient.connect(s, {});
    await c.subscribe(1, { className: 'Any' });
    await s.close();
    expect(await c.waitClosed()).toEqual({ code: 1001, reason: 'The service is shutting down.' });
  });

  it('an idle connection (no subscription, no frame) is closed; a client that answers no ping is dropped', async () => {
    const s = await startService({ liveQuery: { idleTimeoutMs: 200, pingIntervalMs: 250 } });
    try {
      const idle = await LiveClient.connect(s, {});
      expect((await idle.waitClosed()).code).toBe(1000);
      const mute = new WebSocket(`ws://127.0.0.1:${s.port}/live`, { autoPong: false });
      const closed = new Promise<void>((resolve) => mute.on('close', () => resolve()));
      await new Promise((resolve) => mute.once('open', resolve));
      mute.send(JSON.stringify({ op: 'connect', applicationId: KEYS.appId, restAPIKey: KEYS.restAPIKey }));
      mute.send(JSON.stringify({ op: 'subscribe', requestId: 1, query: { className: 'Any' } }));
      await closed;
      const alive = await LiveClient.connect(s, {});
      expect((await alive.subscribe(1, { className: 'Any' })).op).toBe('subscribed');
      alive.close();
    } finally {
      await s.close();
    }
  });

  it('another path is not upgraded; liveQuery.path moves the endpoint', async () => {
    const s = await startService({ liveQuery: { path: '/realtime' } });
    try {
      await expect(LiveClient.open(s, '/live')).rejects.toThrow(/404/);
      const c = await LiveClient.open(s, '/realtime');
      c.send({ op: 'connect', applicationId: KEYS.appId, restAPIKey: KEYS.restAPIKey });
      expect((await c.take()).op).toBe('connected');
      c.close();
    } finally {
      await s.close();
    }
  });

  it('/serverInfo says whether realtime is on: off when classNames is empty', async () => {
    const on = await t.request('GET', '/serverInfo', { as: 'master' });
    expect(on.json.features.liveQuery).toBe(true);
    const s = await startService({ liveQuery: { classNames: [] } });
    try {
      const off = await s.request('GET', '/serverInfo', { as: 'master' });
      expect(off.status).toBe(200);
      expect(off.json.features.liveQuery).toBe(false);
    } finally {
      await s.close();
    }
  });

  it('classNames limits the classes open to subscriptions', async () => {
    const s = await startService({ liveQuery: { classNames: ['Open'] } });
    try {
      const c = await LiveClient.connect(s, {});
      expect((await c.subscribe(1, { className: 'Open' })).op).toBe('subscribed');
      expect(await c.subscribe(2, { className: 'Closed' })).toEqual({
        op: 'error',
        code: 119,
        error: 'Class Closed is not open to realtime subscriptions.',
        reconnect: false,
        requestId: 2,
      });
      c.close();
    } finally {
      await s.close();
    }
  });
});
