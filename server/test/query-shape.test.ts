import { describe, expect, it } from 'vitest';
import type { ClassSchema } from '../src/kernel/schema.ts';
import { parseWhere } from '../src/query/parse.ts';
import { indexKeysFor, queryShape, shapeKey } from '../src/storage/sql/query-shape.ts';

/** The shape of a find as automatic indexes see it (docs/protocol.md#performance). */

const schema = {
  className: 'Game',
  fields: {
    objectId: { type: 'String' },
    createdAt: { type: 'Date' },
    score: { type: 'Number' },
    player: { type: 'String' },
    level: { type: 'Number' },
    obj: { type: 'Object' },
    tags: { type: 'Array' },
    photo: { type: 'File' },
  },
  classLevelPermissions: {},
  indexes: {},
} as unknown as ClassSchema;

const shapeOf = (where: unknown, order: Array<[string, boolean]> = []) =>
  queryShape(
    schema,
    parseWhere(where),
    order.map(([field, descending]) => ({ path: [field], descending })),
  );

describe('query shapes', () => {
  it('takes equality, range and sort fields from the conditions every answer meets', () => {
    const shape = shapeOf({ player: 'p', level: { $in: [1, 2] }, score: { $gt: 3, $lte: 9 } }, [
      ['createdAt', true],
    ]);
    expect(shape).toEqual({
      className: 'Game',
      equality: ['level', 'player'],
      range: ['score'],
      sort: [{ field: 'createdAt', descending: true }],
    });
    expect(shapeKey(shape!)).toBe('Game|eq:level,player|range:score|sort:-createdAt');
    // Equality first, then the range; the sort follows only the range's own field.
    expect(indexKeysFor(shape!)).toEqual([
      { field: 'level', descending: false },
      { field: 'player', descending: false },
      { field: 'score', descending: false },
    ]);
  });

  it('leaves out what a plain index on a column does not serve', () => {
    expect(shapeOf({ $or: [{ player: 'a' }, { player: 'b' }] })).toBeUndefined();
    expect(shapeOf({ player: { $ne: 'a' } })).toBeUndefined();
    expect(shapeOf({ player: { $regex: '^a' } })).toBeUndefined();
    expect(shapeOf({ objectId: 'abc' })).toBeUndefined();
    expect(shapeOf({ 'obj.k': 1, tags: 'x', photo: null })).toBeUndefined();
    expect(shapeOf({ player: { $in: ['a', null] } })).toBeUndefined();
  });

  it('a field both compared and ranged counts once, as equality; a sort after an unindexable key stops', () => {
    const shape = shapeOf({ $and: [{ score: 3 }, { score: { $lt: 5 } }] }, [
      ['tags', false],
      ['level', false],
    ]);
    expect(shape).toEqual({ className: 'Game', equality: ['score'], range: [], sort: [] });
    expect(indexKeysFor(shapeOf({ level: 1 }, [['score', true]])!)).toEqual([
      { field: 'level', descending: false },
      { field: 'score', descending: true },
    ]);
  });
});
