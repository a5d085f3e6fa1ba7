import { type Invoker, messageOf } from '../cloud/invoke.ts';
import type { CloudRegistry } from '../cloud/registry.ts';
import type { Data } from '../data/data.ts';
import { type Caller, MASTER } from '../kernel/caller.ts';
import type { Clock } from '../kernel/clock.ts';
import { type Ctx, ctxOf } from '../kernel/context.ts';
import { BdsError, ErrorCode } from '../kernel/errors.ts';
import type { Logger } from '../kernel/log.ts';
import { parseWhere } from '../query/parse.ts';

export interface JobOrigin {
  source: 'api' | 'schedule';
  scheduleId?: string;
}

const date = (ms: number) => ({ __type: 'Date', iso: new Date(ms).toISOString() });

/** A job no cloud module registered (the incumbent's text). */
export const INVALID_JOB = 'Invalid job.';

/** The `message` of a run whose instance stopped (crashed, was killed) before the run finished. */
export const STOPPED_RUN = 'The instance running this job stopped before it finished.';

/**
 * How long a `running` row's lease (`leaseUntil`) lasts. The instance running the job renews it
 * every third of this; a row whose lease has passed belongs to an instance that stopped.
 */
export const LEASE_MS = 60_000;

/** `running` rows whose lease passed, marked failed per look. */
const REAP_PAGE = 100;

/** A `_JobStatus` row written; `launch` runs the job (after the transaction that wrote the row). */
export interface RecordedRun {
  objectId: string;
  launch(): void;
}

/**
 * Runs jobs in the background. Each run is a `_JobStatus` row (written through the pipeline as
 * the service): `running` when it starts, then `succeeded` or `failed` with `finishedAt`;
 * `message` follows `request.message(…)` and, on failure, holds the error's text. While it runs,
 * the row holds a lease (`leaseUntil`) the instance renews; every instance looks for rows whose
 * lease passed (at start, then every LEASE_MS) and marks them failed with STOPPED_RUN.
 */
export class JobRunner {
  private readonly running = new Set<Promise<void>>();
  private readonly system: Ctx = ctxOf(MASTER, 'system');
  private closed = false;
  private reapTimer: unknown;

