import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { KEYS, startService, type TestService } from '../../server/test/helpers/service.ts';
import {
  type Client,
  type ClientOptions,
  createClient,
  disableRealtime,
  enableRealtime,
  FILTERED,
  type LiveObject,
  type LogEntry,
  REALTIME_WARNINGS,
  type RealtimeConnection,
  RealtimeError,
  resetRealtimeWarnings,
  type Subscription,
  type Timers,
  User,
} from '../src/index.node.ts';

let svc: TestService;
let log: LogEntry[];
const clients: Client[] = [];

function options(service: TestService, extra: Partial<ClientOptions> = {}): ClientOptions {
  return {
    serverURL: service.url,
    applicationId: KEYS.appId,
    restAPIKey: KEYS.restAPIKey,
    logger: (e) => log.push(e),
    ...extra,
  };
}
function track(c: Client): Client {
  clients.push(c);
  return c;
}
const masterClient = (extra: Partial<ClientOptions> = {}, service = svc) =>
  track(createClient(options(service, { masterKey: KEYS.masterKey, ...extra })));
const publicClient = (extra: Partial<ClientOptions> = {}, service = svc) =>
  track(createClient(options(service, { masterKey: null, ...extra })));

let counter = 0;
async function newUser(service = svc) {
  const username = `rt${++counter}_${Date.now()}`;
  const user = await User.signUp(publicClient({}, service), { username, password: 'secret-pw' });
  return { id: user.id!, token: user.sessionToken! };
}

interface Seen {
  kind: string;
  objectId: string;
  eventId: string;
  object: any;
  original?: any;
}

/** Records every event of a subscription in arrival order. */
function record(sub: Subscription<LiveObject>): Seen[] {
  const seen: Seen[] = [];
  for (const kind of ['create', 'delete'] as const) {
    sub.on(kind, (object, event) =>
      seen.push({ kind, objectId: object.objectId, eventId: event.eventId, object }),
    );
  }
  for (const kind of ['update', 'enter', 'leave'] as const) {
    sub.on(kind, (object, original, event) =>
      seen.push({ kind, objectId: object.objectId, eventId: event.eventId, object, original }),
    );
  }
  return seen;
}

const until = <T>(fn: () => T) => vi.waitFor(fn, { timeout: 10_000, interval: 10 });

