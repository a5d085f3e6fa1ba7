import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createService } from '../src/index.ts';
import type { WriteEvent } from '../src/kernel/events.ts';
import { FakeClock } from './helpers/clock.ts';
import { CLOUD_MODULE } from './helpers/cloud.ts';
import { flush, LiveClient, MARKER, pointer, signUp, subscribeMarker } from './helpers/live.ts';
import { type Receiver, startReceiver } from './helpers/receiver.ts';
import { killClients, REDIS_URL, redisAnswers, testPrefix } from './helpers/redis.ts';
import {
  credentialHeaders,
  freshSchema,
  KEYS,
  type RequestOptions,
  TEST_DATABASE_URL,
  type TestResponse,
  type TestService,
} from './helpers/service.ts';

/**
 * Two service instances on one store and one Redis (docs/architecture/scale-out.md): what one
 * instance writes reaches the other's realtime subscribers, caches and login state, a schedule runs
 * once, and a file stored through one is served by the other. The store is the PostgreSQL test
 * database when BDS_TEST_DATABASE_URL is set (one fresh schema, dropped after), else one SQLite file
 * both instances open.
 */
const available = await redisAnswers();
if (!available) console.log(`scale-out: skipped, no Redis answers at ${REDIS_URL}`);

const INVALID = { code: 209, error: 'Invalid session token' };
const NOT_FOUND = { code: 101, error: 'Object not found.' };
const START = '2026-01-01T10:00:30.000Z';

interface Instance extends TestService {
  clock: FakeClock;
  /** Resolves with the first event from the other instance that `pred` accepts. */
  remote(pred: (event: WriteEvent) => boolean): Promise<WriteEvent>;
}

let space: ReturnType<typeof testPrefix>;
let dataDir: string;
let dropSchema: (() => Promise<void>) | undefined;
let a: Instance;
let b: Instance;
let receiver: Receiver;

async function boot(databaseURI: string | undefined): Promise<Instance> {
  const clock = new FakeClock(Date.parse(START));
  const service = await createService(
    {
      ...KEYS,
      dataDir,
      ...(databaseURI ? { databaseURI } : {}),
      logLevel: 'error',
      rateLimit: [],
      cloud: CLOUD_MODULE,
      redisURL: REDIS_URL,
      redis: { keyPrefix: space.prefix },
      files: { adapter: 'database' },
      hooks: { allowInsecureUrls: true, retries: 0 },
      liveQuery: { classNames: ['Note', MARKER] },
    },
    { clock },
  );
  const { port, url } = await service.listen(0, '127.0.0.1');
  const request = async (method: string, p: string, options: RequestOptions = {}): Promise<TestResponse> => {
    const headers: Record<string, string> = { ...credentialHeaders(options.as), ...options.headers };
    if (options.sessionToken) headers['X-Backend-Session-Token'] = options.sessionToken;
    let body: string | Buffer | undefined;
    if (options.rawBody !== undefined) body = options.rawBody;
    else if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['Content-Type'] ??= 'application/json';
    }
    const res = await fetch(`${url}${p}`, { method, headers, body });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text, json: text ? JSON.parse(text) : undefined };
  };
  return {
    service,
    url,
    port,
    dataDir,
    clock,
    request,
    remote: (pred) =>
      new Promise((resolve) => {
        const off = service.core.events.subscribe((event) => {
          if (!event.remote || !pred(event)) return;
          off();
          resolve(event);
        });
      }),
    close: () => service.close(),
  };
}

