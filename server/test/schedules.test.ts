import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createService, type Service } from '../src/index.ts';
import { LEASE_MS, STOPPED_RUN } from '../src/jobs/runner.ts';
import { StoreTickLock } from '../src/jobs/scheduler.ts';
import { FakeClock } from './helpers/clock.ts';
import { CLOUD_MODULE } from './helpers/cloud.ts';
import { credentialHeaders, KEYS } from './helpers/keys.ts';
import { freshSchema, TEST_DATABASE_URL } from './helpers/service.ts';

const at = (iso: string) => Date.parse(iso);
const date = (iso: string) => ({ __type: 'Date', iso });

interface Instance {
  service: Service;
  clock: FakeClock;
  call(
    method: string,
    p: string,
    body?: unknown,
    as?: 'master' | 'rest',
  ): Promise<{ status: number; json: any }>;
  /** Moves the clock and waits until the scheduler and the jobs it started are done. */
  moveTo(iso: string): Promise<void>;
  settle(): Promise<void>;
}

/** In the PostgreSQL run, one schema per data dir: instances booted on one dir share a store. */
const schemas = new Map<string, Promise<{ uri: string; drop(): Promise<void> }>>();
const storeOf = async (dataDir: string): Promise<Record<string, unknown>> => {
  if (!TEST_DATABASE_URL) return {};
  if (!schemas.has(dataDir)) schemas.set(dataDir, freshSchema(TEST_DATABASE_URL));
  return { databaseURI: (await schemas.get(dataDir)!).uri, databasePoolSize: 4 };
};

