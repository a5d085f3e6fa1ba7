import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClassSchema } from '../src/kernel/schema.ts';
import { parseWhere } from '../src/query/parse.ts';
import type { SqlRow } from '../src/storage/sql/driver.ts';
import { indexName } from '../src/storage/sql/names.ts';
import { SqlStore } from '../src/storage/sql/store.ts';
import { SqliteDriver } from '../src/storage/sqlite/driver.ts';

/**
 * The where compiler checks kinds and JSON types, but equality and ranges on a typed column stay
 * plain `column op ?` that an index serves. Each where runs as a find on a real SQLite store (with
 * declared indexes), and SQLite's EXPLAIN QUERY PLAN of the very statement the find ran must
 * search the index, not scan the table. The answers are checked too.
 */

/** The SQLite driver, keeping the last read statement it ran. */
class RecordingDriver extends SqliteDriver {
  last: { sql: string; params: unknown[] } | undefined;

  override async all(sql: string, params: unknown[]): Promise<SqlRow[]> {
    this.last = { sql, params };
    return super.all(sql, params);
  }
}

const SCHEMA: ClassSchema = {
  className: 'Thing',
  fields: {
    n: { type: 'Number' },
    s: { type: 'String' },
    when: { type: 'Date' },
    flag: { type: 'Boolean' },
  },
  classLevelPermissions: {},
  indexes: { n_1: { n: 1 }, s_1: { s: 1 }, when_1: { when: 1 } },
};

const ROWS = [
  { objectId: 'a', n: 1, s: 'alpha', when: '2024-01-01T00:00:00.000Z' },
  { objectId: 'b', n: 2, s: 'beta', when: '2024-06-01T00:00:00.000Z' },
  { objectId: 'c', n: 3, s: '3', when: '+010000-01-01T00:00:00.000Z' },
  { objectId: 'd', n: 4, s: 'delta', when: '-000100-01-01T00:00:00.000Z' },
];

let dir: string;
let driver: RecordingDriver;
let store: SqlStore;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'bds-where-index-'));
  driver = new RecordingDriver(path.join(dir, 'data.sqlite'));
  store = new SqlStore(driver);
  await store.init();
  await store.createClass(SCHEMA);
  for (const [i, { objectId, n, s, when }] of ROWS.entries()) {
    await store.insert(SCHEMA, {
      objectId,
      createdAt: `2024-0${i + 1}-01T00:00:00.000Z`,
      values: {
        n: { value: n, type: 'Number' },
        s: { value: s, type: 'String' },
        when: { value: { __type: 'Date', iso: when }, type: 'Date' },
        flag: { value: n % 2 === 1, type: 'Boolean' },
      },
      acl: null,
      relations: [],
    });
  }
});

afterAll(async () => {
  await driver?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The objectIds a find answers (sorted), and the plan (one line per step) of the statement it ran. */
async function findWithPlan(where: unknown, orderBy?: string): Promise<{ ids: string[]; plan: string[] }> {
  const order = orderBy ? [{ path: [orderBy], descending: false }] : [];
  const rows = await store.find(
    SCHEMA,
    { where: parseWhere(where), order, limit: 100, skip: 0 },
    () => SCHEMA,
  );
  const { sql, params } = driver.last!;
  const plan = await driver.all(`EXPLAIN QUERY PLAN ${sql}`, params);
  return { ids: rows.map((r) => r.objectId as string).sort(), plan: plan.map((step) => String(step.detail)) };
}

const index = (name: string) => indexName('Thing', name);
const date = (iso: string) => ({ __type: 'Date', iso });

describe('indexes still serve equality and ranges on typed columns', () => {
  const cases: Array<{ name: string; where: unknown; order?: string; ids: string[]; plan: string[] }> = [
    {
      name: 'Number equality',
      where: { n: 2 },
      ids: ['b'],
      plan: [`SEARCH Thing USING INDEX ${index('n_1')} (n=?)`],
    },
    {
      name: 'Number range',
      where: { n: { $gt: 1, $lte: 3 } },
      ids: ['b', 'c'],
      plan: [`SEARCH Thing USING INDEX ${index('n_1')} (n>? AND n<?)`],
    },
    {
      name: 'Number $in',
      where: { n: { $in: [1, 4, '4', true] } },
      ids: ['a', 'd'],
      plan: [`SEARCH Thing USING INDEX ${index('n_1')} (n=?)`],
    },
    {
      name: 'String equality',
      where: { s: 'beta' },
      ids: ['b'],
      plan: [`SEARCH Thing USING INDEX ${index('s_1')} (s=?)`],
    },
    {
      name: 'String range',
      where: { s: { $gte: 'b', $lt: 'e' } },
      ids: ['b', 'd'],
      plan: [`SEARCH Thing USING INDEX ${index('s_1')} (s>? AND s<?)`],
    },
    {
      name: 'Date equality',
      where: { when: date('2024-06-01T00:00:00.000Z') },
      ids: ['b'],
      plan: [`SEARCH Thing USING INDEX ${index('when_1')} (when=?)`],
    },
    {
      // Years before 0 sort after '-' and before every digit: one range of the index.
      name: 'Date $lt',
      where: { when: { $lt: date('2024-03-01T00:00:00.000Z') } },
      ids: ['a', 'd'],
      plan: [`SEARCH Thing USING INDEX ${index('when_1')} (when>? AND when<?)`],
    },
    {
      // Years after 9999 ('+…') sort first of all: the range starts lower when the table holds one.
      name: 'Date $gt',
      where: { when: { $gt: date('2024-03-01T00:00:00.000Z') } },
      ids: ['b', 'c'],
      plan: [
        `SEARCH Thing USING INDEX ${index('when_1')} (when>?)`,
        'SCALAR SUBQUERY 1',
        `SEARCH d1 USING COVERING INDEX ${index('when_1')} (when<?)`,
      ],
    },
    {
      // In the index's order, without sorting: not the whole index walked for two ranges.
      name: 'Date $gt ordered by the date',
      where: { when: { $gte: date('2024-01-01T00:00:00.000Z') } },
      order: 'when',
      ids: ['a', 'b', 'c'],
      plan: [
        `SEARCH Thing USING INDEX ${index('when_1')} (when>?)`,
        'SCALAR SUBQUERY 1',
        `SEARCH d1 USING COVERING INDEX ${index('when_1')} (when<?)`,
      ],
    },
    {
      name: 'Date $lt ordered by the date',
      where: { when: { $lte: date('2024-06-01T00:00:00.000Z') } },
      order: 'when',
      ids: ['a', 'b', 'd'],
      plan: [`SEARCH Thing USING INDEX ${index('when_1')} (when>? AND when<?)`],
    },
    {
      name: 'createdAt range (the service sets it: one plain range)',
      where: { createdAt: { $gte: date('2024-02-01T00:00:00.000Z') } },
      ids: ['b', 'c', 'd'],
      plan: [`SEARCH Thing USING INDEX ${index('createdAt')} (createdAt>?)`],
    },
    {
      name: 'objectId equality',
      where: { objectId: 'c' },
      ids: ['c'],
      plan: ['SEARCH Thing USING INDEX sqlite_autoindex_Thing_1 (objectId=?)'],
    },
  ];

  for (const kase of cases) {
    it(kase.name, async () => {
      const { ids, plan } = await findWithPlan(kase.where, kase.order);
      expect(ids).toEqual(kase.ids);
      expect(plan).toEqual(kase.plan);
    });
  }
});
