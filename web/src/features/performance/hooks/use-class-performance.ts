import { useMemo } from 'react';
import type { AutoIndexReport, PerformanceReport, ShapeReport } from '../api/performance.ts';

/** One class of the report: its shapes (the most total time first) and its automatic indexes. */
export interface ClassPerformance {
  className: string;
  shapes: ShapeReport[];
  indexes: AutoIndexReport[];
  /** The time of all its recorded finds, ms. */
  totalMs: number;
}

/** The report by class, the class whose finds took the most time first. */
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

export function useClassPerformance(report: PerformanceReport | undefined): ClassPerformance[] {
  return useMemo(() => (report ? byClass(report) : []), [report]);
}