async function write(
  method: 'POST' | 'PUT' | 'DELETE',
  path: string,
  body?: unknown,
  service = svc,
): Promise<any> {
  const res = await service.request(method, path, { as: 'master', body });
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.text}`);
  return res.json;
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

beforeAll(async () => {
  svc = await startService();
  await write('POST', '/classes/Room', { seed: true });
});

afterAll(async () => {
  await svc?.close();
});

beforeEach(() => {
  log = [];
  resetRealtimeWarnings();
  enableRealtime();
});

afterEach(() => {
  for (const c of clients.splice(0)) c.closeRealtime();
  disableRealtime();
  vi.restoreAllMocks();
});

describe('the enableRealtime gate (real service)', () => {
  it('subscribe fails locally before enableRealtime() and nothing is sent', async () => {
    disableRealtime();
    const before = svc.service.live.sizes().connections;
    const c = masterClient();
    expect(() => c.subscribe({ className: 'Room' })).toThrow(RealtimeError);
    await new Promise((r) => setTimeout(r, 50));
    expect(log).toEqual([]);
    expect(svc.service.live.sizes().connections).toBe(before);
  });
});

describe('events', () => {
  it('a user receives create, update, leave, enter and delete for a row it may read, nothing for a private row', async () => {
    const u = await newUser();
    const c = publicClient();
    const sub = c.subscribe({ className: 'Room', where: { room: 'a' } }, { sessionToken: u.token });
    const seen = record(sub);
    await sub.opened();
    const acl = { [u.id]: { read: true, write: true } };
    const { objectId: id } = await write('POST', '/classes/Room', { room: 'a', title: 't1', ACL: acl });
    const { objectId: hidden } = await write('POST', '/classes/Room', { room: 'a', ACL: {} });
    await write('PUT', `/classes/Room/${id}`, { title: 't2' });
    await write('PUT', `/classes/Room/${id}`, { room: 'b' });
    await write('PUT', `/classes/Room/${hidden}`, { title: 'x' });
    await write('PUT', `/classes/Room/${id}`, { room: 'a' });
    await write('DELETE', `/classes/Room/${id}`);
    await until(() => expect(seen.map((s) => s.kind)).toContain('delete'));
    expect(seen.map((s) => [s.kind, s.objectId])).toEqual([
      ['create', id],
      ['update', id],
      ['leave', id],
      ['enter', id],
      ['delete', id],
    ]);
    expect(seen[1]!.object.title).toBe('t2');
    expect(seen[1]!.original.title).toBe('t1');
    const ids = seen.map((s) => s.eventId);
    expect([...ids].sort()).toEqual(ids);
  });

  it('master events only on a connection opened with useMasterKey, warned once at connect', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const c = masterClient();
    const admin = c.realtime({ useMasterKey: true });
    const sub = admin.subscribe({ className: 'Room', where: { room: 'm' } });
    const seen = record(sub);
    await sub.opened();
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]![0])).toContain(REALTIME_WARNINGS.masterConnection);
    const { objectId: priv } = await write('POST', '/classes/Room', { room: 'm', ACL: {} });
    await until(() => expect(seen.map((s) => s.objectId)).toEqual([priv]));
    // A second admin connection does not warn again.
    const other = masterClient().realtime({ useMasterKey: true });
    await other.subscribe({ className: 'Room' }).opened();
    expect(warn).toHaveBeenCalledTimes(1);
    // The master key went in the connect frame, and the log shows it filtered.
    const connects = log.filter((e) => e.method === 'WS' && (e.body as any)?.op === 'connect');
    expect(connects.map((e) => (e.body as any).masterKey)).toEqual([FILTERED, FILTERED]);
    expect(JSON.stringify(log)).not.toContain(KEYS.masterKey);
    expect(JSON.stringify(log)).not.toContain(KEYS.restAPIKey);
  });

  it('a configured master key alone does not elevate: a private row is not received', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const c = masterClient();
    const sub = c.subscribe({ className: 'Room', where: { room: 'n' } });
    const asked = c.subscribe({ className: 'Room', where: { room: 'n' } }, { useMasterKey: true });
    const seen = record(sub);
    const seenAsked = record(asked);
    await Promise.all([sub.opened(), asked.opened()]);
    const { objectId: priv } = await write('POST', '/classes/Room', { room: 'n', ACL: {} });
    const { objectId: pub } = await write('POST', '/classes/Room', { room: 'n' });
    // Events on a connection come in write order: once the public row arrived, the private one never will.
    await until(() => expect(seen.map((s) => s.objectId)).toEqual([pub]));
    await until(() => expect(seenAsked.map((s) => s.objectId)).toEqual([pub]));
    expect([...seen, ...seenAsked].some((s) => s.objectId === priv)).toBe(false);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]![0])).toContain(REALTIME_WARNINGS.perSubscriptionMaster);
    const sent = log.filter((e) => e.realtime === 'send').map((e) => e.body as any);
    expect(sent.some((f) => 'masterKey' in f)).toBe(false);
  });

  it('scoped and admin streams use separate connections', async () => {
    vi.spyOn(console, 'warn').mockImplementation(() => {});
    const c = masterClient();
    const scoped = c.realtime();
    const admin = c.realtime({ useMasterKey: true });
    await Promise.all([
      scoped.subscribe({ className: 'Room' }).opened(),
      admin.subscribe({ className: 'Room' }).opened(),
    ]);
    expect(scoped).not.toBe(admin);
    expect(scoped.clientId).not.toBe(admin.clientId);
    // On the service: two connections, master authority only on the admin one.
    const live = svc.service.live as unknown as { connections: Set<{ id: number; master: boolean }> };
    const byId = new Map([...live.connections].map((conn) => [conn.id, conn.master]));
    expect(byId.get(scoped.clientId as number)).toBe(false);
    expect(byId.get(admin.clientId as number)).toBe(true);
  });

  it('a logout ends the subscriptions that use the session, with an error event', async () => {
    const u = await newUser();
    const c = publicClient();
    const sub = c.subscribe({ className: 'Room' }, { sessionToken: u.token });
    const events: string[] = [];
    sub
      .on('error', (e) => events.push(`error:${e.code}`))
      .on('close', (i) => events.push(`close:${i.reason}`));
    await sub.opened();
    await c.logout({ sessionToken: u.token });
    await until(() => expect(events).toEqual(['error:209', 'close:error']));
    expect(sub.ended).toBe(true);
  });

  it('unsubscribe frees the subscription on the service', async () => {
    const c = publicClient();
    const sub = c.subscribe({ className: 'Room', where: { room: 'u' } });
    const seen = record(sub);
    await sub.opened();
    const subs = svc.service.live.sizes().subscriptions;
    await sub.unsubscribe();
    expect(svc.service.live.sizes().subscriptions).toBe(subs - 1);
    await write('POST', '/classes/Room', { room: 'u' });
    await new Promise((r) => setTimeout(r, 100));
    expect(seen).toEqual([]);
  });
});

describe('reconnect', () => {
  it('after the server drops the socket, resumes from the last eventId: nothing lost, nothing twice', async () => {
    const clock = manualTimers();
    const u = await newUser();
    const c = publicClient({ realtime: { timers: clock.timers, random: () => 0 } });
    const conn = c.realtime();
    const sub = conn.subscribe({ className: 'Room', where: { room: 'r' } }, { sessionToken: u.token });
    const seen = record(sub);
    const opens: boolean[] = [];
    sub.on('open', (i) => opens.push(i.resumed));
    await sub.opened();
    const ids: string[] = [];
    const create = async () => ids.push((await write('POST', '/classes/Room', { room: 'r' })).objectId);
    await create();
    await create();
    await until(() => expect(seen).toHaveLength(2));
    const firstClient = conn.clientId;

    terminate(svc, conn);
    await until(() => expect(clock.pending).toHaveLength(1));
    expect(conn.status).toBe('waiting');
    // Written while the client is away.
    await create();
    await create();
    await write('PUT', `/classes/Room/${ids[0]}`, { title: 'while away' });
    await create();

    clock.pending.shift()!();
    await until(() => expect(seen).toHaveLength(6));
    expect(conn.clientId).not.toBe(firstClient);
    await create();
    await until(() => expect(seen).toHaveLength(7));
    await new Promise((r) => setTimeout(r, 100));

    expect(seen.map((s) => [s.kind, s.objectId])).toEqual([
      ['create', ids[0]],
      ['create', ids[1]],
      ['create', ids[2]],
      ['create', ids[3]],
      ['update', ids[0]],
      ['create', ids[4]],
      ['create', ids[5]],
    ]);
    const eventIds = seen.map((s) => s.eventId);
    expect(new Set(eventIds).size).toBe(7);
    expect([...eventIds].sort()).toEqual(eventIds);
    expect(opens).toEqual([false, true]);
    const resubscribe = log
      .filter((e) => e.realtime === 'send' && (e.body as any).op === 'subscribe')
      .map((e) => e.body as any);
    expect(resubscribe).toHaveLength(2);
    expect(resubscribe[1].since).toBe(seen[1]!.eventId);
    expect(resubscribe[1].sessionToken).toBe(FILTERED);
  });

  it('code 5 (resume window exceeded): a resync event, then a snapshot, then live events', async () => {
    const small = await startService({ liveQuery: { retentionMaxEvents: 2 } });
    try {
      await write('POST', '/classes/Room', { seed: true }, small);
      const clock = manualTimers();
      const c = publicClient({ realtime: { timers: clock.timers, random: () => 0 } }, small);
      const conn = c.realtime();
      const sub = conn.subscribe({ className: 'Room', where: { room: 'w' } });
      const order: string[] = [];
      sub.on('create', (o) => order.push(`create:${o.objectId}`));
      sub.on('resync', (e) => order.push(`resync:${e.code}`));
      sub.on('snapshot', (rows) => order.push(`snapshot:${rows.map((r) => r.objectId).join(',')}`));
      await sub.opened();
      const a = (await write('POST', '/classes/Room', { room: 'w' }, small)).objectId;
      await until(() => expect(order).toEqual([`create:${a}`]));

      terminate(small, conn);
      await until(() => expect(clock.pending).toHaveLength(1));
      const away: string[] = [];
      for (let i = 0; i < 4; i++)
        away.push((await write('POST', '/classes/Room', { room: 'w' }, small)).objectId);
      clock.pending.shift()!();
      await until(() => expect(order.some((o) => o.startsWith('snapshot:'))).toBe(true));
      const last = (await write('POST', '/classes/Room', { room: 'w' }, small)).objectId;
      await until(() => expect(order.at(-1)).toBe(`create:${last}`));

      expect(order[1]).toBe('resync:5');
      expect(order[2]!.split(':')[1]!.split(',').sort()).toEqual([a, ...away].sort());
      expect(order).toHaveLength(4);
      expect(sub.ended).toBe(false);
      const subscribes = log
        .filter((e) => e.realtime === 'send' && (e.body as any).op === 'subscribe')
        .map((e) => e.body as any);
      expect(subscribes.map((f) => [f.since !== undefined, f.snapshot === true])).toEqual([
        [false, false],
        [true, false],
        [false, true],
      ]);
    } finally {
      for (const c of clients.splice(0)) c.closeRealtime();
      await small.close();
    }
  });
});
