import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createService } from '../src/index.ts';
import { MASTER } from '../src/kernel/caller.ts';
import { silentLogger } from '../src/kernel/log.ts';
import { PushService, STALE_RUNNING_MS } from '../src/push/service.ts';
import { type FakePush, startFakePush } from './helpers/fake-push.ts';
import { runScenarios } from './helpers/scenarios.ts';
import { credentialHeaders, KEYS, startService, type TestService } from './helpers/service.ts';

/** Polls until `check` answers a value (generous bound: the machine is shared). */
async function waitFor<T>(check: () => Promise<T | undefined>, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function finished(t: TestService, id: string) {
  return waitFor(async () => {
    const res = await t.request('GET', `/classes/_PushStatus/${id}`, { as: 'master' });
    return ['succeeded', 'failed'].includes(res.json.status) ? res.json : undefined;
  });
}

runScenarios('POST /push without a push configuration', [
  {
    name: 'master: 115 with a clear text',
    method: 'POST',
    path: '/push',
    as: 'master',
    body: { where: {}, data: { alert: 'hi' } },
    status: 400,
    code: 115,
    expect: {
      error:
        'Push is not configured: set the push option with apns and/or fcm credentials to send notifications.',
    },
  },
  {
    name: 'without the master key: 119',
    method: 'POST',
    path: '/push',
    body: { where: {}, data: { alert: 'hi' } },
    status: 403,
    code: 119,
    expect: { error: 'unauthorized: master key is required' },
  },
]);

describe('push', () => {
  let fake: FakePush;
  let t: TestService;
  const install = async (installationId: string, fields: Record<string, unknown>) => {
    const res = await t.request('POST', '/installations', {
      as: 'master',
      body: { installationId, ...fields },
    });
    expect(res.status, res.text).toBe(201);
    return res.json.objectId as string;
  };
  beforeAll(async () => {
    fake = await startFakePush();
    t = await startService({ push: fake.options });
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
  });

  it('refuses bad bodies with their codes, creating no status', async () => {
    const cases: Array<[unknown, number, string]> = [
      [{ where: {} }, 107, 'Invalid push: data: Invalid input: expected record, received undefined.'],
      [{ data: { alert: 'x' } }, 115, 'Sending a push requires either "channels" or a "where" query.'],
      [{ where: { a: { $bogus: 1 } }, data: {} }, 102, ''],
      [{ where: {}, data: { badge: 'lots' } }, 111, 'data.badge must be a whole number or "Increment".'],
      [
        { where: {}, data: {}, push_time: 'tomorrow' },
        107,
        'Invalid push: push_time: must be an ISO 8601 date.',
      ],
      [{ where: {}, data: {}, extra: 1 }, 107, 'Invalid push: body: unknown field extra.'],
      [
        { where: {}, data: {}, expiration_time: '2000-01-01T00:00:00.000Z' },
        107,
        'The push would expire before its push_time.',
      ],
    ];
    for (const [body, code, error] of cases) {
      const res = await t.request('POST', '/push', { as: 'master', body });
      expect(res.status, res.text).toBe(400);
      expect(res.json.code).toBe(code);
      if (error) expect(res.json.error).toBe(error);
    }
    const statuses = await t.request('GET', '/classes/_PushStatus', { as: 'master' });
    expect(statuses.json.results).toEqual([]);
  });

  it('delivers to a where audience over APNs and FCM, counts per type, removes invalid tokens, increments badges', async () => {
    const ios = await install('i-ios-1', {
      deviceType: 'ios',
      deviceToken: 'tok-ios-1',
      badge: 1,
      channels: ['news'],
    });
    const iosBad = await install('i-ios-2', {
      deviceType: 'ios',
      deviceToken: 'bad-ios-2',
      channels: ['news'],
    });
    const android = await install('i-and-1', { deviceType: 'android', deviceToken: 'tok-and-1', badge: 4 });
    const androidBad = await install('i-and-2', { deviceType: 'android', deviceToken: 'bad-and-2' });
    await install('i-web-1', { deviceType: 'winphone', deviceToken: 'tok-x', group: 'other' });
    const res = await t.request('POST', '/push', {
      as: 'master',
      body: {
        where: { deviceType: { $in: ['ios', 'android'] } },
        data: { alert: 'Hello', title: 'Greeting', badge: 'Increment', sound: 'ping.caf', story: 42 },
        expiration_interval: 3600,
      },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual({ result: true });
    const id = res.headers.get('x-backend-push-status-id')!;
    expect(id).toMatch(/^\w{10}$/);
    const status = await finished(t, id);
    expect(status).toMatchObject({
      status: 'succeeded',
      numSent: 2,
      numFailed: 2,
      sentPerType: { ios: 1, android: 1 },
      failedPerType: { ios: 1, android: 1 },
      failureReasons: { Unregistered: 1, UNREGISTERED: 1 },
      source: 'rest',
    });
    expect(fake.refused).toBe(0);
    const apns = fake.sends.find((s) => s.token === 'tok-ios-1')!;
    expect(apns.headers['apns-topic']).toBe('com.example.app');
    expect(apns.headers['apns-push-type']).toBe('alert');
    expect(Number(apns.headers['apns-expiration'])).toBeGreaterThan(Date.now() / 1000 + 3000);
    expect(apns.body).toEqual({
      aps: { alert: { title: 'Greeting', body: 'Hello' }, badge: 2, sound: 'ping.caf' },
      story: 42,
    });
    const fcm = fake.sends.find((s) => s.token === 'tok-and-1')!;
    expect(fcm.body.message).toMatchObject({
      token: 'tok-and-1',
      notification: { title: 'Greeting', body: 'Hello' },
      data: { badge: '5', story: '42' },
      android: { priority: 'high', notification: { sound: 'ping.caf' } },
    });
    expect(fake.sends.some((s) => s.token === 'tok-x')).toBe(false);
    const rows = async (id: string) =>
      (await t.request('GET', `/installations/${id}`, { as: 'master' })).json;
    expect(await rows(iosBad)).not.toHaveProperty('deviceToken');
    expect(await rows(androidBad)).not.toHaveProperty('deviceToken');
    expect((await rows(ios)).deviceToken).toBe('tok-ios-1');
    expect((await rows(ios)).badge).toBe(2);
    expect((await rows(android)).badge).toBe(5);
  });

  it('targets channels; concurrent badge increments are atomic', async () => {
    const id = await install('i-chan-1', {
      deviceType: 'ios',
      deviceToken: 'tok-chan-1',
      badge: 0,
      channels: ['sport'],
    });
    await install('i-chan-2', { deviceType: 'ios', deviceToken: 'tok-chan-2', channels: ['cooking'] });
    const before = fake.sends.length;
    const sends = await Promise.all(
      [1, 2, 3].map(() =>
        t.request('POST', '/push', {
          as: 'master',
          body: { channels: ['sport'], data: { alert: 'Goal', badge: 'Increment' } },
        }),
      ),
    );
    for (const s of sends) await finished(t, s.headers.get('x-backend-push-status-id')!);
    const mine = fake.sends.slice(before);
    expect(mine.map((s) => s.token)).toEqual(['tok-chan-1', 'tok-chan-1', 'tok-chan-1']);
    expect(mine.map((s) => s.body.aps.badge).sort()).toEqual([1, 2, 3]);
    expect((await t.request('GET', `/installations/${id}`, { as: 'master' })).json.badge).toBe(3);
  });

  it('a push with a push_time is scheduled, then runs', async () => {
    await install('i-sched-1', { deviceType: 'android', deviceToken: 'tok-sched-1', channels: ['later'] });
    const at = new Date(Date.now() + 1500).toISOString();
    const res = await t.request('POST', '/push', {
      as: 'master',
      body: { channels: ['later'], data: { alert: 'Soon' }, push_time: at },
    });
    const id = res.headers.get('x-backend-push-status-id')!;
    const now = await t.request('GET', `/classes/_PushStatus/${id}`, { as: 'master' });
    expect(now.json).toMatchObject({
      status: 'scheduled',
      pushTime: { __type: 'Date', iso: at },
      numSent: 0,
    });
    const done = await finished(t, id);
    expect(done).toMatchObject({ status: 'succeeded', numSent: 1 });
    expect(Date.parse(done.startedAt.iso)).toBeGreaterThanOrEqual(Date.parse(at));
  });

  it('a push whose every send fails ends failed, with numFailed, counts per type and the reasons', async () => {
    await install('i-allbad-1', { deviceType: 'ios', deviceToken: 'bad-all-1', channels: ['doomed'] });
    await install('i-allbad-2', { deviceType: 'android', deviceToken: 'bad-all-2', channels: ['doomed'] });
    const res = await t.request('POST', '/push', {
      as: 'master',
      body: { channels: ['doomed'], data: { alert: 'nobody hears this' } },
    });
    expect(res.status, res.text).toBe(200);
    const status = await finished(t, res.headers.get('x-backend-push-status-id')!);
    expect(status).toMatchObject({
      status: 'failed',
      errorMessage: 'No notification was delivered.',
      numSent: 0,
      numFailed: 2,
      failedPerType: { ios: 1, android: 1 },
      failureReasons: { Unregistered: 1, UNREGISTERED: 1 },
    });
    expect(status.sentPerType).toEqual({});
  });

  it('_PushStatus is master only', async () => {
    const res = await t.request('GET', '/classes/_PushStatus', { as: 'rest' });
    expect(res).toMatchObject({
      status: 403,
      json: { code: 119, error: 'unauthorized: master key is required' },
    });
  });
});

describe('scheduled pushes survive a restart', () => {
  it('a push scheduled before a stop runs after the next start', async () => {
    const fake = await startFakePush();
    const dataDir = mkdtempSync(path.join(tmpdir(), 'bds-push-'));
    const options = { ...KEYS, dataDir, port: 0, host: '127.0.0.1', logLevel: 'warn', push: fake.options };
    try {
      const first = await createService(options);
      const { url } = await first.listen(0, '127.0.0.1');
      const headers = { ...credentialHeaders('master'), 'Content-Type': 'application/json' };
      await fetch(`${url}/installations`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ installationId: 'i-restart', deviceType: 'ios', deviceToken: 'tok-restart' }),
      });
      const at = new Date(Date.now() + 2500).toISOString();
      const res = await fetch(`${url}/push`, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          where: { installationId: 'i-restart' },
          data: { alert: 'after restart' },
          push_time: at,
        }),
      });
      const id = res.headers.get('x-backend-push-status-id')!;
      await first.close();
      expect(fake.sends).toEqual([]);
      const second = await createService(options);
      const again = await second.listen(0, '127.0.0.1');
      try {
        const status = await waitFor(async () => {
          const r = await fetch(`${again.url}/classes/_PushStatus/${id}`, { headers });
          const json: any = await r.json();
          return json.status === 'succeeded' ? json : undefined;
        });
        expect(status.numSent).toBe(1);
        expect(fake.sends.map((s) => s.token)).toEqual(['tok-restart']);
      } finally {
        await second.close();
      }
    } finally {
      await fake.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('a stop during a push', () => {
  it('ends the push as failed between two pages instead of holding the stop', async () => {
    const fake = await startFakePush({ delayMs: 200 });
    const dataDir = mkdtempSync(path.join(tmpdir(), 'bds-push-'));
    const options = {
      ...KEYS,
      dataDir,
      port: 0,
      host: '127.0.0.1',
      logLevel: 'warn',
      push: { ...fake.options, batchSize: 1, concurrency: 1 },
    };
    try {
      const service = await createService(options);
      const { url } = await service.listen(0, '127.0.0.1');
      const headers = { ...credentialHeaders('master'), 'Content-Type': 'application/json' };
      for (let i = 0; i < 20; i++) {
        await fetch(`${url}/installations`, {
          method: 'POST',
          headers,
          body: JSON.stringify({
            installationId: `i-stop-${i}`,
            deviceType: 'ios',
            deviceToken: `tok-stop-${i}`,
          }),
        });
      }
      const res = await fetch(`${url}/push`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ where: {}, data: { alert: 'x' } }),
      });
      const id = res.headers.get('x-backend-push-status-id')!;
      await waitFor(async () => (fake.sends.length > 0 ? true : undefined));
      const stopped = Date.now();
      await service.close();
      expect(Date.now() - stopped).toBeLessThan(20 * 200);
      const again = await createService(options);
      try {
        const status = (await again.data.reads.get(
          { caller: MASTER, source: 'system', context: {} },
          '_PushStatus',
          id,
          {},
        )) as Record<string, unknown>;
        expect(status).toMatchObject({
          status: 'failed',
          errorMessage: 'The service stopped while this push was running.',
        });
        expect(status.numSent).toBeLessThan(20);
      } finally {
        await again.close();
      }
    } finally {
      await fake.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('a slow provider', () => {
  let fake: FakePush;
  let t: TestService;
  beforeAll(async () => {
    fake = await startFakePush({ delayMs: 100 });
    t = await startService({ push: { ...fake.options, batchSize: 4, concurrency: 3 } });
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
  });

  it('shows the push running, and never has more sends in flight than the concurrency bound', async () => {
    for (let i = 0; i < 12; i++) {
      const res = await t.request('POST', '/installations', {
        as: 'master',
        body: {
          installationId: `i-slow-${i}`,
          deviceType: i % 2 ? 'ios' : 'android',
          deviceToken: `tok-slow-${i}`,
          channels: ['slow'],
        },
      });
      expect(res.status, res.text).toBe(201);
    }
    fake.resetPeak();
    const res = await t.request('POST', '/push', {
      as: 'master',
      body: { channels: ['slow'], data: { alert: 'tortoise' } },
    });
    const id = res.headers.get('x-backend-push-status-id')!;
    // 12 sends of 100 ms, 3 at a time: the push runs for at least 400 ms.
    const running = await waitFor(async () => {
      const r = await t.request('GET', `/classes/_PushStatus/${id}`, { as: 'master' });
      return r.json.status === 'running' ? r.json : undefined;
    });
    expect(running.startedAt).toMatchObject({ __type: 'Date' });
    expect(running.numSent).toBeLessThan(12);
    expect(running).not.toHaveProperty('finishedAt');
    const done = await finished(t, id);
    expect(done).toMatchObject({ status: 'succeeded', numSent: 12, sentPerType: { ios: 6, android: 6 } });
    expect(fake.peakInFlight).toBeLessThanOrEqual(3);
    expect(fake.peakInFlight).toBeGreaterThanOrEqual(2);
  });
});

describe('an expired push', () => {
  it('a push whose expiration_time has passed when it is due ends failed without sending', async () => {
    const fake = await startFakePush();
    const dataDir = mkdtempSync(path.join(tmpdir(), 'bds-push-'));
    const options = { ...KEYS, dataDir, port: 0, host: '127.0.0.1', logLevel: 'warn', push: fake.options };
    try {
      const first = await createService(options);
      const { url } = await first.listen(0, '127.0.0.1');
      const headers = { ...credentialHeaders('master'), 'Content-Type': 'application/json' };
      await fetch(`${url}/installations`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ installationId: 'i-expired', deviceType: 'ios', deviceToken: 'tok-expired' }),
      });
      const now = Date.now();
      const res = await fetch(`${url}/push`, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          where: { installationId: 'i-expired' },
          data: { alert: 'too late' },
          push_time: new Date(now + 800).toISOString(),
          expiration_time: new Date(now + 1000).toISOString(),
        }),
      });
      expect(res.status).toBe(200);
      const id = res.headers.get('x-backend-push-status-id')!;
      // Stopped while scheduled; started again after its expiry: it is due, and expired.
      await first.close();
      await new Promise((r) => setTimeout(r, Math.max(0, now + 1100 - Date.now())));
      const second = await createService(options);
      const again = await second.listen(0, '127.0.0.1');
      try {
        const status = await waitFor(async () => {
          const r = await fetch(`${again.url}/classes/_PushStatus/${id}`, { headers });
          const json: any = await r.json();
          return json.status === 'failed' ? json : undefined;
        });
        expect(status).toMatchObject({
          status: 'failed',
          errorMessage: 'The push expired before it was sent.',
          numSent: 0,
          numFailed: 0,
        });
        expect(status).not.toHaveProperty('startedAt');
        expect(fake.sends).toEqual([]);
      } finally {
        await second.close();
      }
    } finally {
      await fake.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('resume after a start', () => {
  it('pages through every unfinished push, not only the first page', async () => {
    const fake = await startFakePush();
    const t = await startService({ push: fake.options });
    const ctx = { caller: MASTER, source: 'system' as const, context: {} };
    const row = (status: string, pushTime: string) => ({
      pushTime: { __type: 'Date', iso: pushTime },
      source: 'rest',
      query: '{"installationId":"nobody"}',
      payload: '{"alert":"x"}',
      status,
      numSent: 0,
      numFailed: 0,
      ACL: {},
    });
    const past = new Date(Date.now() - 1000).toISOString();
    const future = new Date(Date.now() + 3_600_000).toISOString();
    const ids: Record<string, string[]> = { running: [], pending: [], scheduled: [] };
    for (const status of ['running', 'pending', 'scheduled', 'running', 'pending', 'running', 'scheduled']) {
      const created = await t.service.data.writes.create(
        ctx,
        '_PushStatus',
        row(status, status === 'scheduled' ? future : past),
      );
      ids[status]!.push(created.objectId);
    }
    // A page of 2: the 7 unfinished pushes take 4 pages.
    const push = new PushService(t.service.data, silentLogger(), 2);
    try {
      await push.resume();
      const statusOf = async (id: string) =>
        (await t.request('GET', `/classes/_PushStatus/${id}`, { as: 'master' })).json;
      for (const id of ids.running!) {
        expect(await statusOf(id)).toMatchObject({
          status: 'failed',
          errorMessage: 'The service stopped while this push was running.',
        });
      }
      for (const id of ids.pending!) expect(await finished(t, id)).toMatchObject({ status: 'succeeded' });
      for (const id of ids.scheduled!) expect((await statusOf(id)).status).toBe('scheduled');
      expect((push as unknown as { timers: Map<string, unknown> }).timers.size).toBe(2);
    } finally {
      await push.close();
      await t.close();
      await fake.close();
    }
  });
});

describe('several instances on one store', () => {
  const ctx = { caller: MASTER, source: 'system' as const, context: {} };
  const statusRow = (status: string) => ({
    pushTime: { __type: 'Date', iso: new Date(Date.now() - 1000).toISOString() },
    source: 'rest',
    query: '{}',
    payload: '{"alert":"once"}',
    status,
    numSent: 0,
    numFailed: 0,
    ACL: {},
  });

  it('two instances armed for the same push send it once (the claim of its status)', async () => {
    const fake = await startFakePush();
    const t = await startService({ push: fake.options });
    const one = new PushService(t.service.data, silentLogger());
    const two = new PushService(t.service.data, silentLogger());
    try {
      for (const i of [1, 2, 3]) {
        const res = await t.request('POST', '/installations', {
          as: 'master',
          body: { installationId: `twice-${i}`, deviceType: 'ios', deviceToken: `tok-twice-${i}` },
        });
        expect(res.status).toBe(201);
      }
      const { objectId } = await t.service.data.writes.create(ctx, '_PushStatus', statusRow('pending'));
      await Promise.all([one.resume(), two.resume()]);
      expect(await finished(t, objectId)).toMatchObject({ status: 'succeeded', numSent: 3, numFailed: 0 });
      await Promise.all([one.close(), two.close()]);
      expect(fake.sends.map((s) => s.token).sort()).toEqual(['tok-twice-1', 'tok-twice-2', 'tok-twice-3']);
    } finally {
      await one.close();
      await two.close();
      await t.close();
      await fake.close();
    }
  });

  it('with Redis, a starting instance fails only running pushes silent for 10 minutes', async () => {
    const { redisAnswers, REDIS_URL, testPrefix } = await import('./helpers/redis.ts');
    if (!(await redisAnswers())) {
      console.log(`push: skipped the several-instances resume test, no Redis answers at ${REDIS_URL}`);
      return;
    }
    const space = testPrefix();
    const fake = await startFakePush();
    const t = await startService({
      push: fake.options,
      redisURL: REDIS_URL,
      redis: { keyPrefix: space.prefix },
    });
    const push = new PushService(t.service.data, silentLogger());
    try {
      const busy = (await t.service.data.writes.create(ctx, '_PushStatus', statusRow('running'))).objectId;
      const silent = (await t.service.data.writes.create(ctx, '_PushStatus', statusRow('running'))).objectId;
      // Its last page was written 11 minutes ago: the instance sending it is gone.
      const schema = t.service.core.schemas.get('_PushStatus')!;
      const longAgo = new Date(Date.now() - STALE_RUNNING_MS - 60_000).toISOString();
      await t.service.core.store.update(schema, {
        objectId: silent,
        updatedAt: longAgo,
        writes: [],
        relations: [],
      });
      await push.resume();
      const statusOf = async (id: string) =>
        (await t.request('GET', `/classes/_PushStatus/${id}`, { as: 'master' })).json;
      expect(await statusOf(busy)).toMatchObject({ status: 'running' });
      expect(await statusOf(silent)).toMatchObject({
        status: 'failed',
        errorMessage: 'The service stopped while this push was running.',
      });
    } finally {
      await push.close();
      await t.close();
      await fake.close();
      await space.cleanup();
    }
  });
});