describe.skipIf(!available)('two instances on one store and one Redis', () => {
  beforeAll(async () => {
    space = testPrefix();
    receiver = await startReceiver();
    dataDir = mkdtempSync(path.join(tmpdir(), 'bds-scale-out-'));
    let databaseURI: string | undefined;
    if (TEST_DATABASE_URL) {
      const schema = await freshSchema(TEST_DATABASE_URL);
      databaseURI = schema.uri;
      dropSchema = schema.drop;
    }
    // One after the other: the second finds the store migrated.
    a = await boot(databaseURI);
    b = await boot(databaseURI);
    // Every field up front: the instances do not race to add a column (the store's business).
    const text = { type: 'String' };
    const flag = { type: 'Boolean' };
    const classes = {
      Note: { title: text },
      TriggerLog: { title: text, trigger: text, user: text, master: flag, className: text, rowId: text },
      Tick: { at: text },
      Hooked: { name: text },
    };
    Object.assign(classes.TriggerLog, { isUpdate: flag, stamp: text });
    for (const [className, fields] of Object.entries(classes)) {
      const heard = b.remote((e) => e.className === '_SCHEMA' && e.objectId === className);
      const res = await a.request('POST', `/schemas/${className}`, {
        as: 'master',
        body: { className, fields },
      });
      expect(res.status, res.text).toBe(200);
      await heard;
    }
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await dropSchema?.();
    await space?.cleanup();
    await receiver?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('delivers a write on A to a subscriber on B who may read it, and not to one who may not', async () => {
    const reader = await signUp(a, 'reader');
    const other = await signUp(a, 'other');
    const readerLive = await LiveClient.connect(b, { sessionToken: reader.token });
    const otherLive = await LiveClient.connect(b, { sessionToken: other.token });
    try {
      for (const c of [readerLive, otherLive]) {
        expect(await c.subscribe(1, { className: 'Note', where: {} })).toMatchObject({ op: 'subscribed' });
        await subscribeMarker(c);
      }
      const created = await a.request('POST', '/classes/Note', {
        as: 'master',
        body: { title: 'private', ACL: { [reader.id]: { read: true } } },
      });
      expect(created.status, created.text).toBe(201);
      // Written on A after the note: B delivers it after the note (one stream, in order).
      const [readerFrames, otherFrames] = await flush(a, readerLive, otherLive);
      expect(readerFrames).toHaveLength(1);
      expect(readerFrames[0]).toMatchObject({
        op: 'create',
        requestId: 1,
        object: { className: 'Note', objectId: created.json.objectId, title: 'private' },
      });
      expect(otherFrames).toEqual([]);
    } finally {
      readerLive.close();
      otherLive.close();
    }
  });

  it("keeps B's resume window whole across a lost connection to Redis: nothing written meanwhile is missed", async () => {
    const master = { masterKey: KEYS.masterKey };
    const c = await LiveClient.connect(b, master);
    expect(await c.subscribe(1, { className: 'Note', where: {} })).toMatchObject({ op: 'subscribed' });
    const first = await a.request('POST', '/classes/Note', { as: 'master', body: { title: 'r0' } });
    const seen = await c.take();
    expect(seen).toMatchObject({ op: 'create', object: { objectId: first.json.objectId } });
    c.close();
    // B's reading connection is killed; A writes while B is away from Redis.
    const bus = b.service.core.events as unknown as { instance: string };
    expect(await killClients(space.admin, `bds-read-${bus.instance.slice(0, 8)}`)).toBe(1);
    const ids: string[] = [];
    for (let n = 1; n <= 3; n++) {
      ids.push(
        (await a.request('POST', '/classes/Note', { as: 'master', body: { title: `r${n}` } })).json.objectId,
      );
    }
    // The subscriber resumes on B from the last event it saw: every write since, in order.
    const d = await LiveClient.connect(b, master);
    try {
      await subscribeMarker(d);
      d.send({ op: 'subscribe', requestId: 1, query: { className: 'Note', where: {} }, since: seen.eventId });
      const [frames] = await flush(a, d);
      const events = frames!.filter((f) => f.requestId === 1);
      expect(events[0]).toMatchObject({ op: 'subscribed' });
      expect(events.slice(1).map((f) => [f.op, f.object.objectId])).toEqual(ids.map((id) => ['create', id]));
    } finally {
      d.close();
    }
  });

  it('starts every cache over on an instance that finds a hole in the stream (events it never read)', async () => {
    const callers = b.service.callers;
    const real = callers.forgetAll.bind(callers);
    let forgot = 0;
    callers.forgetAll = () => {
      forgot++;
      real();
    };
    const master = { masterKey: KEYS.masterKey };
    const c = await LiveClient.connect(b, master);
    try {
      expect(await c.subscribe(1, { className: 'Note', where: {} })).toMatchObject({ op: 'subscribed' });
      await a.request('POST', '/classes/Note', { as: 'master', body: { title: 'before a hole' } });
      const seen = await c.take();
      const bus = a.service.core.events as unknown as { seqKey: string };
      // Two entries numbered and gone before anyone read them.
      await space.admin.incrby(bus.seqKey, 2);
      const heard = b.remote((e) => e.className === 'Note' && e.op === 'create');
      await a.request('POST', '/classes/Note', { as: 'master', body: { title: 'after a hole' } });
      await heard;
      expect(forgot).toBe(1);
      // What B kept from before the hole cannot be replayed in full: a resume from it answers 5.
      c.send({ op: 'subscribe', requestId: 2, query: { className: 'Note', where: {} }, since: seen.eventId });
      const frames = await c.until((f) => f.requestId === 2 && f.op === 'error');
      expect(frames.filter((f) => f.requestId === 2).map((f) => f.op)).toEqual(['subscribed', 'error']);
      expect(frames.at(-1)).toEqual({
        op: 'error',
        code: 5,
        error: `The events after ${seen.eventId} are no longer kept (resume window exceeded); subscribe again with a snapshot.`,
        reconnect: false,
        requestId: 2,
      });
    } finally {
      callers.forgetAll = real;
      c.close();
    }
  });

  it("follows on B a class changed on A before B's listeners see the change", async () => {
    expect(b.service.core.schemas.get('Note')?.fields.title).toEqual({ type: 'String' });
    let seen: unknown;
    const heard = b.remote((e) => {
      if (e.className !== '_SCHEMA' || e.objectId !== 'Note') return false;
      seen = b.service.core.schemas.get('Note')?.fields.body;
      return true;
    });
    const res = await a.request('PUT', '/schemas/Note', {
      as: 'master',
      body: { className: 'Note', fields: { body: { type: 'Number' } } },
    });
    expect(res.status, res.text).toBe(200);
    await heard;
    expect(seen).toEqual({ type: 'Number' });
    const row = await b.request('POST', '/classes/Note', { as: 'master', body: { body: 'text' } });
    expect(row.status).toBe(400);
    expect(row.json).toEqual({
      code: 111,
      error: 'schema mismatch for body; expected Number but got String',
    });
  });

  it('runs after-write triggers and webhooks once, on the instance where the write happened', async () => {
    const hooked = b.remote((e) => e.className === '_Hooks' && e.op === 'create');
    const hook = await a.request('POST', '/hooks/triggers', {
      as: 'master',
      body: { className: 'Hooked', triggerName: 'afterSave', url: `${receiver.url}/after` },
    });
    expect(hook.status, hook.text).toBe(201);
    // B knows the hook too: it would call it if it ran after-triggers for A's writes.
    await hooked;
    const heard = b.remote((e) => e.className === 'Hooked' && e.op === 'create');
    const created = await a.request('POST', '/classes/Hooked', { as: 'master', body: { name: 'once' } });
    expect(created.status, created.text).toBe(201);
    await heard;
    await a.service.cloud.triggers.idle();
    await b.service.cloud.triggers.idle();
    const calls = receiver.calls.filter((c) => c.path === '/after');
    expect(calls).toHaveLength(1);
    expect(calls[0]!.body).toMatchObject({
      triggerName: 'afterSave',
      object: { className: 'Hooked', objectId: created.json.objectId, name: 'once' },
    });
  });

  it("takes a role change on A into account on B's next request and next event", async () => {
    const role = await a.request('POST', '/roles', {
      as: 'master',
      body: { name: 'Readers', ACL: { '*': { read: true } } },
    });
    expect(role.status, role.text).toBe(201);
    const carol = await signUp(a, 'carol');
    const note = await a.request('POST', '/classes/Note', {
      as: 'master',
      body: { title: 'v0', ACL: { 'role:Readers': { read: true } } },
    });
    const id = note.json.objectId as string;
    const before = await b.request('GET', `/classes/Note/${id}`, { sessionToken: carol.token });
    expect(before.status).toBe(404);
    expect(before.json).toEqual(NOT_FOUND);
    const live = await LiveClient.connect(b, { sessionToken: carol.token });
    try {
      expect(await live.subscribe(1, { className: 'Note', where: {} })).toMatchObject({ op: 'subscribed' });
      await subscribeMarker(live);
      await a.request('PUT', `/classes/Note/${id}`, { as: 'master', body: { title: 'v1' } });
      expect(await flush(a, live)).toEqual([[]]);

      const heard = b.remote((e) => e.className === '_Role' && e.op === 'update');
      const grant = await a.request('PUT', `/roles/${role.json.objectId}`, {
        as: 'master',
        body: { users: { __op: 'AddRelation', objects: [pointer('_User', carol.id)] } },
      });
      expect(grant.status, grant.text).toBe(200);
      await heard;
      const after = await b.request('GET', `/classes/Note/${id}`, { sessionToken: carol.token });
      expect(after.status, after.text).toBe(200);
      expect(after.json).toMatchObject({ objectId: id, title: 'v1' });

      await a.request('PUT', `/classes/Note/${id}`, { as: 'master', body: { title: 'v2' } });
      const [frames] = await flush(a, live);
      expect(frames).toHaveLength(1);
      expect(frames![0]).toMatchObject({ op: 'update', object: { objectId: id, title: 'v2' } });
    } finally {
      live.close();
    }
  });

  it('accepts on B a session created on A, and refuses it on B once it logged out on A', async () => {
    const dave = await signUp(a, 'dave');
    const me = await b.request('GET', '/users/me', { sessionToken: dave.token });
    expect(me.status, me.text).toBe(200);
    expect(me.json).toMatchObject({ objectId: dave.id, username: 'dave' });
    // B now holds the session in its cache: only the event from A can drop it.
    expect((await b.request('GET', '/users/me', { sessionToken: dave.token })).status).toBe(200);
    const live = await LiveClient.connect(b, { sessionToken: dave.token });
    try {
      expect(await live.subscribe(1, { className: 'Note', where: {} })).toMatchObject({ op: 'subscribed' });
      const heard = b.remote((e) => e.className === '_Session' && e.op === 'delete');
      const out = await a.request('POST', '/logout', { sessionToken: dave.token });
      expect(out.status, out.text).toBe(200);
      await heard;
      const after = await b.request('GET', '/users/me', { sessionToken: dave.token });
      expect(after.status).toBe(400);
      expect(after.json).toEqual(INVALID);
      // B's realtime ends the subscription that used the token.
      expect(await live.take()).toEqual({
        op: 'error',
        code: 209,
        error: 'The session of this subscription ended (logout or revoked session).',
        reconnect: false,
        requestId: 1,
      });
    } finally {
      live.close();
    }
  });

  it('runs a job scheduled on both instances once per tick', async () => {
    const heard = b.remote((e) => e.className === '_JobSchedule' && e.op === 'create');
    const schedule = await a.request('POST', '/classes/_JobSchedule', {
      as: 'master',
      body: { jobName: 'tick', cron: '*/5 * * * *', params: { label: 'shared' } },
    });
    expect(schedule.status, schedule.text).toBe(201);
    await heard;
    const settle = async () => {
      for (const i of [a, b]) {
        await i.service.jobs.scheduler.idle();
        await i.service.jobs.runner.idle();
      }
    };
    await settle();
    const tick = Date.parse('2026-01-01T10:05:00.000Z');
    // Both clocks reach the tick at once; both schedulers look.
    a.clock.set(tick);
    b.clock.set(tick);
    a.service.jobs.scheduler.poke();
    b.service.jobs.scheduler.poke();
    await settle();
    const ticks = await a.request('GET', '/classes/Tick', { as: 'master', headers: {} });
    expect(ticks.json.results.map((r: { at: string }) => r.at)).toEqual(['shared']);
    const statuses = await b.request(
      'GET',
      `/classes/_JobStatus?where=${encodeURIComponent('{"source":"schedule"}')}`,
      {
        as: 'master',
      },
    );
    expect(statuses.json.results).toHaveLength(1);
    expect(statuses.json.results[0]).toMatchObject({ jobName: 'tick', scheduleId: schedule.json.objectId });
    // The tick was claimed in Redis (one key per schedule and tick).
    expect(await space.admin.exists(`${space.prefix}tick:${schedule.json.objectId}:${tick}`)).toBe(1);
  });

  it('serves through B a file uploaded through A', async () => {
    const bytes = Buffer.from([0, 1, 2, 250, 251, 252, ...Buffer.from('scale-out')]);
    const res = await fetch(`${a.url}/files/data.bin`, {
      method: 'POST',
      headers: { ...credentialHeaders('master'), 'Content-Type': 'application/octet-stream' },
      body: bytes,
    });
    expect(res.status).toBe(201);
    const { name } = (await res.json()) as { name: string };
    const got = await fetch(`${b.url}/files/${KEYS.appId}/${name}`);
    expect(got.status).toBe(200);
    expect(got.headers.get('content-type')).toBe('application/octet-stream');
    expect(Buffer.from(await got.arrayBuffer())).toEqual(bytes);
  });
});
