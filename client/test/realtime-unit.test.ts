import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  AuthenticationError,
  backoffDelay,
  type ClientOptions,
  createClient,
  DEFAULT_BACKOFF,
  disableRealtime,
  enableRealtime,
  FILTERED,
  type LogEntry,
  REALTIME_WARNINGS,
  RealtimeError,
  resetRealtimeWarnings,
  setClientMode,
  type Timers,
  type WebSocketLike,
  withSession,
} from '../src/index.node.ts';

/** A scripted WebSocket: the test opens it, feeds frames and drops it. */
class FakeSocket implements WebSocketLike {
  static instances: FakeSocket[] = [];
  readyState = 0;
  readonly sent: any[] = [];
  onopen: ((event: unknown) => void) | null = null;
  onmessage: ((event: { data: unknown }) => void) | null = null;
  onclose: ((event: { code: number; reason: string }) => void) | null = null;
  onerror: ((event: unknown) => void) | null = null;
  closedWith: number | undefined;

  constructor(readonly url: string) {
    FakeSocket.instances.push(this);
  }

  send(data: string): void {
    this.sent.push(JSON.parse(data));
  }

  close(code = 1000, reason = ''): void {
    if (this.readyState === 3) return;
    this.closedWith = code;
    this.readyState = 3;
    queueMicrotask(() => this.onclose?.({ code, reason }));
  }

  /** The socket opens, and (by default) the service accepts the connect frame. */
  open(accept = true): void {
    this.readyState = 1;
    this.onopen?.({});
    if (accept) this.receive({ op: 'connected', clientId: FakeSocket.instances.indexOf(this) + 1 });
  }

  receive(frame: unknown): void {
    this.onmessage?.({ data: JSON.stringify(frame) });
  }

  /** The server side goes away. */
  drop(code = 1006): void {
    this.readyState = 3;
    this.onclose?.({ code, reason: '' });
  }

  ofOp(op: string): any[] {
    return this.sent.filter((f) => f.op === op);
  }
}

