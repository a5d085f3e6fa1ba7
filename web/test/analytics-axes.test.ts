import { describe, expect, it } from 'vitest';
import { axesText, chartData, countTop } from '../src/features/analytics/lib/axes.ts';

const at = (iso: string) => Date.parse(iso) / 1000;

describe('analytics chart axes', () => {
  it('one hour of data: the time axis is that hour, the counts start at 0', () => {
    const d = chartData([{ name: 'Signup', bucket: '2026-06-01T10', count: 3 }]);
    expect(d.x).toEqual([at('2026-06-01T10:00:00Z'), at('2026-06-01T11:00:00Z')]);
    expect(d.series).toEqual([[at('2026-06-01T10:30:00Z')], [3]]);
    expect(d.y).toEqual([0, 4]);
    expect(axesText({ min: d.x[0], max: d.x[1] }, { min: d.y[0], max: d.y[1] }, 'hour')).toBe(
      'Time axis (UTC): 2026-06-01 10:00 to 2026-06-01 11:00, per hour. Count axis: 0 to 4.',
    );
  });

  it('days: from the first day to the end of the last, missing buckets count 0 for each name', () => {
    const d = chartData([
      { name: 'b', bucket: '2026-06-02', count: 1 },
      { name: 'a', bucket: '2026-06-01', count: 10 },
    ]);
    expect(d.names).toEqual(['a', 'b']);
    expect(d.x).toEqual([at('2026-06-01T00:00:00Z'), at('2026-06-03T00:00:00Z')]);
    expect(d.series.slice(1)).toEqual([
      [10, 0],
      [0, 1],
    ]);
    expect(d.y).toEqual([0, 11]);
  });

  it('the count axis reaches a little above the largest count, at least 1', () => {
    expect([0, 1, 2, 3, 9, 10, 100].map(countTop)).toEqual([1, 2, 3, 4, 10, 11, 110]);
  });
});
