import type { Cloud } from '../cloud/index.ts';
import type { Data } from '../data/data.ts';
import type { Clock } from '../kernel/clock.ts';
import type { PendingWrite, WriteTriggers } from '../kernel/events.ts';
import type { Logger } from '../kernel/log.ts';
import { JobRunner } from './runner.ts';
import { Scheduler, StoreTickLock, type TickLock } from './scheduler.ts';
import { ScheduleRules } from './schedules.ts';

/** Before-triggers one after the other: each gets the body the one before it answered. */
export function chainTriggers(...list: WriteTriggers[]): WriteTriggers {
  return {
    hasBefore: (className, op) => list.some((t) => t.hasBefore(className, op)),
    async before(write: PendingWrite) {
      let body = write.body;
      for (const t of list) {
        if (!t.hasBefore(write.className, write.op)) continue;
        body = (await t.before({ ...write, body })) ?? body;
      }
      return body ?? undefined;
    },
  };
}

/** Jobs (POST /jobs/<name>) and the schedules the service runs itself. */
export class Jobs {
  readonly runner: JobRunner;
  readonly scheduler: Scheduler;

  constructor(data: Data, cloud: Cloud, clock: Clock, log: Logger, lock: TickLock = new StoreTickLock(data)) {
    this.runner = new JobRunner(data, cloud.registry, cloud.invoker, clock, log);
    this.scheduler = new Scheduler(data, this.runner, lock, clock, log);
    // Cloud code and webhooks are the before-write triggers; the rules of `_Hooks` and
    // `_JobSchedule` rows are part of the pipeline's validate step (run before the schema check and
    // again on what the triggers changed: a row is checked as finally written).
    data.core.triggers = cloud.triggers;
    data.core.writeRules = chainTriggers(
      cloud.webhooks.registry.rules,
      new ScheduleRules((name) => this.runner.has(name), clock),
    );
  }

  start(runSchedules: boolean): void {
    if (runSchedules) this.scheduler.start();
  }

  /** Stops the scheduler and waits for running jobs, at most `graceMs` (a job past it is left running). */
  async close(graceMs: number): Promise<void> {
    await this.scheduler.stop();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const grace = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, graceMs);
    });
    await Promise.race([this.runner.idle(), grace]);
    clearTimeout(timer);
  }
}
