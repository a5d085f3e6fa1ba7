import type { AutoIndexReport, ShapeReport } from '@bds/client/protocol';
import { describe, expect, it } from 'vitest';
import { byClass, keysText, msText } from '../src/features/performance/lib/report.ts';

const shape = (className: string, totalMs: number, field = 'score'): ShapeReport => ({
  shape: `${className}|eq:${field}|range:|sort:`,
  className,
  equality: [field],
  range: [],
  sort: [],
  count: 1,
  totalMs,
  meanMs: totalMs,
  maxMs: totalMs,
  lastSeenAt: '2026-01-01T00:00:00.000Z',
  index: null,
});
const index = (className: string): AutoIndexReport => ({
  name: `${className}:auto:score`,
  className,
  keys: [{ field: 'score', descending: false }],
  origin: 'automatic',
});

describe('the Performance page: the report by class', () => {
  it('groups shapes and indexes by class, the class whose finds took the most time first', () => {
    const classes = byClass({
      results: [
        shape('Game', 30),
        shape('Player', 20),
        shape('Game', 1, 'level'),
        shape('Player', 20, 'name'),
      ],
      indexes: [index('Player'), index('Quiet')],
    });
    expect(classes.map((c) => [c.className, c.totalMs, c.shapes.length, c.indexes.length])).toEqual([
      ['Player', 40, 2, 1],
      ['Game', 31, 2, 0],
      ['Quiet', 0, 0, 1],
    ]);
    // Within a class the service's order (the most total time first) is kept.
    expect(classes[1]!.shapes.map((s) => s.equality[0])).toEqual(['score', 'level']);
    // Ties go by name.
    expect(byClass({ results: [shape('B', 5), shape('A', 5)], indexes: [] }).map((c) => c.className)).toEqual(
      ['A', 'B'],
    );
  });

  it('says times and keys', () => {
    expect([0.4132, 9.994, 9.996, 12.34, 999.94, 999.96, 1234.5].map(msText)).toEqual([
      '0.41 ms',
      '9.99 ms',
      '10.0 ms',
      '12.3 ms',
      '999.9 ms',
      '1.00 s',
      '1.23 s',
    ]);
    expect(
      keysText([
        { field: 'player', descending: false },
        { field: 'score', descending: true },
      ]),
    ).toBe('player, score ↓');
  });
});
