import { type Invoker, messageOf } from '../cloud/invoke.ts';
import type { CloudRegistry } from '../cloud/registry.ts';
import type { Data } from '../data/data.ts';
import { type Caller, MASTER } from '../kernel/caller.ts';
import type { Clock } from '../kernel/clock.ts';
import { type Ctx, ctxOf } from '../kernel/context.ts';
import { BdsError, ErrorCode } from '../kernel/errors.ts';
import type { Logger } from '../kernel/log.ts';

export interface JobOrigin {
  source: 'api' | 'schedule';
  scheduleId?: string;
}

const date = (ms: number) => ({ __type: 'Date', iso: new Date(ms).toISOString() });

/** A job no cloud module registered (the incumbent's text). */
export const INVALID_JOB = 'Invalid job.';

/**
 * Runs jobs in the background. Each run is a `_JobStatus` row (written through the pipeline as
 * the service): `running` when it starts, then `succeeded` or `failed` with `finishedAt`;
 * `message` follows `request.message(…)` and, on failure, holds the error's text.
 */
export class JobRunner {
  private readonly running = new Set<Promise<void>>();
  private readonly system: Ctx = ctxOf(MASTER, 'system');

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
    const handler = this.registry.jobs.get(name);
    if (!handler && origin.source === 'api') throw new BdsError(ErrorCode.SCRIPT_FAILED, INVALID_JOB);
    const { writes } = this.data;
    const { objectId } = await writes.create(this.system, '_JobStatus', {
      jobName: name,
      source: origin.source,
      status: handler ? 'running' : 'failed',
      message: handler ? '' : INVALID_JOB,
      params,
      startedAt: date(this.clock.now()),
      ...(handler ? {} : { finishedAt: date(this.clock.now()) }),
      ...(origin.scheduleId ? { scheduleId: origin.scheduleId } : {}),
    });
    if (!handler) return objectId;
    let last = '';
    // Progress writes go out in order; the final write waits for them.
    let progress = Promise.resolve();
    const message = (text: string) => {
      last = String(text);
      const value = last;
      progress = progress
        .then(async () => {
          await writes.update(this.system, '_JobStatus', objectId, { message: value });
        })
        .catch((err: unknown) =>
          this.log.warn({ job: name, err: messageOf(err) }, 'job progress not stored'),
        );
    };
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
      await progress;
      try {
        await writes.update(this.system, '_JobStatus', objectId, {
          ...outcome,
          finishedAt: date(this.clock.now()),
        });
      } catch (err) {
        this.log.error({ job: name, err: messageOf(err) }, 'job status not stored');
      }
    };
    const p = run().finally(() => this.running.delete(p));
    this.running.add(p);
    return objectId;
  }

  /** Waits for the jobs under way (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.running.size) await Promise.all([...this.running]);
  }
}
