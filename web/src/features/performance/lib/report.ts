import type { AutoIndexReport, IndexKey, PerformanceReport, ShapeReport } from '@bds/client/protocol';

/** One class of the report: its shapes (the most total time first) and its automatic indexes. */
export interface ClassPerformance {
  className: string;
  shapes: ShapeReport[];
  indexes: AutoIndexReport[];
  /** The time of all its recorded finds, ms. */
  totalMs: number;
}

/** The report by class, the class whose finds took the most time first (then by name). */
export function byClass(report: PerformanceReport): ClassPerformance[] {
  const classes = new Map<string, ClassPerformance>();
  const of = (className: string) => {
    let c = classes.get(className);
    if (!c) {
      c = { className, shapes: [], indexes: [], totalMs: 0 };
      classes.set(className, c);
    }
    return c;
  };
  for (const shape of report.results) {
    const c = of(shape.className);
    c.shapes.push(shape);
    c.totalMs += shape.totalMs;
  }
  for (const index of report.indexes) of(index.className).indexes.push(index);
  return [...classes.values()].sort(
    (a, b) => b.totalMs - a.totalMs || a.className.localeCompare(b.className),
  );
}

/** A time in ms as the page shows it: two decimals under 10 ms, one under a second, else seconds. */
export function msText(ms: number): string {
  // Decided on the rounded value, so 9.996 reads 10.0 ms, not 10.00 ms.
  if (Math.round(ms * 100) < 1000) return `${ms.toFixed(2)} ms`;
  if (Math.round(ms * 10) < 10_000) return `${ms.toFixed(1)} ms`;
  return `${(ms / 1000).toFixed(2)} s`;
}

/** An index's (or a sort's) keys: `player, score ↓`. */
export const keysText = (keys: IndexKey[]): string =>
  keys.map((k) => (k.descending ? `${k.field} ↓` : k.field)).join(', ');
