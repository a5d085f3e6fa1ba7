import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  type Client,
  createClient,
  disableRealtime,
  enableRealtime,
  type LiveObject,
  type LogEntry,
  type RealtimeConnection,
  RealtimeError,
  type Subscription,
  type Timers,
} from '@bds/client';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { EVENT_ID_PATTERN, flush, LiveClient, subscribeMarker } from './helpers/live.ts';
import { REDIS_URL, redisAnswers, testPrefix } from './helpers/redis.ts';
import { KEYS, schemaURI, startService, TEST_DATABASE_URL, type TestService } from './helpers/service.ts';

/**
 * Nothing lost at the edges of a subscription (docs/protocol.md#realtime-frames): the `subscribed`
 * frame carries the service's latest eventId, which the client library keeps as the resume point
 * of a subscription that has received no event yet, and `subscription.update(query)` swaps the
 * query without the gap of an unsubscribe and subscribe. On both stores (this file starts the test
 * service), and across two instances sharing events through Redis.
 */

let t: TestService;
let log: LogEntry[];
const clients: Client[] = [];

beforeAll(async () => {
  t = await startService();
  for (const className of ['Room', 'Swap']) {
    const res = await t.request('POST', `/schemas/${className}`, {
      as: 'master',
      body: { className, fields: { room: { type: 'String' }, k: { type: 'String' } } },
    });
    expect(res.status, res.text).toBe(200);
  }
});
afterAll(async () => {
  await t?.close();
});
beforeEach(() => {
  log = [];
  enableRealtime();
});
afterEach(() => {
  for (const c of clients.splice(0)) c.closeRealtime();
  disableRealtime();
});

/** Timers that run only when the test says so (the reconnect happens when the test is ready). */
function manualTimers() {
  const pending: Array<() => void> = [];
  const timers: Timers = {
    setTimeout: (fn) => {
      pending.push(fn);
      return fn;
    },
    clearTimeout: (fn) => {
      const i = pending.indexOf(fn as () => void);
      if (i >= 0) pending.splice(i, 1);
    },
  };
  return { timers, pending };
}

function libraryClient(service: TestService, timers: Timers): Client {
  const c = createClient({
    serverURL: service.url,
    applicationId: KEYS.appId,
    restAPIKey: KEYS.restAPIKey,
    masterKey: null,
    logger: (e) => log.push(e),
    realtime: { timers, random: () => 0 },
  });
  clients.push(c);
  return c;
}

/** Terminates, server-side, the socket of a client's connection (as a network failure would). */
function terminate(service: TestService, conn: RealtimeConnection): void {
  const live = service.service.live as unknown as {
    connections: Set<{ id: number; ws: { terminate(): void } }>;
  };
  const target = [...live.connections].find((c) => c.id === conn.clientId);
  if (!target) throw new Error(`no server connection ${conn.clientId}`);
  target.ws.terminate();
}

/** The objectIds of a subscription's create events, in arrival order. */
function created(sub: Subscription<LiveObject>): string[] {
  const seen: string[] = [];
  sub.on('create', (object) => seen.push(object.objectId));
  return seen;
}

const until = <T>(fn: () => T) => vi.waitFor(fn, { timeout: 10_000, interval: 10 });

async function write(
  service: TestService,
  className: string,
  body: Record<string, unknown>,
): Promise<string> {
  const res = await service.request('POST', `/classes/${className}`, { as: 'master', body });
  if (res.status !== 201) throw new Error(`write failed: ${res.text}`);
  return res.json.objectId;
}

/** The frames the client library sent, of one op. */
const sent = (op: string) =>
  log.filter((e) => e.realtime === 'send' && (e.body as any)?.op === op).map((e) => e.body as any);
const received = (op: string) =>
  log.filter((e) => e.realtime === 'receive' && (e.response as any)?.op === op).map((e) => e.response as any);

