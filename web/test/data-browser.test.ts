import { describe, expect, it } from 'vitest';
import type { CsvRecord, JsonEntry } from '../src/features/data-browser/lib/csv.ts';
import {
  CsvParser,
  csvCell,
  csvLine,
  csvValue,
  JsonEntriesParser,
  parseCsv,
} from '../src/features/data-browser/lib/csv.ts';
import {
  parseDimension,
  VECTOR_DIMENSION_MAX,
  vectorDimension,
} from '../src/features/data-browser/lib/infer.ts';
import { cursorOf, keysetWhere, orderParam, pageRequest } from '../src/features/data-browser/lib/keyset.ts';
import {
  csvRecordToFields,
  type ImportRow,
  importStream,
  sampleOf,
} from '../src/features/data-browser/lib/transfer.ts';
import { filterToWhere, whereToFilter } from '../src/lib/filter.ts';
import { parseEdit } from '../src/lib/wire.ts';

describe('keyset cursor', () => {
  it('orders by the key with objectId as tie-breaker', () => {
    expect(orderParam({ field: 'score', desc: false })).toBe('score,objectId');
    expect(orderParam({ field: 'score', desc: true })).toBe('-score,-objectId');
    expect(orderParam({ field: 'objectId', desc: false })).toBe('objectId');
  });
  it('builds the where after the last row, ANDed with the filter', () => {
    const cur = cursorOf({ objectId: 'b', score: 5 }, { field: 'score', desc: false });
    expect(keysetWhere({ name: 'x' }, { field: 'score', desc: false }, cur, 'Number')).toEqual({
      $and: [{ name: 'x' }, { $or: [{ score: { $gt: 5 } }, { score: 5, objectId: { $gt: 'b' } }] }],
    });
    expect(keysetWhere({}, { field: 'objectId', desc: true }, { objectId: 'k' })).toEqual({
      objectId: { $lt: 'k' },
    });
  });
  it('wraps dates for comparisons', () => {
    const cur = cursorOf(
      { objectId: 'a', createdAt: '2024-01-01T00:00:00.000Z' },
      { field: 'createdAt', desc: true },
    );
    const w = keysetWhere(undefined, { field: 'createdAt', desc: true }, cur, 'Date');
    expect(w).toEqual({
      $or: [
        { createdAt: { $lt: { __type: 'Date', iso: '2024-01-01T00:00:00.000Z' } } },
        { createdAt: { __type: 'Date', iso: '2024-01-01T00:00:00.000Z' }, objectId: { $lt: 'a' } },
      ],
    });
  });
  it('falls back to skip for jumps and null sort values', () => {
    expect(pageRequest({}, { field: 'score', desc: false }, 3, 100, undefined)).toEqual({
      where: {},
      order: 'score,objectId',
      limit: 100,
      skip: 300,
    });
    expect(
      pageRequest({}, { field: 'score', desc: false }, 3, 100, { objectId: 'a', score: null }).skip,
    ).toBe(300);
    expect(pageRequest({}, { field: 'objectId', desc: false }, 1, 100, { objectId: 'z' })).toEqual({
      where: { objectId: { $gt: 'z' } },
      order: 'objectId',
      limit: 100,
    });
  });
});

describe('filter builder <-> where', () => {
  const cases: Record<string, unknown>[] = [
    {},
    { name: 'a' },
    { score: { $gt: 1, $lte: 9 }, name: { $regex: '^a', $options: 'i' } },
    { tags: { $all: ['a', 'b'] }, n: { $in: [1, 2] }, m: { $nin: [3] }, k: { $containedBy: [1] } },
    { $or: [{ a: 1 }, { b: { $exists: false } }] },
    { $nor: [{ a: 1 }], c: { $ne: null } },
    { $and: [{ a: { $gt: 1 } }, { a: { $gt: 2 } }] },
    { $relatedTo: { object: { __type: 'Pointer', className: 'P', objectId: 'x' }, key: 'rel' } },
    { loc: { $nearSphere: { __type: 'GeoPoint', latitude: 1, longitude: 2 }, $maxDistanceInKilometers: 10 } },
    {
      loc: {
        $within: {
          $box: [
            { latitude: 0, longitude: 0 },
            { latitude: 1, longitude: 1 },
          ],
        },
      },
    },
    { area: { $geoIntersects: { $point: { latitude: 1, longitude: 1 } } } },
    { loc: { $geoWithin: { $centerSphere: [{ latitude: 1, longitude: 1 }, 0.1] } } },
    { u: { $inQuery: { className: 'U', where: { a: 1 } } }, v: { $notInQuery: { className: 'U' } } },
    {
      c: { $select: { query: { className: 'C', where: {} }, key: 'k' } },
      d: { $dontSelect: { query: { className: 'C' }, key: 'k' } },
    },
    { d: { __type: 'Date', iso: '2024-01-01T00:00:00.000Z' }, o: { $eq: { $x: 1 } } },
  ];
  for (const where of cases) {
    it(`round-trips ${JSON.stringify(where)}`, () => {
      expect(filterToWhere(whereToFilter(where))).toEqual(where);
    });
  }
  it('merges AND conditions on different operators of a field', () => {
    expect(
      filterToWhere({
        kind: 'group',
        op: 'and',
        children: [
          { kind: 'cond', field: 'a', op: '$gt', value: 1 },
          { kind: 'cond', field: 'a', op: '$lt', value: 5 },
          {
            kind: 'group',
            op: 'or',
            children: [
              { kind: 'cond', field: 'b', op: '$eq', value: true },
              { kind: 'cond', field: 'c', op: '$exists', value: true },
            ],
          },
        ],
      }),
    ).toEqual({ a: { $gt: 1, $lt: 5 }, $or: [{ b: true }, { c: { $exists: true } }] });
  });
  it('refuses unknown operators', () => {
    expect(() => whereToFilter({ a: { $bogus: 1 } })).toThrow(/unknown operator/);
  });
});

