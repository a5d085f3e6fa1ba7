/**
 * The chart's axes, fitted to the counted buckets: uPlot's automatic ranges spread one point over
 * years and start counts wherever the data starts, so the console sets both.
 */
import type { EventCount } from '../api/analytics.ts';

export type Interval = 'hour' | 'day';

export const INTERVAL_SECONDS: Record<Interval, number> = { hour: 3600, day: 86_400 };

/** Seconds since the epoch of a bucket's start (`YYYY-MM-DDTHH` or `YYYY-MM-DD`, UTC). */
export const bucketStart = (bucket: string): number =>
  Date.parse(bucket.length === 13 ? `${bucket}:00:00Z` : `${bucket}T00:00:00Z`) / 1000;

/** The interval the service counted in, read from the buckets (an hour's has `THH`). */
export const intervalOf = (counts: EventCount[]): Interval =>
  counts[0]?.bucket.length === 13 ? 'hour' : 'day';

export interface ChartData {
  /** The buckets in time order, each plotted at its middle (a bucket covers one interval). */
  buckets: string[];
  /** Event names in alphabetical order, one series each. */
  names: string[];
  /** x values (bucket middles) then one row of counts per name (0 where a bucket has none). */
  series: number[][];
  /** The time axis: from the first bucket's start to the last bucket's end. */
  x: [number, number];
  /** The count axis: from 0 to a little above the largest count. */
  y: [number, number];
}

/** Room above the largest count, so the highest point is not drawn on the frame. */
export function countTop(max: number): number {
  return Math.max(1, max + Math.ceil(max / 10));
}

export function chartData(counts: EventCount[], interval = intervalOf(counts)): ChartData {
  const step = INTERVAL_SECONDS[interval];
  const buckets = [...new Set(counts.map((c) => c.bucket))].sort();
  const names = [...new Set(counts.map((c) => c.name))].sort();
  const index = new Map(counts.map((c) => [`${c.name}\u0000${c.bucket}`, c.count]));
  const starts = buckets.map(bucketStart);
  const rows = names.map((n) => buckets.map((b) => index.get(`${n}\u0000${b}`) ?? 0));
  const max = Math.max(0, ...rows.flat());
  return {
    buckets,
    names,
    series: [starts.map((s) => s + step / 2), ...rows],
    x: [starts[0] ?? 0, (starts.at(-1) ?? 0) + step],
    y: [0, countTop(max)],
  };
}

/** `YYYY-MM-DD HH:mm` of a time in seconds, in UTC (the buckets are UTC). */
export function utcText(seconds: number): string {
  return new Date(seconds * 1000).toISOString().slice(0, 16).replace('T', ' ');
}

/** The axes in words: the chart's text alternative, read from the scales uPlot drew. */
export function axesText(
  x: { min?: number | null; max?: number | null },
  y: { min?: number | null; max?: number | null },
  interval: Interval,
): string {
  const time = `${utcText(x.min ?? 0)} to ${utcText(x.max ?? 0)}, per ${interval}`;
  return `Time axis (UTC): ${time}. Count axis: ${y.min ?? 0} to ${y.max ?? 0}.`;
}