describe('the subscribed frame carries the resume point', () => {
  it("is the service's latest eventId, accepted as since: what is written after it is replayed", async () => {
    const c = await LiveClient.connect(t);
    await subscribeMarker(c);
    const first = await c.subscribe(1, { className: 'Room', where: { room: 'frame' } });
    expect(first).toEqual({
      op: 'subscribed',
      clientId: expect.any(Number),
      requestId: 1,
      eventId: expect.stringMatching(EVENT_ID_PATTERN),
    });
    const a = await write(t, 'Room', { room: 'frame' });
    const event = await c.take();
    expect(event).toMatchObject({ op: 'create', requestId: 1, object: { objectId: a } });
    expect(event.eventId > first.eventId).toBe(true);
    // Nothing is waiting in the queue: the latest event is the one just received.
    const second = await c.subscribe(2, { className: 'Room', where: { room: 'quiet' } });
    expect(second.eventId).toBe(event.eventId);
    c.close();

    const b = await write(t, 'Room', { room: 'quiet' });
    const d = await LiveClient.connect(t);
    await subscribeMarker(d);
    d.send({
      op: 'subscribe',
      requestId: 2,
      query: { className: 'Room', where: { room: 'quiet' } },
      since: second.eventId,
    });
    const [frames] = await flush(t, d);
    expect(frames!.map((f) => [f.op, f.object?.objectId])).toEqual([
      ['subscribed', undefined],
      ['create', b],
    ]);
    d.close();
  });

  it('is before the events still waiting in the queue when the subscription became active', async () => {
    const c = await LiveClient.connect(t);
    await subscribeMarker(c);
    // Hold the service's event queue (white-box: the queue is private) so that the subscribe waits
    // in it while rows are written: their fan-outs reach it, and so must a resume from its eventId.
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    (t.service.live as unknown as { enqueue(task: () => Promise<void>): void }).enqueue(() => held);
    c.send({ op: 'subscribe', requestId: 1, query: { className: 'Room', where: { room: 'held' } } });
    // Generous: the subscribe only resolves its caller before it joins the queue.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const ids = [await write(t, 'Room', { room: 'held' }), await write(t, 'Room', { room: 'held' })];
    release();
    const [frames] = await flush(t, c);
    const subscribed = frames![0];
    expect(subscribed).toMatchObject({ op: 'subscribed', requestId: 1 });
    const events = frames!.slice(1);
    expect(events.map((f) => f.object.objectId)).toEqual(ids);
    expect(subscribed.eventId < events[0].eventId).toBe(true);
    c.close();
    // A client that lost the socket before those events arrived gets them from its resume point.
    const d = await LiveClient.connect(t);
    await subscribeMarker(d);
    d.send({
      op: 'subscribe',
      requestId: 1,
      query: { className: 'Room', where: { room: 'held' } },
      since: subscribed.eventId,
    });
    const [replayed] = await flush(t, d);
    expect(replayed!.slice(1).map((f) => [f.op, f.eventId, f.object.objectId])).toEqual(
      events.map((f) => ['create', f.eventId, f.object.objectId]),
    );
    d.close();
  });

  it('on a service that has published no event yet: sequence 0, a resume point like any other', async () => {
    const fresh = await startService({ liveQuery: { classNames: ['Quiet', 'LiveMarker'] } });
    try {
      const c = await LiveClient.connect(fresh);
      const subscribed = await c.subscribe(1, { className: 'Quiet' });
      expect(subscribed.eventId).toMatch(/^[0-9a-z]{9}-000000000000$/);
      c.close();
      const id = await write(fresh, 'Quiet', { n: 1 });
      const d = await LiveClient.connect(fresh);
      d.send({ op: 'subscribe', requestId: 1, query: { className: 'Quiet' }, since: subscribed.eventId });
      expect(await d.take()).toMatchObject({ op: 'subscribed', requestId: 1 });
      expect(await d.take()).toMatchObject({ op: 'create', requestId: 1, object: { objectId: id } });
      d.close();
    } finally {
      await fresh.close();
    }
  });
});