describe('CSV', () => {
  it('escapes and parses back, including quotes, commas and newlines across chunks', () => {
    const rows = [
      ['a', 'b,c', 'd "e"', 'multi\nline', ''],
      ['1', ' lead', 'x', 'y', 'z'],
    ];
    const text = rows.map(csvLine).join('');
    expect(parseCsv(text).slice(0, 2)).toEqual(rows);
    const p = new CsvParser();
    const out: CsvRecord[] = [];
    for (const ch of text) out.push(...p.push(ch));
    out.push(...p.end());
    expect(out.map((r) => r.cells)).toEqual(rows);
    // Each record carries the line it starts on: the first spans two lines.
    expect(out.map((r) => r.line)).toEqual([1, 3]);
  });
  it('numbers records by file line across blank lines, CRLF and quoted newlines', () => {
    const text = 'a,b\r\n1,"x\r\ny"\r\n\r\n2,z\n3,"p\nq\nr"\n4,w';
    const p = new CsvParser();
    const out = [...p.push(text), ...p.end()];
    expect(out.map((r) => [r.line, r.cells[0]])).toEqual([
      [1, 'a'],
      [2, '1'],
      [4, ''],
      [5, '2'],
      [6, '3'],
      [9, '4'],
    ]);
  });
  it('formats and reads typed values', () => {
    expect(csvCell('Date', { __type: 'Date', iso: '2024-05-01T10:00:00.000Z' })).toBe(
      '2024-05-01T10:00:00.000Z',
    );
    expect(csvCell('Pointer', { __type: 'Pointer', className: 'P', objectId: 'abc' })).toBe('abc');
    expect(csvCell('Object', { a: [1] })).toBe('{"a":[1]}');
    expect(csvValue('Pointer', 'abc', 'P')).toEqual({
      ok: true,
      value: { __type: 'Pointer', className: 'P', objectId: 'abc' },
    });
    expect(csvValue('GeoPoint', '1.5, -2')).toEqual({
      ok: true,
      value: { __type: 'GeoPoint', latitude: 1.5, longitude: -2 },
    });
    expect(csvValue('Number', 'x').ok).toBe(false);
    expect(parseEdit('Boolean', 'TRUE')).toEqual({ ok: true, value: true });
    expect(parseEdit('Array', '{"a":1}').ok).toBe(false);
  });
  it('maps records to fields and reports the reason of a rejected row', () => {
    const schema = {
      className: 'T',
      fields: { n: { type: 'Number' as const }, s: { type: 'String' as const } },
    };
    expect(csvRecordToFields(schema, ['objectId', 'n', 's'], ['x', '3', 'hi'])).toEqual({
      ok: true,
      fields: { n: 3, s: 'hi' },
    });
    expect(csvRecordToFields(schema, ['n'], ['nope'])).toEqual({
      ok: false,
      reason: 'n: "nope" is not a number',
    });
  });
  it('streams JSON arrays of rows', () => {
    const text = JSON.stringify([{ a: '}{"' }, { b: { c: [1, { d: 2 }] } }]);
    const p = new JsonEntriesParser();
    const out: JsonEntry[] = [];
    for (let i = 0; i < text.length; i += 3) out.push(...p.push(text.slice(i, i + 3)));
    out.push(...p.end());
    expect(out.map((e) => e.value)).toEqual([{ a: '}{"' }, { b: { c: [1, { d: 2 }] } }]);
  });
  it('yields every JSON entry, objects or not, with the line it starts on', () => {
    const text = '[\n  {"a": 1},\n  42,\n  "s, ]",\n  {"b":\n    [1, 2]},\n  null,\n  [3],\n  {"c": 3}\n]\n';
    const p = new JsonEntriesParser();
    const out: JsonEntry[] = [];
    for (let i = 0; i < text.length; i += 2) out.push(...p.push(text.slice(i, i + 2)));
    out.push(...p.end());
    expect(out).toEqual([
      { line: 2, value: { a: 1 } },
      { line: 3, value: 42 },
      { line: 4, value: 's, ]' },
      { line: 5, value: { b: [1, 2] } },
      { line: 7, value: null },
      { line: 8, value: [3] },
      { line: 9, value: { c: 3 } },
    ]);
  });
  it('reads newline-delimited JSON and reports broken entries by line', () => {
    const p = new JsonEntriesParser();
    const out = [...p.push('{"a":1}\n{"a":2}\ntrue\n{"a": nope}\n{"a":3}\n{"a":'), ...p.end()];
    expect(out.map((e) => [e.line, e.value ?? e.error?.slice(0, 13)])).toEqual([
      [1, { a: 1 }],
      [2, { a: 2 }],
      [3, true],
      [4, 'invalid JSON:'],
      [5, { a: 3 }],
      [6, 'unexpected en'],
    ]);
  });
});

