import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createService, type Service } from '../src/index.ts';
import { FakeClock } from './helpers/clock.ts';
import { CLOUD_MODULE } from './helpers/cloud.ts';
import { credentialHeaders, KEYS } from './helpers/keys.ts';

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

async function boot(dataDir: string, now: string, extra: Record<string, unknown> = {}): Promise<Instance> {
  const clock = new FakeClock(at(now));
  const service = await createService(
    { ...KEYS, dataDir, cloud: CLOUD_MODULE, logLevel: 'warn', ...extra },
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
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

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