  constructor(
    private readonly data: Data,
    private readonly registry: CloudRegistry,
    private readonly invoker: Invoker,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  has(name: string): boolean {
    return this.registry.jobs.has(name);
  }

  /** Starts a job; answers the `_JobStatus` id at once. An unknown job: 141 for the API, a failed row for a schedule. */
  async start(
    name: string,
    params: Record<string, unknown>,
    caller: Caller,
    origin: JobOrigin,
  ): Promise<string> {
    const run = await this.record(name, params, caller, origin);
    run.launch();
    return run.objectId;
  }

  /**
   * Writes the run's `_JobStatus` row (`running` with its lease, or `failed` for an unknown job)
   * without starting it: the scheduler writes it in the transaction that claims the tick, and
   * launches it once that commits.
   */
  async record(
    name: string,
    params: Record<string, unknown>,
    caller: Caller,
    origin: JobOrigin,
  ): Promise<RecordedRun> {
    const handler = this.registry.jobs.get(name);
    if (!handler && origin.source === 'api') throw new BdsError(ErrorCode.SCRIPT_FAILED, INVALID_JOB);
    const now = this.clock.now();
    const { objectId } = await this.data.writes.create(this.system, '_JobStatus', {
      jobName: name,
      source: origin.source,
      status: handler ? 'running' : 'failed',
      message: handler ? '' : INVALID_JOB,
      params,
      startedAt: date(now),
      ...(handler ? { leaseUntil: date(now + LEASE_MS) } : { finishedAt: date(now) }),
      ...(origin.scheduleId ? { scheduleId: origin.scheduleId } : {}),
    });
    if (!handler) return { objectId, launch: () => {} };
    return { objectId, launch: () => this.launch(objectId, name, params, caller) };
  }

  private launch(objectId: string, name: string, params: Record<string, unknown>, caller: Caller): void {
    const handler = this.registry.jobs.get(name)!;
    const { writes } = this.data;
    let last = '';
    // Writes of the row (progress, lease) go out in order; the final write waits for them.
    let writing = Promise.resolve();
    const write = (fields: Record<string, unknown>, what: string) => {
      writing = writing
        .then(async () => {
          // A closed instance writes nothing more: its runs are left to the lease.
          if (!this.closed) await writes.update(this.system, '_JobStatus', objectId, fields);
        })
        .catch((err: unknown) => this.log.warn({ job: name, err: messageOf(err) }, `job ${what} not stored`));
    };
    const message = (text: string) => {
      last = String(text);
      write({ message: last }, 'progress');
    };
    let renewal: unknown;
    const renew = () => {
      renewal = this.clock.setTimeout(() => {
        if (this.closed) return;
        write({ leaseUntil: date(this.clock.now() + LEASE_MS) }, 'lease');
        renew();
      }, LEASE_MS / 3);
    };
    renew();
    const run = async () => {
      let outcome: { status: 'succeeded' | 'failed'; message: string };
      try {
        const request = await this.invoker.request(
          { caller, context: {} },
          { params, jobName: name, message },
        );
        await this.invoker.run(handler, request, ErrorCode.SCRIPT_FAILED);
        outcome = { status: 'succeeded', message: last };
      } catch (err) {
        outcome = { status: 'failed', message: messageOf(err) };
      }
      this.clock.clearTimeout(renewal);
      await writing;
      if (this.closed) return;
      try {
        await writes.update(this.system, '_JobStatus', objectId, {
          ...outcome,
          finishedAt: date(this.clock.now()),
          leaseUntil: { __op: 'Delete' },
        });
      } catch (err) {
        this.log.error({ job: name, err: messageOf(err) }, 'job status not stored');
      }
    };
    this.track(run());
  }

  private track(work: Promise<void>): void {
    const p = work.finally(() => this.running.delete(p));
    this.running.add(p);
  }

  /** Looks for runs whose instance stopped now, then every LEASE_MS (until close). */
  watchLeases(): void {
    if (this.closed) return;
    this.track(
      this.reap().then(
        () => {},
        (err: unknown) => this.log.error({ err: messageOf(err) }, 'looking for stopped job runs failed'),
      ),
    );
    this.reapTimer = this.clock.setTimeout(() => this.watchLeases(), LEASE_MS);
  }

  /**
   * Marks failed (STOPPED_RUN) the `running` rows whose lease has passed, and those without a
   * lease (written before leases). Each write holds only while the row is as read, so a lease
   * renewed meanwhile or another instance marking the row first wins.
   */
  async reap(): Promise<number> {
    const now = this.clock.now();
    const { results } = await this.data.reads.find(this.system, '_JobStatus', {
      where: {
        status: 'running',
        $or: [{ leaseUntil: { $lt: date(now) } }, { leaseUntil: { $exists: false } }],
      },
      order: 'createdAt',
      limit: REAP_PAGE,
    });
    let marked = 0;
    for (const row of results) {
      const expect = parseWhere({
        status: 'running',
        leaseUntil: row.leaseUntil === undefined ? { $exists: false } : row.leaseUntil,
      });
      try {
        await this.data.writes.update(
          this.system,
          '_JobStatus',
          String(row.objectId),
          { status: 'failed', message: STOPPED_RUN, finishedAt: date(now), leaseUntil: { __op: 'Delete' } },
          { expect },
        );
        marked++;
        this.log.warn({ job: row.jobName, id: row.objectId }, 'job run left by a stopped instance: failed');
      } catch (err) {
        if (!(err instanceof BdsError && err.code === ErrorCode.OBJECT_NOT_FOUND)) throw err;
      }
    }
    if (results.length === REAP_PAGE) marked += await this.reap();
    return marked;
  }

  /** Waits for the jobs under way (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.running.size) await Promise.all([...this.running]);
  }

  /** Stops renewing leases and writing rows: runs still under way are left to their lease. */
  close(): void {
    this.closed = true;
    if (this.reapTimer !== undefined) this.clock.clearTimeout(this.reapTimer);
  }
}
