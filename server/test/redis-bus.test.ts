import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MASTER, makeCaller } from '../src/kernel/caller.ts';
import type { WriteEvent } from '../src/kernel/events.ts';
import { silentLogger } from '../src/kernel/log.ts';
import { RedisEventBus } from '../src/redis/event-bus.ts';
import { RedisLink } from '../src/redis/link.ts';
import { killClients, REDIS_URL, redisAnswers, testPrefix } from './helpers/redis.ts';

/**
 * The Redis event bus (server/src/redis/event-bus.ts) on the real Redis: two buses stand for two
 * instances under one key prefix (unique per test, deleted after).
 */
const available = await redisAnswers();
if (!available) console.log(`redis-bus: skipped, no Redis answers at ${REDIS_URL}`);

interface Instance {
  link: RedisLink;
  bus: RedisEventBus;
  seen: WriteEvent[];
  gaps: number;
}

let space: ReturnType<typeof testPrefix>;
const open: Instance[] = [];

async function instance(maxLen = 10_000, maxUnpublished?: number): Promise<Instance> {
  const link = new RedisLink(REDIS_URL, space.prefix, silentLogger());
  await link.connect();
  const inst: Instance = { link, bus: undefined as unknown as RedisEventBus, seen: [], gaps: 0 };
  inst.bus = new RedisEventBus(link, silentLogger(), {
    maxLen,
    maxUnpublished,
    blockMs: 200,
    onGap: () => {
      inst.gaps++;
    },
  });
  inst.bus.subscribe((event) => inst.seen.push(event));
  await inst.bus.start();
  open.push(inst);
  return inst;
}

const event = (n: number, extra: Partial<WriteEvent> = {}): WriteEvent => ({
  op: 'create',
  className: 'Item',
  objectId: `id${n}`,
  before: null,
  after: { objectId: `id${n}`, n },
  caller: MASTER,
  source: 'rest',
  context: {},
  ip: null,
  ...extra,
});

async function until(what: () => boolean, ms = 5000, step?: () => Promise<void>): Promise<void> {
  const deadline = Date.now() + ms;
  await step?.();
  while (!what()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
    await step?.();
  }
}

beforeEach(() => {
  space = testPrefix();
});
afterEach(async () => {
  for (const inst of open.splice(0)) {
    await inst.bus.close();
    await inst.link.close();
  }
  await space.cleanup();
});

