import { messageOf } from '../cloud/invoke.ts';
import { JOBS_DEFAULTS, type JobsOptions } from '../config/job-options.ts';
import type { Data } from '../data/data.ts';
import { MASTER } from '../kernel/caller.ts';
import type { Clock } from '../kernel/clock.ts';
import { type Ctx, ctxOf } from '../kernel/context.ts';
import { BdsError, ErrorCode } from '../kernel/errors.ts';
import type { Logger } from '../kernel/log.ts';
import type { Row } from '../kernel/records.ts';
import { parseWhere } from '../query/parse.ts';
import type { RedisLink } from '../redis/link.ts';
import type { JobRunner } from './runner.ts';
import { nextTick, ticksToRun } from './schedules.ts';

/** The longest the scheduler sleeps: it then looks again (for schedules changed by another instance). */
export const MAX_SLEEP_MS = 60_000;

const iso = (ms: number) => new Date(ms).toISOString();
const dateOf = (value: unknown): number | undefined => {
  const text = (value as { iso?: unknown } | undefined)?.iso;
  const ms = typeof text === 'string' ? Date.parse(text) : Number.NaN;
  return Number.isFinite(ms) ? ms : undefined;
};

/**
 * What a claim does besides moving the schedule on: the tick it records as `lastRunAt` (when the
 * claim runs one; else `lastRunAt` stays) and the runs' `_JobStatus` rows, written in the same
 * transaction as the claim, so no claimed tick is without its record.
 */
export interface ClaimWork {
  /** The tick run last (default: the tick claimed); null: the claim runs none. */
  lastRunAt?: number | null;
  record?: () => Promise<void>;
}

/**
 * The seam for running schedules on several instances: whoever claims a tick runs it, and a
 * tick can be claimed once. Claiming also moves the schedule on (`lastRunAt` = the tick, or
 * `work.lastRunAt`; `nextRunAt` = the next one) and writes `work.record`, in the same step.
 */
export interface TickLock {
  claim(schedule: Row, tick: number, next: number | null, work?: ClaimWork): Promise<boolean>;
}

/**
 * A tick lock in the store every instance shares: a compare-and-set through the write pipeline
 * that moves `nextRunAt` on only while it still holds the tick. Two instances (or two passes
 * of one) that see the same due tick cannot both win it. (RedisTickLock puts a Redis lock in
 * front of it.)
 */
export class StoreTickLock implements TickLock {
  private readonly system: Ctx = ctxOf(MASTER, 'system');

  constructor(private readonly data: Data) {}

  async claim(schedule: Row, tick: number, next: number | null, work: ClaimWork = {}): Promise<boolean> {
    const stillDue = parseWhere({ nextRunAt: { __type: 'Date', iso: iso(tick) } });
    const lastRunAt = work.lastRunAt === undefined ? tick : work.lastRunAt;
    try {
      await this.data.core.store.transaction(async () => {
        await this.data.writes.update(
          this.system,
          '_JobSchedule',
          schedule.objectId as string,
          {
            ...(lastRunAt === null ? {} : { lastRunAt: { __type: 'Date', iso: iso(lastRunAt) } }),
            nextRunAt: next === null ? { __op: 'Delete' } : { __type: 'Date', iso: iso(next) },
          },
          { expect: stillDue },
        );
        await work.record?.();
      });
      return true;
    } catch (err) {
      if (err instanceof BdsError && err.code === ErrorCode.OBJECT_NOT_FOUND) return false;
      throw err;
    }
  }
}

/** How long a tick's Redis lock is kept: far longer than instances' clocks or passes differ. */
const TICK_LOCK_MS = 10 * 60_000;

/**
 * With `redisURL`: a tick is claimed in Redis first (SET NX PX, one key per schedule and tick), so
 * of the instances that see a tick due at the same moment only one goes on to the store; the winner
 * then moves the schedule on with the store's compare-and-set (StoreTickLock), which stays the
 * guarantee when Redis does not answer (then every instance asks the store, as without Redis).
 */
export class RedisTickLock implements TickLock {
  constructor(
    private readonly link: RedisLink,
    private readonly store: TickLock,
  ) {}

