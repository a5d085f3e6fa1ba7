import { z } from 'zod';

/** What a schedule does with the ticks it missed while no instance ran it (`jobs.catchUp`). */
export const CATCH_UP_POLICIES = ['once', 'each', 'skip'] as const;
export type CatchUpPolicy = (typeof CATCH_UP_POLICIES)[number];

export const JOBS_DEFAULTS = { runSchedules: true, catchUp: 'once', catchUpMax: 24 } as const;

/** Jobs and the `_JobSchedule` rows the service runs itself (`jobs`). */
export const jobsSchema = z
  .object({
    runSchedules: z
      .boolean()
      .default(JOBS_DEFAULTS.runSchedules)
      .describe('This instance runs the `_JobSchedule` rows when due (false: other instances do).'),
    catchUp: z
      .enum(CATCH_UP_POLICIES)
      .default(JOBS_DEFAULTS.catchUp)
      .describe(
        'Ticks missed while no instance ran the schedules (reached more than a minute late): `once` runs one for them all, `each` runs one per missed tick (the latest `catchUpMax`), `skip` runs none. A `_JobSchedule` row’s `catchUp` overrides it.',
      ),
    catchUpMax: z
      .number()
      .int()
      .min(1)
      .max(1000)
      .default(JOBS_DEFAULTS.catchUpMax)
      .describe('With catch-up `each`: the most missed ticks one schedule runs at once (the latest).'),
  })
  .strict();

export type JobsOptions = z.output<typeof jobsSchema>;
