import { z } from 'zod';

/** The automatic indexes a service has when it names none (`autoIndex`). */
export const AUTO_INDEX_DEFAULTS = {
  enabled: true,
  minRows: 10_000,
  minSightings: 50,
  windowMs: 10 * 60 * 1000,
  maxPerClass: 3,
  dropUnusedAfterMs: 7 * 24 * 3600 * 1000,
  checkIntervalMs: 60 * 1000,
};

/**
 * Indexes the service builds itself for the finds that scan (docs/protocol.md#performance): a
 * query shape seen often enough on a large enough class gets the index that serves it.
 */
export const autoIndexSchema = z
  .object({
    enabled: z
      .boolean()
      .default(AUTO_INDEX_DEFAULTS.enabled)
      .describe('Build and drop automatic indexes (false: shapes are still reported, nothing is built).'),
    minRows: z
      .number()
      .int()
      .min(0)
      .default(AUTO_INDEX_DEFAULTS.minRows)
      .describe('Only a class of at least this many rows (estimated) gets an automatic index.'),
    minSightings: z
      .number()
      .int()
      .min(1)
      .max(100_000)
      .default(AUTO_INDEX_DEFAULTS.minSightings)
      .describe('A query shape must be seen this many times within `windowMs` before its index is built.'),
    windowMs: z
      .number()
      .int()
      .min(1)
      .default(AUTO_INDEX_DEFAULTS.windowMs)
      .describe('The window (ms) the sightings of a shape are counted in.'),
    maxPerClass: z
      .number()
      .int()
      .min(0)
      .max(64)
      .default(AUTO_INDEX_DEFAULTS.maxPerClass)
      .describe('Most automatic indexes one class may have.'),
    dropUnusedAfterMs: z
      .number()
      .int()
      .min(0)
      .default(AUTO_INDEX_DEFAULTS.dropUnusedAfterMs)
      .describe('An automatic index no query used for this long (ms) is dropped; 0: never dropped.'),
    checkIntervalMs: z
      .number()
      .int()
      .min(10)
      .default(AUTO_INDEX_DEFAULTS.checkIntervalMs)
      .describe('How often (ms) the service decides which indexes to build and drop.'),
  })
  .strict();

export type AutoIndexOptions = z.output<typeof autoIndexSchema>;