/** Timers that only run when the test says so. */
function manualTimers() {
  const pending: Array<{ fn: () => void; ms: number }> = [];
  const timers: Timers = {
    setTimeout: (fn, ms) => {
      const t = { fn, ms };
      pending.push(t);
      return t;
    },
    clearTimeout: (t) => {
      const i = pending.indexOf(t as never);
      if (i >= 0) pending.splice(i, 1);
    },
  };
  return {
    timers,
    pending,
    /** Runs the next scheduled timer and answers its delay. */
    runNext(): number {
      const t = pending.shift();
      if (!t) throw new Error('no timer scheduled');
      t.fn();
      return t.ms;
    },
  };
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

async function latestSocket(count: number): Promise<FakeSocket> {
  await vi.waitFor(() => expect(FakeSocket.instances.length).toBe(count));
  return FakeSocket.instances[count - 1]!;
}

let clock: ReturnType<typeof manualTimers>;
let log: LogEntry[];
const fetchSpy = vi.fn(async () => {
  throw new Error('no request expected');
});

function client(extra: Partial<ClientOptions> = {}) {
  return createClient({
    serverURL: 'http://127.0.0.1:1/api',
    applicationId: 'app',
    restAPIKey: 'rest-key',
    fetch: fetchSpy as unknown as typeof fetch,
    logger: (e) => log.push(e),
    realtime: { WebSocket: FakeSocket, timers: clock.timers, random: () => 0, probe: false },
    ...extra,
  });
}

beforeEach(() => {
  FakeSocket.instances = [];
  clock = manualTimers();
  log = [];
  fetchSpy.mockClear();
  resetRealtimeWarnings();
  enableRealtime();
});

afterEach(() => {
  setClientMode(false);
  disableRealtime();
  vi.restoreAllMocks();
});

describe('the enableRealtime gate', () => {
  it('refuses locally and sends nothing before enableRealtime()', async () => {
    disableRealtime();
    const c = client({ masterKey: 'mk' });
    expect(() => c.subscribe({ className: 'Note' })).toThrow(RealtimeError);
    expect(() => c.subscribe({ className: 'Note' })).toThrow(/enableRealtime\(\)/);
    expect(() => c.realtime({ useMasterKey: true })).toThrow(RealtimeError);
    await tick();
    expect(FakeSocket.instances).toHaveLength(0);
    expect(fetchSpy).not.toHaveBeenCalled();
    expect(log).toHaveLength(0);
    enableRealtime();
    c.subscribe({ className: 'Note' });
    await latestSocket(1);
  });
});

describe('backoff', () => {
  it('grows exponentially up to the cap, minus at most the jitter share', () => {
    const plain = Array.from({ length: 9 }, (_, i) => backoffDelay(i, DEFAULT_BACKOFF, () => 0));
    expect(plain).toEqual([500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
    const fullJitter = Array.from({ length: 3 }, (_, i) => backoffDelay(i, DEFAULT_BACKOFF, () => 1));
    expect(fullJitter).toEqual([250, 500, 1000]);
    const custom = { initialMs: 100, maxMs: 1000, factor: 3, jitter: 0, maxAttempts: 5 };
    expect([0, 1, 2, 3].map((i) => backoffDelay(i, custom, () => 0.9))).toEqual([100, 300, 900, 1000]);
  });

  it('schedules reconnects on that schedule and starts over once connected', async () => {
    const c = client();
    const conn = c.realtime();
    const closes: any[] = [];
    conn.on('close', (info) => closes.push(info));
    conn.subscribe({ className: 'Note' });
    (await latestSocket(1)).drop();
    expect(clock.pending.map((t) => t.ms)).toEqual([500]);
    expect(clock.runNext()).toBe(500);
    (await latestSocket(2)).drop();
    expect(clock.runNext()).toBe(1000);
    (await latestSocket(3)).drop();
    expect(clock.runNext()).toBe(2000);
    const s4 = await latestSocket(4);
    s4.open();
    expect(conn.status).toBe('open');
    s4.drop();
    expect(clock.runNext()).toBe(500);
    expect(closes.map((c) => c.reconnectInMs)).toEqual([500, 1000, 2000, 500]);
  });

  it('gives up after maxAttempts with an error on the subscriptions', async () => {
    const c = client({
      realtime: {
        WebSocket: FakeSocket,
        timers: clock.timers,
        random: () => 0,
        probe: false,
        reconnect: { maxAttempts: 2, initialMs: 10 },
      },
    });
    const sub = c.subscribe({ className: 'Note' });
    const errors: RealtimeError[] = [];
    const closes: string[] = [];
    sub.on('error', (e) => errors.push(e)).on('close', (i) => closes.push(i.reason));
    (await latestSocket(1)).drop();
    clock.runNext();
    (await latestSocket(2)).drop();
    clock.runNext();
    (await latestSocket(3)).drop();
    expect(clock.pending).toHaveLength(0);
    expect(errors[0]?.message).toMatch(/gave up after 2 attempts/);
    expect(closes).toEqual(['connection-closed']);
    expect(sub.ended).toBe(true);
  });
});

describe('authority', () => {
  it('a configured master key alone does not elevate: the scoped connection sends none', async () => {
    const c = client({ masterKey: 'mk' });
    c.subscribe({ className: 'Note' });
    const s = await latestSocket(1);
    s.open();
    expect(s.sent[0]).toEqual({ op: 'connect', applicationId: 'app', restAPIKey: 'rest-key' });
    expect(s.ofOp('subscribe')[0]).toEqual({
      op: 'subscribe',
      requestId: 1,
      query: { className: 'Note', where: {} },
    });
  });

  it('master only on a connection opened with useMasterKey, warned once', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const c = client({ masterKey: 'mk' });
    const admin = c.realtime({ useMasterKey: true });
    expect(admin).not.toBe(c.realtime());
    expect(admin.master).toBe(true);
    admin.subscribe({ className: 'Note' });
    const s = await latestSocket(1);
    expect(warn).not.toHaveBeenCalled(); // at connect, not before
    s.open();
    expect(s.sent[0]).toMatchObject({ op: 'connect', masterKey: 'mk' });
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]![0])).toContain(REALTIME_WARNINGS.masterConnection);
    // A reconnect and a second admin connection do not warn again.
    s.drop();
    clock.runNext();
    (await latestSocket(2)).open();
    const other = client({ masterKey: 'mk' }).realtime({ useMasterKey: true });
    other.subscribe({ className: 'Note' });
    (await latestSocket(3)).open();
    expect(warn).toHaveBeenCalledTimes(1);
  });

  it('refuses an admin connection without a master key or in client mode', async () => {
    expect(() => client().realtime({ useMasterKey: true })).toThrow(AuthenticationError);
    const c = client({ masterKey: 'mk' });
    setClientMode(true);
    expect(() => c.realtime({ useMasterKey: true })).toThrow(AuthenticationError);
    setClientMode(false);
    // Client mode turned on after the connection was made: the reconnect sends no master key.
    vi.spyOn(console, 'warn').mockImplementation(() => {});
    const admin = c.realtime({ useMasterKey: true });
    const sub = admin.subscribe({ className: 'Note' });
    const errors: RealtimeError[] = [];
    sub.on('error', (e) => errors.push(e));
    (await latestSocket(1)).open();
    FakeSocket.instances[0]!.drop();
    setClientMode(true);
    clock.runNext();
    const s2 = await latestSocket(2);
    s2.open(false);
    expect(s2.sent.filter((f) => 'masterKey' in f)).toEqual([]);
    expect(errors[0]?.message).toMatch(/cannot send a master key/);
    expect(admin.status).toBe('closed');
  });

  it('per-subscription master is not offered: a warning once, and nothing elevated', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const c = client({ masterKey: 'mk' });
    c.subscribe({ className: 'Note' }, { useMasterKey: true });
    c.subscribe({ className: 'Note' }, { useMasterKey: true });
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]![0])).toContain(REALTIME_WARNINGS.perSubscriptionMaster);
    const s = await latestSocket(1);
    s.open();
    expect(JSON.stringify(s.sent)).not.toContain('mk');
  });

  it('resolves each subscription session: explicit, ambient, bound, blank means anonymous', async () => {
    const c = client({ sessionToken: 'r:bound' });
    const conn = c.realtime();
    conn.subscribe({ className: 'A' }, { sessionToken: 'r:explicit' });
    withSession('r:ambient', () => conn.subscribe({ className: 'B' }));
    conn.subscribe({ className: 'C' });
    conn.subscribe({ className: 'D' }, { sessionToken: '' });
    const s = await latestSocket(1);
    s.open();
    expect(s.ofOp('subscribe').map((f) => f.sessionToken)).toEqual([
      'r:explicit',
      'r:ambient',
      'r:bound',
      undefined,
    ]);
  });

  it('logs frames through scrub()', async () => {
    const c = client({ masterKey: 'mk' });
    vi.spyOn(console, 'warn').mockImplementation(() => {});
    c.realtime({ useMasterKey: true }).subscribe({ className: 'Note' });
    c.subscribe({ className: 'Note', where: { room: 'a' } }, { sessionToken: 'r:secret' });
    await latestSocket(2);
    for (const socket of FakeSocket.instances) socket.open();
    const text = JSON.stringify(log);
    for (const secret of ['mk', 'rest-key', 'r:secret']) expect(text).not.toContain(secret);
    const connects = log.filter((e) => (e.body as any)?.op === 'connect');
    expect(connects).toHaveLength(2);
    expect(connects.map((e) => (e.body as any).restAPIKey)).toEqual([FILTERED, FILTERED]);
    expect(connects.some((e) => (e.body as any).masterKey === FILTERED)).toBe(true);
    const sub = log.find((e) => (e.body as any)?.op === 'subscribe' && (e.body as any).sessionToken);
    expect(sub).toMatchObject({ method: 'WS', path: '/live', realtime: 'send' });
    expect((sub!.body as any).query.where).toEqual({ room: 'a' }); // where clauses are logged as they are
  });
});

