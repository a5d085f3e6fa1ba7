import { useMemo } from 'react';
import type { PerformanceReport } from '../api/performance.ts';
import { byClass, type ClassPerformance } from '../lib/report.ts';

/** The report by class (lib/report.ts), recomputed when a new report arrives. */
export function useClassPerformance(report: PerformanceReport | undefined): ClassPerformance[] {
  return useMemo(() => (report ? byClass(report) : []), [report]);
}