describe('class list counts', () => {
  it('shows exact counts in full and estimates with ≈', async () => {
    const { approxCount } = await import('../src/features/data-browser/components/class-list.tsx');
    expect(approxCount(100_000)).toBe((100_000).toLocaleString());
    expect(approxCount(42, true)).toBe('42');
    expect(approxCount(1_234_567, false)).toBe('≈1.2M');
    expect(approxCount(150_000, false)).toBe('≈150K');
    expect(approxCount(null)).toBe('?');
  });
});

const streamOf = (text: string): ReadableStream<Uint8Array> =>
  new ReadableStream({
    start(c) {
      c.enqueue(new TextEncoder().encode(text));
      c.close();
    },
  });

describe('JSON import: fields the class has no column for', () => {
  it('reports the fields first seen past the sample by name, first line and rows, and leaves them out', async () => {
    const entries = Array.from({ length: 260 }, (_, i) =>
      JSON.stringify(
        i < 250
          ? { name: `p${i}` }
          : i === 250
            ? { name: `p${i}`, colour: 'red' }
            : { name: `p${i}`, colour: 'blue', size: i },
      ),
    );
    const text = `[\n${entries.join(',\n')}\n]\n`;
    // The mapping step reads 200 rows: neither field is in its sample.
    expect(sampleOf('json', text).columns).toEqual(['name']);
    const sent: ImportRow[] = [];
    const result = await importStream(
      {
        format: 'json',
        schema: { className: 'Pet', fields: { name: { type: 'String' } } },
        skip: new Set(),
        keepObjectIds: false,
      },
      streamOf(text),
      async (rows) => {
        sent.push(...rows);
        return { created: rows.length, rejected: [] };
      },
      () => undefined,
    );
    // Entry i is on line i + 2 (the "[" is line 1).
    expect(result.unknownColumns).toEqual([
      { name: 'colour', line: 252, rows: 10 },
      { name: 'size', line: 253, rows: 9 },
    ]);
    expect(result.created).toBe(260);
    expect(sent[250]).toEqual({ line: 252, fields: { name: 'p250' } });
  });

  it('does not report skipped columns, system fields or columns of the class', async () => {
    const text = '[{"objectId":"a","createdAt":"2024-01-01T00:00:00.000Z","ACL":{},"name":"x","gone":1}]';
    const result = await importStream(
      {
        format: 'json',
        schema: { className: 'Pet', fields: { name: { type: 'String' } } },
        skip: new Set(['gone']),
        keepObjectIds: false,
      },
      streamOf(text),
      async (rows) => ({ created: rows.length, rejected: [] }),
      () => undefined,
    );
    expect(result.unknownColumns).toEqual([]);
  });
});

describe('import mapping: Vector dimension', () => {
  it('proposes the length shared by the sampled arrays of numbers', () => {
    expect(vectorDimension([[1, 2, 3], null, [4, 5, 6]], 'json')).toBe(3);
    expect(vectorDimension(['[1,2]', '', '[3,4.5]'], 'csv')).toBe(2);
    expect(
      vectorDimension(
        [
          [1, 2, 3],
          [1, 2],
        ],
        'json',
      ),
    ).toBeUndefined();
    expect(vectorDimension([['a', 'b']], 'json')).toBeUndefined();
    expect(vectorDimension(['not json'], 'csv')).toBeUndefined();
    expect(vectorDimension([], 'json')).toBeUndefined();
  });
  it('takes a whole number from 1 to the service maximum', () => {
    expect(VECTOR_DIMENSION_MAX).toBe(4096);
    expect(parseDimension('384')).toEqual({ ok: true, value: 384 });
    for (const bad of ['', '0', '2.5', '4097', 'abc'])
      expect(parseDimension(bad)).toEqual({ ok: false, error: 'a whole number from 1 to 4096' });
  });
});