describe('GET /live/retention (master only)', () => {
  it('answers the window: its bounds, how many events it keeps, the oldest and the newest', async () => {
    const small = await startService({ liveQuery: { retentionMaxEvents: 2, classNames: ['Kept'] } });
    try {
      const empty = await small.request('GET', '/live/retention', { as: 'master' });
      expect(empty.status).toBe(200);
      expect(empty.json).toEqual({
        retentionMs: 300_000,
        retentionMaxEvents: 2,
        count: 0,
        oldest: null,
        newest: null,
      });
      const c = await LiveClient.connect(small, { masterKey: KEYS.masterKey });
      await c.subscribe(1, { className: 'Kept' });
      const events = [];
      for (let n = 0; n < 3; n++) {
        const before = Date.now();
        await write(small, 'Kept', { n });
        events.push({ ...(await c.take()), before, after: Date.now() });
      }
      c.close();
      const res = await small.request('GET', '/live/retention', { as: 'master' });
      expect(res.status).toBe(200);
      expect(res.json).toEqual({
        retentionMs: 300_000,
        retentionMaxEvents: 2,
        count: 2,
        oldest: { eventId: events[1]!.eventId, at: expect.any(String) },
        newest: { eventId: events[2]!.eventId, at: expect.any(String) },
      });
      const at = Date.parse(res.json.newest.at);
      expect(at).toBeGreaterThanOrEqual(events[2]!.before);
      expect(at).toBeLessThanOrEqual(events[2]!.after);
      for (const as of ['rest', 'js'] as const) {
        const refused = await small.request('GET', '/live/retention', { as });
        expect(refused.status).toBe(403);
        expect(refused.json).toEqual({ code: 119, error: 'unauthorized: master key is required' });
      }
    } finally {
      await small.close();
    }
  });
});

describe('the client library resumes a subscription that has received no event', () => {
  it('from the eventId of its subscribed frame: a row written while the socket was down arrives once', async () => {
    const clock = manualTimers();
    const conn = libraryClient(t, clock.timers).realtime();
    const sub = conn.subscribe({ className: 'Room', where: { room: 'gap' } });
    const seen = created(sub);
    await sub.opened();
    const resumePoint = received('subscribed')[0].eventId;
    expect(resumePoint).toMatch(EVENT_ID_PATTERN);
    expect(sub.lastEventId).toBe(resumePoint);

    terminate(t, conn);
    await until(() => expect(clock.pending).toHaveLength(1));
    const away = await write(t, 'Room', { room: 'gap' });
    clock.pending.shift()!();
    await until(() => expect(seen).toEqual([away]));
    const after = await write(t, 'Room', { room: 'gap' });
    await until(() => expect(seen).toEqual([away, after]));
    await new Promise((r) => setTimeout(r, 100));
    expect(seen).toEqual([away, after]);
    expect(sent('subscribe').map((f) => f.since)).toEqual([undefined, resumePoint]);
  });
});

describe('subscription.update(query)', () => {
  it('swaps the query with one update frame: the old query holds until the swap, the new one from then on', async () => {
    const conn = libraryClient(t, manualTimers().timers).realtime();
    const sub = conn.subscribe({ className: 'Swap', where: { k: 'a' } });
    const seen = created(sub);
    await sub.opened();
    const a1 = await write(t, 'Swap', { k: 'a' });
    await until(() => expect(seen).toEqual([a1]));

    // Hold the service's event queue (white-box) so that writes land on either side of the swap.
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    (t.service.live as unknown as { enqueue(task: () => Promise<void>): void }).enqueue(() => held);
    const a2 = await write(t, 'Swap', { k: 'a' });
    const updated = sub.update({ className: 'Swap', where: { k: 'b' } });
    expect(sub.query).toEqual({ className: 'Swap', where: { k: 'b' } });
    // Generous: the update only resolves its caller before it joins the queue.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const b1 = await write(t, 'Swap', { k: 'b' });
    const a3 = await write(t, 'Swap', { k: 'a' });
    release();
    await updated;
    const b2 = await write(t, 'Swap', { k: 'b' });
    await until(() => expect(seen).toEqual([a1, a2, b1, b2]));
    await new Promise((r) => setTimeout(r, 100));
    expect(seen).not.toContain(a3);
    expect(sent('update')).toEqual([
      { op: 'update', requestId: sub.requestId, query: { className: 'Swap', where: { k: 'b' } } },
    ]);
    expect(sent('unsubscribe')).toEqual([]);
    expect(sent('subscribe')).toHaveLength(1);
    expect(sub.active).toBe(true);
  });

  it('while the socket is down: the renewal carries the new query and resumes, so a row written meanwhile arrives once', async () => {
    const clock = manualTimers();
    const conn = libraryClient(t, clock.timers).realtime();
    const sub = conn.subscribe({ className: 'Swap', where: { k: 'c' } });
    const seen = created(sub);
    await sub.opened();
    const resumePoint = sub.lastEventId;
    terminate(t, conn);
    await until(() => expect(clock.pending).toHaveLength(1));
    let confirmed = false;
    const updated = sub.update({ className: 'Swap', where: { k: 'd' } }).then(() => {
      confirmed = true;
    });
    const d1 = await write(t, 'Swap', { k: 'd' });
    await write(t, 'Swap', { k: 'c' });
    await new Promise((r) => setTimeout(r, 50));
    expect(confirmed).toBe(false);
    clock.pending.shift()!();
    await updated;
    await until(() => expect(seen).toEqual([d1]));
    const d2 = await write(t, 'Swap', { k: 'd' });
    await until(() => expect(seen).toEqual([d1, d2]));
    expect(sent('update')).toEqual([]);
    expect(sent('subscribe').map((f) => [f.query.where, f.since])).toEqual([
      [{ k: 'c' }, undefined],
      [{ k: 'd' }, resumePoint],
    ]);
  });

  it('a refused update keeps the old query, on the service and in the library', async () => {
    const conn = libraryClient(t, manualTimers().timers).realtime();
    const sub = conn.subscribe({ className: 'Swap', where: { k: 'e' } });
    const seen = created(sub);
    const closes: string[] = [];
    sub.on('close', ({ reason }) => closes.push(reason));
    await sub.opened();
    const refused = await sub.update({ className: 'Swap', where: { k: { $bogus: 1 } } }).catch((e) => e);
    expect(refused).toBeInstanceOf(RealtimeError);
    expect(refused.code).toBe(4);
    expect(refused.message).toBe(received('error')[0].error);
    expect(sub.query).toEqual({ className: 'Swap', where: { k: 'e' } });
    expect(sub.ended).toBe(false);
    const e1 = await write(t, 'Swap', { k: 'e' });
    await until(() => expect(seen).toEqual([e1]));
    expect(closes).toEqual([]);
    // An update of an ended subscription is refused locally.
    await sub.unsubscribe();
    await expect(sub.update({ className: 'Swap' })).rejects.toThrow('The subscription has ended.');
  });
});