describe('resume and resync', () => {
  const obj = (id: string) => ({ className: 'Note', objectId: id });

  it('resubscribes from the last event seen and drops duplicates', async () => {
    const c = client();
    const sub = c.subscribe({ className: 'Note' }, { sessionToken: 'r:t', include: 'owner, room' });
    const seen: string[] = [];
    const opens: boolean[] = [];
    sub.on('create', (o, e) => seen.push(`${e.eventId}:${o.objectId}`));
    sub.on('open', (i) => opens.push(i.resumed));
    const s1 = await latestSocket(1);
    s1.open();
    s1.receive({ op: 'subscribed', requestId: 1 });
    s1.receive({ op: 'create', requestId: 1, eventId: 'b-1', object: obj('a') });
    s1.receive({ op: 'create', requestId: 1, eventId: 'b-2', object: obj('b') });
    s1.drop();
    clock.runNext();
    const s2 = await latestSocket(2);
    s2.open();
    expect(s2.ofOp('subscribe')[0]).toEqual({
      op: 'subscribe',
      requestId: 1,
      query: { className: 'Note', where: {} },
      sessionToken: 'r:t',
      include: ['owner', 'room'],
      since: 'b-2',
    });
    s2.receive({ op: 'subscribed', requestId: 1 });
    s2.receive({ op: 'create', requestId: 1, eventId: 'b-3', object: obj('c') });
    s2.receive({ op: 'create', requestId: 1, eventId: 'b-3', object: obj('c') });
    s2.receive({ op: 'create', requestId: 1, eventId: 'b-2', object: obj('b') });
    s2.receive({ op: 'create', requestId: 1, eventId: 'b-4', object: obj('d') });
    expect(seen).toEqual(['b-1:a', 'b-2:b', 'b-3:c', 'b-4:d']);
    expect(opens).toEqual([false, true]);
    expect(sub.lastEventId).toBe('b-4');
  });

  it('the eventId of a subscribed frame is the resume point of a subscription that has seen no event', async () => {
    const c = client();
    const sub = c.subscribe({ className: 'Note' });
    const s1 = await latestSocket(1);
    s1.open();
    s1.receive({ op: 'subscribed', requestId: 1, eventId: 'b-5' });
    expect(sub.lastEventId).toBe('b-5');
    s1.drop();
    clock.runNext();
    const s2 = await latestSocket(2);
    s2.open();
    expect(s2.ofOp('subscribe')[0]).toEqual({
      op: 'subscribe',
      requestId: 1,
      query: { className: 'Note', where: {} },
      since: 'b-5',
    });
    // A resumed subscription keeps its own point (the replay moves it on), not the service's latest.
    s2.receive({ op: 'subscribed', requestId: 1, eventId: 'b-9' });
    expect(sub.lastEventId).toBe('b-5');
    s2.receive({ op: 'create', requestId: 1, eventId: 'b-7', object: obj('r') });
    expect(sub.lastEventId).toBe('b-7');
    s2.drop();
    clock.runNext();
    const s3 = await latestSocket(3);
    s3.open();
    expect(s3.ofOp('subscribe')[0].since).toBe('b-7');
  });

  it('update: one update frame with the session and include, answered without a second open', async () => {
    const c = client();
    const sub = c.subscribe(
      { className: 'Note', where: { a: 1 } },
      { sessionToken: 'r:t', include: ['owner'] },
    );
    const opens: boolean[] = [];
    sub.on('open', (i) => opens.push(i.resumed));
    const s = await latestSocket(1);
    s.open();
    s.receive({ op: 'subscribed', requestId: 1, eventId: 'b-1' });
    s.receive({ op: 'create', requestId: 1, eventId: 'b-2', object: obj('x') });
    let done = false;
    const p = sub.update({ className: 'Note', where: { a: 2 }, keys: ['a'] }).then(() => {
      done = true;
    });
    expect(s.ofOp('update')).toEqual([
      {
        op: 'update',
        requestId: 1,
        query: { className: 'Note', where: { a: 2 }, keys: ['a'] },
        sessionToken: 'r:t',
        include: ['owner'],
      },
    ]);
    expect(s.ofOp('unsubscribe')).toEqual([]);
    expect(sub.query).toEqual({ className: 'Note', where: { a: 2 }, keys: ['a'] });
    await tick();
    expect(done).toBe(false);
    s.receive({ op: 'subscribed', requestId: 1, eventId: 'b-4' });
    await p;
    expect(opens).toEqual([false]);
    // The new query's resume point: the service's latest event when it became active.
    expect(sub.lastEventId).toBe('b-4');
    expect(() => sub.update({ className: '' })).toThrow('update needs a query with a className.');
  });

  it('update while the socket is down: the renewal carries the new query and its since; answered by its subscribed', async () => {
    const c = client();
    const sub = c.subscribe({ className: 'Note', where: { a: 1 } });
    const s1 = await latestSocket(1);
    s1.open();
    s1.receive({ op: 'subscribed', requestId: 1, eventId: 'b-3' });
    s1.drop();
    let done = false;
    const p = sub.update({ className: 'Note', where: { a: 2 } }).then(() => {
      done = true;
    });
    clock.runNext();
    const s2 = await latestSocket(2);
    s2.open();
    expect(s2.ofOp('update')).toEqual([]);
    expect(s2.ofOp('subscribe')).toEqual([
      { op: 'subscribe', requestId: 1, query: { className: 'Note', where: { a: 2 } }, since: 'b-3' },
    ]);
    await tick();
    expect(done).toBe(false);
    s2.receive({ op: 'subscribed', requestId: 1, eventId: 'b-8' });
    await p;
    expect(sub.lastEventId).toBe('b-3');
  });

  it('a refused update rejects and keeps the old query; a code 5 meanwhile is still the resync', async () => {
    const c = client();
    const sub = c.subscribe({ className: 'Note', where: { a: 1 } });
    const closes: string[] = [];
    sub.on('close', (i) => closes.push(i.reason));
    const s1 = await latestSocket(1);
    s1.open();
    s1.receive({ op: 'subscribed', requestId: 1, eventId: 'b-1' });
    const refused = sub.update({ className: 'Note', where: { a: { $bad: 1 } } });
    s1.receive({ op: 'error', requestId: 1, code: 4, error: 'Invalid where', reconnect: false });
    await expect(refused).rejects.toMatchObject({ code: 4, message: 'Invalid where' });
    expect(sub.query).toEqual({ className: 'Note', where: { a: 1 } });
    expect(sub.ended).toBe(false);
    expect(closes).toEqual([]);

    // Resuming, then an update before the replay's code 5: the 5 resyncs (with the new query), the
    // service answers the update 2 (the subscription it named had ended), the resync's subscribed
    // answers the update.
    s1.drop();
    clock.runNext();
    const s2 = await latestSocket(2);
    s2.open();
    const resync: number[] = [];
    sub.on('resync', (e) => resync.push(e.code!));
    let done = false;
    const pending = sub.update({ className: 'Note', where: { a: 3 } }).then(() => {
      done = true;
    });
    s2.receive({ op: 'subscribed', requestId: 1, eventId: 'b-9' });
    s2.receive({ op: 'error', requestId: 1, code: 5, error: 'resume window exceeded', reconnect: false });
    expect(resync).toEqual([5]);
    expect(s2.ofOp('subscribe').at(-1)).toMatchObject({ query: { where: { a: 3 } }, snapshot: true });
    s2.receive({ op: 'error', requestId: 1, code: 2, error: 'Unknown requestId 1.', reconnect: false });
    await tick();
    expect(done).toBe(false);
    s2.receive({ op: 'subscribed', requestId: 1, eventId: 'b-9' });
    await pending;
    expect(sub.query).toEqual({ className: 'Note', where: { a: 3 } });
    expect(sub.ended).toBe(false);
    // Ending the subscription refuses an update still waiting.
    const late = sub.update({ className: 'Note' });
    const gone = sub.unsubscribe();
    await expect(late).rejects.toThrow('The subscription has ended.');
    s2.receive({ op: 'unsubscribed', requestId: 1 });
    await gone;
    expect(closes).toEqual(['unsubscribed']);
  });

  it('code 5: tells the app and resubscribes with a snapshot', async () => {
    const c = client();
    const sub = c.subscribe({ className: 'Note' });
    const order: string[] = [];
    sub.on('resync', (e) => order.push(`resync:${e.code}`));
    sub.on('snapshot', (rows) => order.push(`snapshot:${rows.length}`));
    sub.on('create', (o) => order.push(`create:${o.objectId}`));
    const s1 = await latestSocket(1);
    s1.open();
    s1.receive({ op: 'subscribed', requestId: 1 });
    s1.receive({ op: 'create', requestId: 1, eventId: 'b-7', object: obj('a') });
    s1.drop();
    clock.runNext();
    const s2 = await latestSocket(2);
    s2.open();
    expect(s2.ofOp('subscribe')[0].since).toBe('b-7');
    s2.receive({ op: 'subscribed', requestId: 1 });
    s2.receive({ op: 'error', requestId: 1, code: 5, error: 'resume window exceeded', reconnect: false });
    const again = s2.ofOp('subscribe')[1];
    expect(again).toMatchObject({ requestId: 1, snapshot: true });
    expect(again.since).toBeUndefined();
    s2.receive({ op: 'subscribed', requestId: 1 });
    s2.receive({ op: 'snapshot', requestId: 1, results: [obj('a'), obj('x')] });
    s2.receive({ op: 'create', requestId: 1, eventId: 'b-9', object: obj('y') });
    expect(order).toEqual(['create:a', 'resync:5', 'snapshot:2', 'create:y']);
    expect(sub.ended).toBe(false);
  });

  it('an error frame that ends a subscription closes it and it is not renewed', async () => {
    const c = client();
    const sub = c.subscribe({ className: 'Note' }, { sessionToken: 'r:t' });
    const keep = c.subscribe({ className: 'Other' });
    const events: string[] = [];
    sub.on('error', (e) => events.push(`error:${e.code}`)).on('close', (i) => events.push(i.reason));
    const s1 = await latestSocket(1);
    s1.open();
    s1.receive({ op: 'error', requestId: 1, code: 209, error: 'session ended', reconnect: false });
    expect(events).toEqual(['error:209', 'error']);
    s1.drop();
    clock.runNext();
    const s2 = await latestSocket(2);
    s2.open();
    expect(s2.ofOp('subscribe').map((f) => f.requestId)).toEqual([keep.requestId]);
  });

  it('a refused connect ends everything without retrying', async () => {
    const c = client();
    const sub = c.subscribe({ className: 'Note' });
    const errors: RealtimeError[] = [];
    sub.on('error', (e) => errors.push(e));
    const s = await latestSocket(1);
    s.open(false);
    s.receive({ op: 'error', code: 119, error: 'unauthorized', reconnect: false });
    s.drop(1008);
    expect(errors.map((e) => e.code)).toEqual([119]);
    expect(sub.ended).toBe(true);
    expect(clock.pending).toHaveLength(0);
    expect(() => c.realtime().subscribe({ className: 'Note' })).not.toThrow(); // a new shared connection
  });

  it('unsubscribe sends the frame and answers on the confirmation', async () => {
    const c = client();
    const sub = c.subscribe({ className: 'Note' });
    const s = await latestSocket(1);
    s.open();
    let done = false;
    const p = sub.unsubscribe().then(() => {
      done = true;
    });
    expect(s.ofOp('unsubscribe')).toEqual([{ op: 'unsubscribe', requestId: 1 }]);
    await tick();
    expect(done).toBe(false);
    s.receive({ op: 'unsubscribed', requestId: 1 });
    await p;
    expect(done).toBe(true);
    // A socket drop with nothing to renew does not reconnect.
    s.drop();
    expect(clock.pending).toHaveLength(0);
    expect(c.realtime().status).toBe('idle');
  });
});
