import { isObject } from '@bds/client/protocol';
import { Cron } from 'croner';
import { CATCH_UP_POLICIES, type CatchUpPolicy, type JobsOptions } from '../config/job-options.ts';
import type { Clock } from '../kernel/clock.ts';
import { BdsError, ErrorCode } from '../kernel/errors.ts';
import type { PendingWrite, WriteTriggers } from '../kernel/events.ts';
import type { Row } from '../kernel/records.ts';

const invalid = (message: string) => new BdsError(ErrorCode.VALIDATION_ERROR, message);

/** Fields of `_JobSchedule` that decide when it runs: changing one recomputes `nextRunAt`. */
const TIMING = ['cron', 'timeZone', 'startAfter', 'enabled'];

const dateValue = (value: unknown): number | undefined => {
  const iso = isObject(value) && value.__type === 'Date' ? value.iso : value;
  const ms = typeof iso === 'string' ? Date.parse(iso) : Number.NaN;
  return Number.isFinite(ms) ? ms : undefined;
};

/** A cron expression of five fields in a zone, or the error the caller gets (142). */
export function parseCron(cron: unknown, timeZone: string, startAfter?: number): Cron {
  if (typeof cron !== 'string' || cron.trim() === '')
    throw invalid('cron is required: five fields, e.g. "*/5 * * * *".');
  try {
    new Intl.DateTimeFormat('en', { timeZone });
  } catch {
    throw invalid(
      `Unknown time zone ${JSON.stringify(timeZone)}: use an IANA name such as "Europe/Paris" or "UTC".`,
    );
  }
  try {
    return new Cron(cron.trim(), {
      mode: '5-part',
      timezone: timeZone,
      ...(startAfter !== undefined ? { startAt: new Date(startAfter) } : {}),
    });
  } catch (err) {
    const reason = (err as Error).message.replace(/^CronPattern: /, '').replace(/\.$/, '');
    throw invalid(
      `Invalid cron expression ${JSON.stringify(cron)}: ${reason}. Use five fields: minute hour day-of-month month day-of-week.`,
    );
  }
}

/** A tick the scheduler reaches later than this after its time was missed (no instance ran it then). */
export const LATE_MS = 60_000;

const policyOf = (schedule: Row, fallback: CatchUpPolicy): CatchUpPolicy =>
  CATCH_UP_POLICIES.includes(schedule.catchUp as CatchUpPolicy)
    ? (schedule.catchUp as CatchUpPolicy)
    : fallback;

/**
 * The ticks a pass at `now` runs for a schedule whose next tick `due` has come, oldest first. The
 * row's `catchUp` (else the service's): `once` runs one (for the latest tick), `each` one per tick
 * due (the latest `catchUpMax`), `skip` only a tick reached on time (at most LATE_MS after it).
 */
export function ticksToRun(
  schedule: Row,
  due: number,
  now: number,
  options: Pick<JobsOptions, 'catchUp' | 'catchUpMax'>,
): number[] {
  const policy = policyOf(schedule, options.catchUp);
  const cron = parseCron(
    schedule.cron,
    (schedule.timeZone as string) || 'UTC',
    dateValue(schedule.startAfter),
  );
  // previousRuns answers the runs before its reference, one in the same second included: now's too.
  const ticks = cron
    .previousRuns(policy === 'each' ? options.catchUpMax : 1, new Date(now + 1))
    .map((d) => d.getTime())
    .filter((t) => t >= due && t <= now)
    .reverse();
  if (ticks.length === 0) ticks.push(due);
  if (policy === 'skip') return ticks.filter((t) => now - t <= LATE_MS).slice(-1);
  return policy === 'once' ? ticks.slice(-1) : ticks;
}

/** The first tick of a schedule strictly after `after` (ms), or null when there is none. */
export function nextTick(schedule: Row, after: number): number | null {
  const cron = parseCron(
    schedule.cron,
    (schedule.timeZone as string) || 'UTC',
    dateValue(schedule.startAfter),
  );
  const next = cron.nextRun(new Date(after));
  return next ? next.getTime() : null;
}

/**
 * The rules of `_JobSchedule` rows, as a before-write trigger of the pipeline: a known job, a
 * valid five-field cron expression and time zone, params an object, `catchUp` (optional) one of
 * the policies; `timeZone` defaults to UTC,
 * `enabled` to true. `lastRunAt` and `nextRunAt` are the service's: a caller's values are
 * dropped, and `nextRunAt` is computed again whenever the timing changes. The scheduler's own
 * writes (source `system`) pass as they are.
 */
export class ScheduleRules implements WriteTriggers {
  constructor(
    private readonly jobExists: (name: string) => boolean,
    private readonly clock: Clock,
  ) {}

  hasBefore(className: string, op: PendingWrite['op']): boolean {
    return className === '_JobSchedule' && op !== 'delete';
  }

  async before(write: PendingWrite): Promise<Record<string, unknown> | undefined> {
    if (write.source === 'system' || !write.body) return undefined;
    const body: Record<string, unknown> = { ...write.body };
    delete body.lastRunAt;
    delete body.nextRunAt;
    const isDelete = (v: unknown) => isObject(v) && v.__op === 'Delete';
    const merged: Row = { ...(write.original ?? {}) };
    for (const [key, value] of Object.entries(body)) {
      if (isDelete(value)) delete merged[key];
      else merged[key] = value;
    }
    if (write.op === 'create' || 'timeZone' in body) {
      if (merged.timeZone === undefined || merged.timeZone === null || isDelete(body.timeZone))
        body.timeZone = merged.timeZone = 'UTC';
    }
    if (write.op === 'create' && merged.enabled === undefined) body.enabled = merged.enabled = true;
    if (typeof merged.jobName !== 'string' || merged.jobName === '') throw invalid('jobName is required.');
    if (!this.jobExists(merged.jobName))
      throw invalid(`Unknown job: "${merged.jobName}". Define it with cloud.job().`);
    if (typeof merged.timeZone !== 'string') throw invalid('timeZone must be an IANA time zone name.');
    if (typeof merged.enabled !== 'boolean') throw invalid('enabled must be true or false.');
    if (merged.params !== undefined && merged.params !== null && !isObject(merged.params)) {
      throw invalid('params must be an object.');
    }
    if (merged.catchUp !== undefined && !CATCH_UP_POLICIES.includes(merged.catchUp as CatchUpPolicy)) {
      throw invalid('catchUp must be "once", "each" or "skip".');
    }
    if (merged.startAfter !== undefined && dateValue(merged.startAfter) === undefined) {
      throw invalid('startAfter must be a date.');
    }
    parseCron(merged.cron, merged.timeZone, dateValue(merged.startAfter));
    if (write.op === 'create' || TIMING.some((field) => field in body)) {
      // Paused ticks never run later: a schedule (re)starts from now.
      const next = merged.enabled ? nextTick(merged, this.clock.now()) : null;
      body.nextRunAt =
        next === null ? { __op: 'Delete' } : { __type: 'Date', iso: new Date(next).toISOString() };
      if (write.op === 'create' && next === null) delete body.nextRunAt;
    }
    return body;
  }
}