async function boot(dataDir: string, now: string, extra: Record<string, unknown> = {}): Promise<Instance> {
  const clock = new FakeClock(at(now));
  const service = await createService(
    { ...KEYS, dataDir, cloud: CLOUD_MODULE, logLevel: 'warn', ...(await storeOf(dataDir)), ...extra },
    { clock },
  );
  const { url } = await service.listen(0, '127.0.0.1');
  const settle = async () => {
    await service.jobs.scheduler.idle();
    await service.jobs.runner.idle();
  };
  return {
    service,
    clock,
    settle,
    async call(method, p, body, as = 'master') {
      const res = await fetch(`${url}${p}`, {
        method,
        headers: { ...credentialHeaders(as), 'Content-Type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, json: await res.json() };
    },
    async moveTo(iso) {
      await settle();
      // Timers fire on the way; work they start may arm a timer that is due already.
      do {
        clock.set(at(iso));
        await settle();
      } while (clock.hasDue());
    },
  };
}

const ticks = async (i: Instance) =>
  (await i.call('GET', `/classes/Tick?${new URLSearchParams({ count: '1', limit: '0' })}`)).json.count ?? 0;
const statuses = async (i: Instance) =>
  (
    await i.call(
      'GET',
      `/classes/_JobStatus?${new URLSearchParams({ where: JSON.stringify({ source: 'schedule' }), order: 'createdAt' })}`,
    )
  ).json.results;

let dataDir: string;
beforeAll(() => {
  dataDir = mkdtempSync(path.join(tmpdir(), 'bds-schedules-'));
});
afterAll(async () => {
  for (const schema of schemas.values()) await (await schema).drop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('_JobSchedule rows are checked (142) and get their next run from the service', () => {
  let i: Instance;
  beforeAll(async () => {
    i = await boot(path.join(dataDir, 'rules'), '2026-01-01T10:00:30.000Z');
  });
  afterAll(() => i.service.close());

  const refusals: Array<[string, Record<string, unknown>, string]> = [
    [
      'an unknown job',
      { jobName: 'nope', cron: '* * * * *' },
      'Unknown job: "nope". Define it with cloud.job().',
    ],
    ['a missing job name', { cron: '* * * * *' }, 'jobName is required.'],
    ['a missing cron', { jobName: 'tick' }, 'cron is required: five fields, e.g. "*/5 * * * *".'],
    [
      'six fields',
      { jobName: 'tick', cron: '0 * * * * *' },
      `Invalid cron expression "0 * * * * *": mode '5-part' requires exactly 5 parts, but pattern '0 * * * * *' has 6 parts. Use five fields: minute hour day-of-month month day-of-week.`,
    ],
    [
      'a value out of range',
      { jobName: 'tick', cron: '61 * * * *' },
      'Invalid cron expression "61 * * * *": Invalid value for minute: 61. Use five fields: minute hour day-of-month month day-of-week.',
    ],
    [
      'an unknown zone',
      { jobName: 'tick', cron: '* * * * *', timeZone: 'Mars/Olympus' },
      'Unknown time zone "Mars/Olympus": use an IANA name such as "Europe/Paris" or "UTC".',
    ],
    [
      'a catch-up policy that is not one',
      { jobName: 'tick', cron: '* * * * *', catchUp: 'sometimes' },
      'catchUp must be "once", "each" or "skip".',
    ],
    [
      'params that are not an object',
      { jobName: 'tick', cron: '* * * * *', params: [1] },
      'params must be an object.',
    ],
  ];
  for (const [name, body, error] of refusals) {
    it(`refuses ${name}`, async () => {
      const res = await i.call('POST', '/classes/_JobSchedule', body);
      expect(res.status).toBe(400);
      expect(res.json).toEqual({ code: 142, error });
    });
  }

  it('nothing refused was stored; the class is master-only', async () => {
    expect((await i.call('GET', '/classes/_JobSchedule')).json.results).toEqual([]);
    const res = await i.call('POST', '/classes/_JobSchedule', { jobName: 'tick', cron: '* * * * *' }, 'rest');
    expect(res.status).toBe(403);
    expect(res.json.code).toBe(119);
  });

  it('defaults timeZone and enabled, computes nextRunAt in the zone, ignores a caller nextRunAt', async () => {
    const res = await i.call('POST', '/classes/_JobSchedule', {
      jobName: 'tick',
      cron: '0 9 * * *',
      timeZone: 'Europe/Paris',
      nextRunAt: date('2030-01-01T00:00:00.000Z'),
    });
    expect(res.status).toBe(201);
    const row = (await i.call('GET', `/classes/_JobSchedule/${res.json.objectId}`)).json;
    // 09:00 in Paris in January is 08:00 UTC; 08:00 UTC on Jan 1 has passed at 10:00:30, so Jan 2.
    expect(row).toMatchObject({
      enabled: true,
      timeZone: 'Europe/Paris',
      nextRunAt: date('2026-01-02T08:00:00.000Z'),
    });
    const utc = await i.call('POST', '/classes/_JobSchedule', { jobName: 'tick', cron: '*/15 * * * *' });
    expect((await i.call('GET', `/classes/_JobSchedule/${utc.json.objectId}`)).json).toMatchObject({
      timeZone: 'UTC',
      nextRunAt: date('2026-01-01T10:15:00.000Z'),
    });
    const bad = await i.call('PUT', `/classes/_JobSchedule/${utc.json.objectId}`, { cron: 'every minute' });
    expect(bad.json.code).toBe(142);
  });
});

describe('the service runs schedules: on time, once per tick, across a restart', () => {
  let first: Instance;
  let scheduleId: string;
  const dir = () => path.join(dataDir, 'runs');

  it('runs at the tick, not before, and records the run', async () => {
    first = await boot(dir(), '2026-01-01T10:00:30.000Z');
    const res = await first.call('POST', '/classes/_JobSchedule', {
      jobName: 'tick',
      cron: '*/5 * * * *',
      params: { label: 'five' },
    });
    scheduleId = res.json.objectId;
    await first.moveTo('2026-01-01T10:04:59.999Z');
    expect(await ticks(first)).toBe(0);
    await first.moveTo('2026-01-01T10:05:00.000Z');
    expect(await ticks(first)).toBe(1);
    const [status] = await statuses(first);
    expect(status).toMatchObject({
      jobName: 'tick',
      source: 'schedule',
      scheduleId,
      status: 'succeeded',
      params: { label: 'five' },
    });
    expect((await first.call('GET', `/classes/_JobSchedule/${scheduleId}`)).json).toMatchObject({
      lastRunAt: date('2026-01-01T10:05:00.000Z'),
      nextRunAt: date('2026-01-01T10:10:00.000Z'),
    });
    // More passes over the same instant (a write elsewhere, the timer) never run the tick again.
    first.service.jobs.scheduler.poke();
    first.service.jobs.scheduler.poke();
    await first.moveTo('2026-01-01T10:07:00.000Z');
    expect(await ticks(first)).toBe(1);
    await first.service.close();
  });

  it('a tick that fell due while the service was down runs once at start, then on time', async () => {
    const second = await boot(dir(), '2026-01-01T10:12:00.000Z');
    await second.settle();
    expect(await ticks(second)).toBe(2);
    expect((await second.call('GET', `/classes/_JobSchedule/${scheduleId}`)).json).toMatchObject({
      lastRunAt: date('2026-01-01T10:10:00.000Z'),
      nextRunAt: date('2026-01-01T10:15:00.000Z'),
    });
    await second.moveTo('2026-01-01T10:15:00.000Z');
    expect(await ticks(second)).toBe(3);
    await second.service.close();
  });

  it('a restart between ticks runs nothing extra', async () => {
    const third = await boot(dir(), '2026-01-01T10:16:00.000Z');
    await third.settle();
    expect(await ticks(third)).toBe(3);
    await third.moveTo('2026-01-01T10:20:00.000Z');
    expect(await ticks(third)).toBe(4);
    expect((await statuses(third)).map((s: any) => s.status)).toEqual([
      'succeeded',
      'succeeded',
      'succeeded',
      'succeeded',
    ]);
    await third.service.close();
  });

  it('two instances on one store at the same tick: it runs once (the tick lock)', async () => {
    const a = await boot(dir(), '2026-01-01T10:24:00.000Z');
    const b = await boot(dir(), '2026-01-01T10:24:00.000Z');
    try {
      a.clock.set(at('2026-01-01T10:25:00.000Z'));
      b.clock.set(at('2026-01-01T10:25:00.000Z'));
      await Promise.all([a.settle(), b.settle()]);
      expect(await ticks(a)).toBe(5);
    } finally {
      await a.service.close();
      await b.service.close();
    }
  });

  it('a paused schedule does not run; enabled again, it starts from now', async () => {
    const i = await boot(dir(), '2026-01-01T10:26:00.000Z');
    try {
      await i.call('PUT', `/classes/_JobSchedule/${scheduleId}`, { enabled: false });
      expect((await i.call('GET', `/classes/_JobSchedule/${scheduleId}`)).json.nextRunAt).toBeUndefined();
      await i.moveTo('2026-01-01T10:41:00.000Z');
      expect(await ticks(i)).toBe(5);
      await i.call('PUT', `/classes/_JobSchedule/${scheduleId}`, { enabled: true });
      expect((await i.call('GET', `/classes/_JobSchedule/${scheduleId}`)).json.nextRunAt).toEqual(
        date('2026-01-01T10:45:00.000Z'),
      );
      await i.moveTo('2026-01-01T10:45:00.000Z');
      expect(await ticks(i)).toBe(6);
    } finally {
      await i.service.close();
    }
  });

  it('jobs.runSchedules: false leaves schedules to other instances', async () => {
    const i = await boot(dir(), '2026-01-01T10:52:00.000Z', { jobs: { runSchedules: false } });
    try {
      await i.moveTo('2026-01-01T11:00:00.000Z');
      expect(await ticks(i)).toBe(6);
    } finally {
      await i.service.close();
    }
  });
});

const ticksOf = async (i: Instance, label: string) =>
  (
    await i.call(
      'GET',
      `/classes/Tick?${new URLSearchParams({ where: JSON.stringify({ at: label }), count: '1', limit: '0' })}`,
    )
  ).json.count;

describe('ticks missed while no instance ran the schedules follow the catch-up policy (jobs.catchUp)', () => {
  const dir = () => path.join(dataDir, 'catch-up');
  const ids: Record<string, string> = {};
  const row = async (i: Instance, label: string) =>
    (await i.call('GET', `/classes/_JobSchedule/${ids[label]}`)).json;
  const counts = async (i: Instance) => ({
    default: await ticksOf(i, 'default'),
    each: await ticksOf(i, 'each'),
    skip: await ticksOf(i, 'skip'),
  });

  it('default once: one run for all the missed ticks; a row’s each: one per tick (the latest catchUpMax); a row’s skip: none', async () => {
    const i = await boot(dir(), '2026-01-01T10:00:30.000Z', { jobs: { catchUpMax: 3 } });
    for (const [label, catchUp] of [
      ['default', undefined],
      ['each', 'each'],
      ['skip', 'skip'],
    ] as const) {
      const res = await i.call('POST', '/classes/_JobSchedule', {
        jobName: 'tick',
        cron: '*/5 * * * *',
        params: { label },
        ...(catchUp ? { catchUp } : {}),
      });
      expect(res.status).toBe(201);
      ids[label] = res.json.objectId;
    }
    await i.moveTo('2026-01-01T10:05:00.000Z');
    expect(await counts(i)).toEqual({ default: 1, each: 1, skip: 1 });
    await i.service.close();

    // Down from 10:05 to 10:31: the ticks 10:10 to 10:30 (five) were missed.
    const back = await boot(dir(), '2026-01-01T10:31:30.000Z', { jobs: { catchUpMax: 3 } });
    await back.settle();
    expect(await counts(back)).toEqual({ default: 2, each: 4, skip: 1 });
    expect(await row(back, 'default')).toMatchObject({
      lastRunAt: date('2026-01-01T10:30:00.000Z'),
      nextRunAt: date('2026-01-01T10:35:00.000Z'),
    });
    expect(await row(back, 'each')).toMatchObject({ lastRunAt: date('2026-01-01T10:30:00.000Z') });
    // Skipped ticks never ran: the last run stays the one before the stop.
    expect(await row(back, 'skip')).toMatchObject({
      lastRunAt: date('2026-01-01T10:05:00.000Z'),
      nextRunAt: date('2026-01-01T10:35:00.000Z'),
    });
    // Each run its _JobStatus row.
    const runs = await statuses(back);
    expect(runs.filter((r: any) => r.scheduleId === ids.each)).toHaveLength(4);
    // Then every schedule runs on time.
    await back.moveTo('2026-01-01T10:35:00.000Z');
    expect(await counts(back)).toEqual({ default: 3, each: 5, skip: 2 });
    await back.service.close();
  });

  it('skip: a tick reached within a minute of its time is on time and runs', async () => {
    // Down from 10:35 to 10:40:45: the 10:40 tick is 45 s late.
    const i = await boot(dir(), '2026-01-01T10:40:45.000Z');
    await i.settle();
    expect(await counts(i)).toEqual({ default: 4, each: 6, skip: 3 });
    await i.service.close();
  });

  it('the service default skip, then each with its bound; a row’s policy still wins', async () => {
    // Down from 10:40 to 10:58: 10:45, 10:50, 10:55 missed.
    const skip = await boot(dir(), '2026-01-01T10:58:00.000Z', { jobs: { catchUp: 'skip' } });
    await skip.settle();
    // each (the row's own, under the default bound, 24): all three.
    expect(await counts(skip)).toEqual({ default: 4, each: 9, skip: 3 });
    await skip.service.close();
    // Down from 10:58 to 11:16:30: 11:00 to 11:15 missed (four).
    const each = await boot(dir(), '2026-01-01T11:16:30.000Z', { jobs: { catchUp: 'each', catchUpMax: 2 } });
    await each.settle();
    expect(await counts(each)).toEqual({ default: 6, each: 11, skip: 3 });
    await each.service.close();
  });
});

describe('every run leaves a record: claimed and recorded at once, a stopped instance’s runs marked failed', () => {
  const dir = () => path.join(dataDir, 'records');
  let i: Instance;
  let scheduleId: string;
  const jobRows = async (inst: Instance, where: Record<string, unknown> = {}) =>
    (
      await inst.call(
        'GET',
        `/classes/_JobStatus?${new URLSearchParams({ where: JSON.stringify(where), order: 'createdAt' })}`,
      )
    ).json.results;

  /** Moves the clock until the scheduler has claimed what is due, without waiting for the jobs. */
  const claimAt = async (inst: Instance, iso: string) => {
    do {
      inst.clock.set(at(iso));
      await inst.service.jobs.scheduler.idle();
    } while (inst.clock.hasDue());
  };

  it('the claim of a tick and its _JobStatus row commit together: a record that fails undoes the claim', async () => {
    i = await boot(dir(), '2026-01-01T10:00:30.000Z', { shutdownGraceMs: 0 });
    const res = await i.call('POST', '/classes/_JobSchedule', {
      jobName: 'waitABit',
      cron: '*/5 * * * *',
      params: { ms: 400 },
    });
    scheduleId = res.json.objectId;
    const schedule = (await i.call('GET', `/classes/_JobSchedule/${scheduleId}`)).json;
    const lock = new StoreTickLock(i.service.data);
    const tick = at('2026-01-01T10:05:00.000Z');
    await expect(
      lock.claim(schedule, tick, at('2026-01-01T10:10:00.000Z'), {
        record: async () => {
          await i.service.jobs.runner.record('waitABit', {}, { kind: 'master' } as never, {
            source: 'schedule',
            scheduleId,
          });
          throw new Error('the instance stopped here');
        },
      }),
    ).rejects.toThrow('the instance stopped here');
    // Neither the claim nor the row: the tick is still due.
    expect((await i.call('GET', `/classes/_JobSchedule/${scheduleId}`)).json).toMatchObject({
      nextRunAt: date('2026-01-01T10:05:00.000Z'),
    });
    expect((await i.call('GET', `/classes/_JobSchedule/${scheduleId}`)).json.lastRunAt).toBeUndefined();
    expect(await jobRows(i)).toEqual([]);
  });

  it('a run whose instance stops is failed, with the reason, once its lease has passed', async () => {
    // The tick is claimed and recorded running (with its lease); the instance stops mid-run.
    await claimAt(i, '2026-01-01T10:05:00.000Z');
    const [running] = await jobRows(i);
    expect(running).toMatchObject({
      jobName: 'waitABit',
      source: 'schedule',
      scheduleId,
      status: 'running',
      startedAt: date('2026-01-01T10:05:00.000Z'),
      leaseUntil: date(new Date(at('2026-01-01T10:05:00.000Z') + LEASE_MS).toISOString()),
    });
    await i.service.close();

    // Back 30 s later: the lease (60 s) has not passed, the run may be another instance's.
    const back = await boot(dir(), '2026-01-01T10:05:30.000Z');
    await back.settle();
    expect((await jobRows(back))[0]).toMatchObject({ objectId: running.objectId, status: 'running' });
    // The instance looks again every lease: at 10:06:30 the lease (10:06:00) has passed.
    await back.moveTo('2026-01-01T10:06:30.000Z');
    const [failed] = await jobRows(back);
    expect(failed).toMatchObject({
      objectId: running.objectId,
      status: 'failed',
      message: STOPPED_RUN,
      finishedAt: date('2026-01-01T10:06:30.000Z'),
    });
    expect(failed.message).toBe('The instance running this job stopped before it finished.');
    expect(failed.leaseUntil).toBeUndefined();
    await back.service.close();
  });

  it('found at start: a service started after the lease passed fails the run at once', async () => {
    const first = await boot(dir(), '2026-01-01T10:09:00.000Z', { shutdownGraceMs: 0 });
    await claimAt(first, '2026-01-01T10:10:00.000Z');
    const rows = await jobRows(first, { status: 'running' });
    expect(rows).toHaveLength(1);
    await first.service.close();
    const next = await boot(dir(), '2026-01-01T10:14:00.000Z');
    await next.settle();
    expect((await jobRows(next, { objectId: rows[0].objectId }))[0]).toMatchObject({
      status: 'failed',
      message: STOPPED_RUN,
      finishedAt: date('2026-01-01T10:14:00.000Z'),
    });
    await next.service.close();
  });

  it('an instance that lives renews the lease of its runs: a long run is not failed', async () => {
    const live = await boot(dir(), '2026-01-01T11:00:00.000Z');
    try {
      const started = await live.call('POST', '/jobs/waitABit', { ms: 1500 });
      expect(started.status).toBe(200);
      const where = { jobName: 'waitABit', source: 'api' };
      // 20 s on, the lease is renewed to 20 s + 60 s.
      live.clock.set(at('2026-01-01T11:00:20.000Z'));
      await expect
        .poll(async () => (await jobRows(live, where))[0].leaseUntil)
        .toEqual(date('2026-01-01T11:01:20.000Z'));
      // 61 s on, past the first lease: the instance's own look finds the run alive.
      live.clock.set(at('2026-01-01T11:01:01.000Z'));
      await live.service.jobs.scheduler.idle();
      expect((await jobRows(live, where))[0].status).toBe('running');
      await live.settle();
      const [done] = await jobRows(live, where);
      expect(done).toMatchObject({ status: 'succeeded', message: 'waited' });
      expect(done.leaseUntil).toBeUndefined();
    } finally {
      await live.service.close();
    }
  });
});

describe('a start date (startAfter): no tick before it, missed ticks included', () => {
  const dir = () => path.join(dataDir, 'start');

  it('runs from the start date on, and catches up only ticks at or after it', async () => {
    const i = await boot(dir(), '2026-01-01T10:00:30.000Z', { jobs: { catchUp: 'each' } });
    const res = await i.call('POST', '/classes/_JobSchedule', {
      jobName: 'tick',
      cron: '*/5 * * * *',
      params: { label: 'late-start' },
      startAfter: date('2026-01-01T10:30:00.000Z'),
    });
    expect(res.status).toBe(201);
    expect((await i.call('GET', `/classes/_JobSchedule/${res.json.objectId}`)).json.nextRunAt).toEqual(
      date('2026-01-01T10:30:00.000Z'),
    );
    await i.moveTo('2026-01-01T10:29:59.999Z');
    expect(await ticksOf(i, 'late-start')).toBe(0);
    await i.service.close();
    // Down from 10:29 to 10:47: of the missed ticks, 10:30 to 10:45 (four) are at or after the start.
    const back = await boot(dir(), '2026-01-01T10:47:00.000Z', { jobs: { catchUp: 'each' } });
    await back.settle();
    expect(await ticksOf(back, 'late-start')).toBe(4);
    await back.service.close();
  });
});