const redis = await redisAnswers();
if (!redis) console.log(`live-resume: two-instance tests skipped, no Redis answers at ${REDIS_URL}`);

describe.skipIf(!redis)('two instances sharing events through Redis', () => {
  let a: TestService;
  let b: TestService;
  let space: ReturnType<typeof testPrefix>;
  let shared: string;

  beforeAll(async () => {
    space = testPrefix();
    shared = mkdtempSync(path.join(tmpdir(), 'bds-live-resume-'));
    const options = {
      dataDir: shared,
      redisURL: REDIS_URL,
      redis: { keyPrefix: space.prefix },
      logLevel: 'error',
    };
    a = await startService(options);
    // B opens A's store: the same SQLite file, or A's PostgreSQL schema.
    b = await startService({
      ...options,
      ...(TEST_DATABASE_URL && a.schema ? { databaseURI: schemaURI(TEST_DATABASE_URL, a.schema) } : {}),
    });
    const res = await a.request('POST', '/schemas/Shared', {
      as: 'master',
      body: { className: 'Shared', fields: { room: { type: 'String' } } },
    });
    expect(res.status, res.text).toBe(200);
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await space?.cleanup();
    rmSync(shared, { recursive: true, force: true });
  });

  it('a row written on B while the client reconnects to A arrives once, resumed from the subscribed eventId', async () => {
    const clock = manualTimers();
    const conn = libraryClient(a, clock.timers).realtime();
    const sub = conn.subscribe({ className: 'Shared', where: { room: 'ab' } });
    const seen = created(sub);
    await sub.opened();
    const resumePoint = sub.lastEventId;
    expect(resumePoint).toMatch(EVENT_ID_PATTERN);

    terminate(a, conn);
    await until(() => expect(clock.pending).toHaveLength(1));
    // A hears B's write before the client is back (its own numbering, in its resume window).
    const heard = new Promise<void>((resolve) => {
      const off = a.service.core.events.subscribe((event) => {
        if (event.remote && event.className === 'Shared') {
          off();
          resolve();
        }
      });
    });
    const onB = await write(b, 'Shared', { room: 'ab' });
    await heard;
    clock.pending.shift()!();
    await until(() => expect(seen).toEqual([onB]));
    const later = await write(b, 'Shared', { room: 'ab' });
    await until(() => expect(seen).toEqual([onB, later]));
    await new Promise((r) => setTimeout(r, 100));
    expect(seen).toEqual([onB, later]);
    expect(sent('subscribe').map((f) => f.since)).toEqual([undefined, resumePoint]);
  });
});