  async claim(schedule: Row, tick: number, next: number | null, work?: ClaimWork): Promise<boolean> {
    const key = this.link.key('tick', String(schedule.objectId), String(tick));
    try {
      if ((await this.link.client.set(key, '1', 'PX', TICK_LOCK_MS, 'NX')) !== 'OK') return false;
    } catch (err) {
      this.link.unavailable('scheduled ticks', err);
      return this.store.claim(schedule, tick, next, work);
    }
    try {
      return await this.store.claim(schedule, tick, next, work);
    } catch (err) {
      // The store failed: the tick is still due, and the next pass (here or elsewhere) may take it.
      await this.link.client.del(key).catch(() => {});
      throw err;
    }
  }
}

/**
 * Runs `_JobSchedule` rows. Each enabled row holds its next tick (`nextRunAt`, in the store, so
 * it survives a restart). When the clock reaches it the scheduler claims the tick (TickLock),
 * which moves `nextRunAt` to the first tick after now, and starts the job with a `_JobStatus`
 * row (source `schedule`), written in the claim's transaction. A tick is claimed once, so it never
 * runs twice. Ticks that fell due while the service was down follow the catch-up policy
 * (ticksToRun): once at start by default.
 */
export class Scheduler {
  private timer: unknown;
  private pass: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  private unsubscribe: (() => void) | undefined;
  private readonly system: Ctx = ctxOf(MASTER, 'system');
  /** The service's catch-up policy (`jobs.catchUp`, `jobs.catchUpMax`); a row's `catchUp` overrides it. */
  catchUp: Pick<JobsOptions, 'catchUp' | 'catchUpMax'> = { ...JOBS_DEFAULTS };

  constructor(
    private readonly data: Data,
    private readonly runner: JobRunner,
    private readonly lock: TickLock,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  start(): void {
    // A schedule written by anyone but the scheduler may have moved its next tick: look again.
    this.unsubscribe = this.data.core.events.subscribe(
      (event) => {
        if (event.className === '_JobSchedule' && event.source !== 'system') this.poke();
      },
      { name: 'job scheduler', phase: 'sideEffects' },
    );
    this.poke();
  }

  /** Runs a pass now (one at a time; a poke during a pass makes another pass after it). */
  poke(): void {
    if (this.stopped) return;
    if (this.pass) {
      this.again = true;
      return;
    }
    this.pass = this.runDue()
      .catch((err: unknown) => this.log.error({ err: messageOf(err) }, 'scheduler pass failed'))
      .finally(() => {
        this.pass = null;
        if (this.again) {
          this.again = false;
          this.poke();
        }
      });
  }

  private async schedules(): Promise<Row[]> {
    const rows: Row[] = [];
    for (let skip = 0; ; skip += 1000) {
      const { results } = await this.data.reads.find(this.system, '_JobSchedule', {
        where: { enabled: true },
        limit: 1000,
        skip,
        order: 'createdAt',
      });
      rows.push(...results);
      if (results.length < 1000) return rows;
    }
  }

  private async runDue(): Promise<void> {
    const now = this.clock.now();
    let earliest = Number.POSITIVE_INFINITY;
    for (const row of await this.schedules()) {
      if (this.stopped) return;
      const due = dateOf(row.nextRunAt);
      if (due === undefined) continue;
      if (due > now) {
        earliest = Math.min(earliest, due);
        continue;
      }
      let following: number | null;
      let runs: number[];
      try {
        following = nextTick(row, now);
        runs = ticksToRun(row, due, now, this.catchUp);
      } catch {
        following = null;
        runs = [due];
      }
      const launches: Array<() => void> = [];
      const record = async () => {
        launches.length = 0;
        for (const _tick of runs) {
          const run = await this.runner.record(
            String(row.jobName),
            (row.params as Record<string, unknown>) ?? {},
            MASTER,
            { source: 'schedule', scheduleId: row.objectId as string },
          );
          launches.push(run.launch);
        }
      };
      if (await this.lock.claim(row, due, following, { lastRunAt: runs.at(-1) ?? null, record })) {
        for (const launch of launches) launch();
      }
      if (following !== null) earliest = Math.min(earliest, following);
    }
    this.arm(earliest);
  }

  private arm(at: number): void {
    if (this.stopped) return;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    const delay = Math.min(Math.max(at - this.clock.now(), 0), MAX_SLEEP_MS);
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      this.poke();
    }, delay);
  }

  /** Waits for the pass under way (and the ones it asked for). */
  async idle(): Promise<void> {
    while (this.pass) await this.pass;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    await this.idle();
  }
}