describe.skipIf(!available)('the Redis event bus', () => {
  it('holds at most maxUnpublished events for Redis; past it drops them, and the others see a hole', async () => {
    const a = await instance(10_000, 5);
    const b = await instance();
    // Sent in one go: 5 wait for Redis's answer, the 7 after them are dropped.
    for (let n = 0; n < 12; n++) a.bus.publish(event(n));
    expect(a.seen.map((e) => e.objectId)).toHaveLength(12);
    await until(() => b.seen.length === 5);
    expect(b.gaps).toBe(0);
    await until(() => (a.bus as unknown as { unpublished: number }).unpublished === 0);
    a.bus.publish(event(12));
    await until(() => b.seen.length === 6);
    expect(b.gaps).toBe(1);
    expect(b.seen.map((e) => e.objectId)).toEqual(['id0', 'id1', 'id2', 'id3', 'id4', 'id12']);
    // Numbering goes on without a hole after it.
    a.bus.publish(event(13));
    await until(() => b.seen.length === 7);
    expect(b.gaps).toBe(1);
  });

  it('delivers a write to its own instance at once (local) and to the others in order (remote)', async () => {
    const a = await instance();
    const b = await instance();
    for (let n = 1; n <= 200; n++) {
      a.bus.publish(event(n));
      // Synchronously, before publish returns, and not marked remote.
      expect(a.seen.length).toBe(n);
      expect(a.seen[n - 1]!.remote).toBeUndefined();
    }
    b.bus.publish(event(1000));
    expect(b.seen.map((e) => e.objectId)).toEqual(['id1000']);
    await until(() => b.seen.length === 201 && a.seen.length === 201);
    const fromA = b.seen.filter((e) => e.objectId !== 'id1000');
    expect(fromA.map((e) => e.objectId)).toEqual(Array.from({ length: 200 }, (_, i) => `id${i + 1}`));
    expect(fromA.every((e) => e.remote === true)).toBe(true);
    expect(a.seen[200]).toMatchObject({ objectId: 'id1000', remote: true });
    // Neither instance gets its own writes a second time.
    await new Promise((r) => setTimeout(r, 300));
    expect(a.seen.length).toBe(201);
    expect(b.seen.length).toBe(201);
  });

  it('carries every value of an event as it was published (dates, bytes, maps, -0, undefined)', async () => {
    const a = await instance();
    const b = await instance();
    const caller = makeCaller({
      user: { objectId: 'u1' },
      roles: [
        { name: 'Admins', via: null },
        { name: 'Editors', via: 'Admins' },
      ],
      sessionToken: 'r:abc',
      installationId: 'inst-1',
    });
    const sent = event(1, {
      op: 'update',
      before: { objectId: 'id1', n: -0, tags: ['a'], ACL: { '*': { read: true } } },
      after: {
        objectId: 'id1',
        n: Number.NaN,
        big: 2n ** 70n,
        when: { __type: 'Date', iso: '2026-01-02T03:04:05.678Z' },
        raw: new Date(Date.UTC(2026, 0, 2)),
        bytes: Buffer.from([0, 1, 254, 255]),
        vector: [0.1, 1e-30, -3.4e38],
        nested: { deep: { empty: undefined, list: [null, 1.5] } },
      },
      caller,
      source: 'batch',
      context: { at: new Date(0), flag: true },
      ip: '10.0.0.1',
    });
    a.bus.publish(sent);
    await until(() => b.seen.length === 1);
    const got = b.seen[0]!;
    expect(got).toEqual({ ...sent, remote: true });
    expect(Object.is(got.before!.n, -0)).toBe(true);
    expect(Buffer.isBuffer(got.after!.bytes)).toBe(true);
    expect(got.after!.raw).toBeInstanceOf(Date);
    expect(got.caller.roleVia).toBeInstanceOf(Map);
    expect(got.caller.roleVia.get('Editors')).toBe('Admins');
    expect('empty' in (got.after!.nested as { deep: object }).deep).toBe(true);
  });

  it('sends an event whose context cannot be cloned with an empty context', async () => {
    const a = await instance();
    const b = await instance();
    a.bus.publish(event(1, { context: { fn: () => 1, keep: 'x' } }));
    await until(() => b.seen.length === 1);
    expect(b.seen[0]).toMatchObject({ objectId: 'id1', after: { objectId: 'id1', n: 1 }, context: {} });
    expect(b.seen[0]!.context).toEqual({});
  });

  it('loses nothing when its reading connection is killed (CLIENT KILL): it resumes from the last id', async () => {
    const a = await instance();
    const b = await instance();
    for (let n = 1; n <= 50; n++) a.bus.publish(event(n));
    await until(() => b.seen.length === 50);
    for (let round = 0; round < 3; round++) {
      // Once it is back (ioredis reconnects by itself), killed again.
      const name = `bds-read-${b.bus.instance.slice(0, 8)}`;
      let killed = 0;
      await until(
        () => killed === 1,
        5000,
        async () => {
          killed = await killClients(space.admin, name);
        },
      );
      // Written while B's reader is away.
      for (let n = 1; n <= 50; n++) a.bus.publish(event(50 + round * 50 + n));
    }
    await until(() => b.seen.length === 200);
    expect(b.seen.map((e) => e.objectId)).toEqual(Array.from({ length: 200 }, (_, i) => `id${i + 1}`));
    expect(b.gaps).toBe(0);
    await new Promise((r) => setTimeout(r, 300));
    expect(b.seen.length).toBe(200);
  });

  it('keeps the stream within its bound, and reports a gap when entries were trimmed before they were read', async () => {
    const a = await instance(100);
    const b = await instance(100);
    for (let n = 1; n <= 1000; n++) {
      a.bus.publish(event(n));
      if (n % 50 === 0) await until(() => b.seen.length === n);
    }
    // MAXLEN ~ trims whole nodes: the stream stays near its bound, far below what was written.
    expect(await space.admin.xlen(a.bus.stream)).toBeLessThan(300);
    expect(b.gaps).toBe(0);
    // In one step: B's reader is killed, two entries are published (the counter moves on) and
    // trimmed before B is back.
    const [reader] = ((await space.admin.client('LIST')) as string)
      .split('\n')
      .filter((line) => line.includes(`name=bds-read-${b.bus.instance.slice(0, 8)}`));
    const id = /^id=(\d+)/.exec(reader!)![1]!;
    await space.admin
      .multi()
      .client('KILL', 'ID', id)
      .incrby(a.bus.seqKey, 2)
      .xtrim(a.bus.stream, 'MAXLEN', 0)
      .exec();
    a.bus.publish(event(1001));
    await until(() => b.seen.length === 1001);
    expect(b.gaps).toBe(1);
    expect(b.seen[1000]).toMatchObject({ objectId: 'id1001', remote: true });
    // A reads the stream too (its own entries included): it sees the same hole.
    await until(() => a.gaps === 1);
  });

  it('starts reading after the entries written before it started', async () => {
    const a = await instance();
    a.bus.publish(event(1));
    await new Promise((r) => setTimeout(r, 100));
    const b = await instance();
    a.bus.publish(event(2));
    await until(() => b.seen.length === 1);
    await new Promise((r) => setTimeout(r, 100));
    expect(b.seen.map((e) => e.objectId)).toEqual(['id2']);
  });
});
