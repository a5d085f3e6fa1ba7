import { z } from 'zod';

/** The row history a service has when it names none (`history`). */
export const HISTORY_DEFAULTS = {
  enabled: true,
  maxAgeMs: 30 * 24 * 3600 * 1000,
  maxVersionsPerRow: 100,
  classes: {} as Record<string, boolean>,
  pruneIntervalMs: 3600 * 1000,
};

/**
 * Classes whose rows are the service's own bookkeeping, never kept in the history whatever the
 * options say: sessions (their tokens), idempotency claims, job and push statuses, analytics events.
 */
export const UNRECORDED_CLASSES: ReadonlySet<string> = new Set([
  '_Session',
  '_Idempotency',
  '_JobStatus',
  '_PushStatus',
  '_AnalyticsEvent',
]);

/** The versions of rows the service keeps (docs/protocol.md#row-history). */
export const historySchema = z
  .object({
    enabled: z
      .boolean()
      .default(HISTORY_DEFAULTS.enabled)
      .describe('Keep a version of every row write (false: none is written, `classes` aside).'),
    maxAgeMs: z
      .number()
      .int()
      .min(0)
      .default(HISTORY_DEFAULTS.maxAgeMs)
      .describe('Versions older than this (ms) are pruned; 0: kept whatever their age.'),
    maxVersionsPerRow: z
      .number()
      .int()
      .min(0)
      .default(HISTORY_DEFAULTS.maxVersionsPerRow)
      .describe("A row's versions beyond this many newest are pruned; 0: no bound."),
    classes: z
      .record(z.string(), z.boolean())
      .superRefine((classes, ctx) => {
        for (const name of Object.keys(classes))
          if (UNRECORDED_CLASSES.has(name))
            ctx.addIssue({ code: 'custom', message: `${name} is never kept in the history.` });
      })
      .default(HISTORY_DEFAULTS.classes)
      .describe('Per class, `true` or `false` against `enabled` (e.g. `{"AuditLog": false}`).'),
    pruneIntervalMs: z
      .number()
      .int()
      .min(1000)
      .default(HISTORY_DEFAULTS.pruneIntervalMs)
      .describe('How often (ms) versions past `maxAgeMs` or `maxVersionsPerRow` are deleted.'),
  })
  .strict();

export type HistoryOptions = z.output<typeof historySchema>;

/** Whether writes of `className` leave versions under these options. */
export function recordsHistory(options: HistoryOptions, className: string): boolean {
  if (UNRECORDED_CLASSES.has(className)) return false;
  return options.classes[className] ?? options.enabled;
}
