import type { Cloud } from '../cloud/index.ts';
import type { JobsOptions } from '../config/job-options.ts';
import type { Data } from '../data/data.ts';
import { MASTER } from '../kernel/caller.ts';
import type { Clock } from '../kernel/clock.ts';
import { ctxOf } from '../kernel/context.ts';
import type { Logger } from '../kernel/log.ts';
import { JobRunner } from './runner.ts';
import { Scheduler, StoreTickLock, type TickLock } from './scheduler.ts';
import { ScheduleRules } from './schedules.ts';

/** `_JobSchedule` rows read per page when the jobs are listed. */
const SCHEDULE_PAGE = 1000;

/** Jobs (POST /jobs/<name>) and the schedules the service runs itself. */
export class Jobs {
  readonly runner: JobRunner;
  readonly scheduler: Scheduler;
  /** The rules of `_JobSchedule` rows (a write rule: createService binds it). */
  readonly scheduleRules: ScheduleRules;

  constructor(
    private readonly data: Data,
    private readonly cloud: Cloud,
    clock: Clock,
    log: Logger,
    lock: TickLock = new StoreTickLock(data),
  ) {
    this.runner = new JobRunner(data, cloud.registry, cloud.invoker, clock, log);
    this.scheduler = new Scheduler(data, this.runner, lock, clock, log);
    this.scheduleRules = new ScheduleRules((name) => this.runner.has(name), clock);
  }

  /**
   * The jobs as the incumbent lists them (`GET /cloud_code/jobs/data`): the names the cloud module
   * registered, in registration order, and the names `_JobSchedule` rows use (each once).
   */
  async listed(): Promise<{ in_use: string[]; jobs: string[] }> {
    const system = ctxOf(MASTER, 'system');
    const inUse = new Set<string>();
    let after = '';
    for (;;) {
      const { results } = await this.data.reads.find(system, '_JobSchedule', {
        where: JSON.stringify(after ? { objectId: { $gt: after } } : {}),
        order: 'objectId',
        limit: String(SCHEDULE_PAGE),
        keys: 'jobName',
      });
      for (const row of results) if (typeof row.jobName === 'string') inUse.add(row.jobName);
      if (results.length < SCHEDULE_PAGE) break;
      after = String(results.at(-1)!.objectId);
    }
    return { in_use: [...inUse], jobs: [...this.cloud.registry.jobs.keys()] };
  }

  /**
   * Looks for runs left by a stopped instance (now, then every lease) and, with `runSchedules`,
   * runs the schedules under the catch-up policy.
   */
  start(options: JobsOptions): void {
    this.runner.watchLeases();
    this.scheduler.catchUp = { catchUp: options.catchUp, catchUpMax: options.catchUpMax };
    if (options.runSchedules) this.scheduler.start();
  }

  /**
   * Stops the scheduler and waits for running jobs, at most `graceMs`. A job past it is left
   * running, its row no longer written: its lease passes and an instance marks it failed.
   */
  async close(graceMs: number): Promise<void> {
    await this.scheduler.stop();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const grace = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, graceMs);
    });
    await Promise.race([this.runner.idle(), grace]);
    clearTimeout(timer);
    this.runner.close();
  }
}
