import { describe, expect, it } from 'vitest';
import {
  CsvError,
  CsvParser,
  type CsvRecord,
  csvHeader,
  csvValue,
  parseCsv,
} from '../src/features/data-browser/lib/csv.ts';
import { checkCsv } from '../src/features/data-browser/lib/transfer.ts';
import { countText } from '../src/lib/plural.ts';
import { NOTHING_TYPED, parseEdit } from '../src/lib/wire.ts';

/** Issue 27: what the cell editors and the CSV import accept, and what they refuse. */

const refused = (error: string) => ({ ok: false, error });
const accepted = (value: unknown) => ({ ok: true, value });

describe('cell editors never read a blank or a typo as a removal', () => {
  it('Number: decimal numbers only, finite', () => {
    expect(parseEdit('Number', '42.5')).toEqual(accepted(42.5));
    expect(parseEdit('Number', ' -3e2 ')).toEqual(accepted(-300));
    expect(parseEdit('Number', '.5')).toEqual(accepted(0.5));
    expect(parseEdit('Number', '+7.')).toEqual(accepted(7));
    expect(parseEdit('Number', '12e')).toEqual(refused('"12e" is not a number'));
    expect(parseEdit('Number', '--5')).toEqual(refused('"--5" is not a number'));
    expect(parseEdit('Number', '0x10')).toEqual(refused('"0x10" is not a number'));
    expect(parseEdit('Number', '1_000')).toEqual(refused('"1_000" is not a number'));
    expect(parseEdit('Number', 'Infinity')).toEqual(refused('"Infinity" is not a number'));
    expect(parseEdit('Number', '1e400')).toEqual(refused('"1e400" is too large for a number'));
  });

  it('empty or blank text is refused for every type but String, where it is the empty string', () => {
    for (const type of [
      'Number',
      'Boolean',
      'Date',
      'Object',
      'Array',
      'GeoPoint',
      'ACL',
      'Polygon',
    ] as const)
      for (const text of ['', '   '])
        expect(parseEdit(type, text, undefined), `${type} "${text}"`).toEqual(refused(NOTHING_TYPED));
    expect(parseEdit('Pointer', '', 'Owner')).toEqual(refused(NOTHING_TYPED));
    expect(parseEdit('String', '')).toEqual(accepted(''));
    expect(parseEdit('String', '  ')).toEqual(accepted('  '));
    expect(NOTHING_TYPED).toBe('Nothing typed: use Unset to remove the value.');
  });

  it('Pointer: an objectId of the target class, typed or as JSON', () => {
    const ada = { __type: 'Pointer', className: 'Owner', objectId: 'owner_ada' };
    expect(parseEdit('Pointer', ' owner_ada ', 'Owner')).toEqual(accepted(ada));
    expect(parseEdit('Pointer', JSON.stringify(ada), 'Owner')).toEqual(accepted(ada));
    expect(parseEdit('Pointer', 'no such id!', 'Owner')).toEqual(refused('"no such id!" is not an objectId'));
    expect(parseEdit('Pointer', '{"__type":"Pointer","className":"Pet","objectId":"x"}', 'Owner')).toEqual(
      refused('this column points to Owner, not Pet'),
    );
    expect(parseEdit('Pointer', '{"objectId":"x"}', 'Owner')).toEqual(
      refused('expected {"__type": "Pointer", "className": …, "objectId": …}'),
    );
  });

  it('GeoPoint: two numbers in range, typed or as JSON', () => {
    const p = { __type: 'GeoPoint', latitude: 1.5, longitude: -2 };
    expect(parseEdit('GeoPoint', '1.5, -2')).toEqual(accepted(p));
    expect(parseEdit('GeoPoint', '(1.5; -2)')).toEqual(accepted(p));
    expect(parseEdit('GeoPoint', JSON.stringify(p))).toEqual(accepted(p));
    expect(parseEdit('GeoPoint', '1.2.3, 4')).toEqual(refused('"1.2.3, 4" is not "latitude, longitude"'));
    expect(parseEdit('GeoPoint', ', 4')).toEqual(refused('", 4" is not "latitude, longitude"'));
    const range = refused('latitude must be in [-90, 90] and longitude in [-180, 180]');
    expect(parseEdit('GeoPoint', '91, 0')).toEqual(range);
    expect(parseEdit('GeoPoint', '{"__type":"GeoPoint","latitude":"1","longitude":2}')).toEqual(range);
  });

  it('Object, Array and ACL: JSON of the right shape; an ACL entry holds only true/false read and write', () => {
    expect(parseEdit('Object', '[1]')).toEqual(refused('expected a JSON object'));
    expect(parseEdit('Array', '{"a":1}')).toEqual(refused('expected a JSON array'));
    expect(parseEdit('Object', '{"a": ')).toEqual(refused('invalid JSON: Unexpected end of JSON input'));
    const acl = { '*': { read: true }, 'role:Staff': { read: true, write: false } };
    expect(parseEdit('ACL', JSON.stringify(acl))).toEqual(accepted(acl));
    expect(parseEdit('ACL', '{}')).toEqual(accepted({}));
    expect(parseEdit('ACL', '{"*": {"read": "yes"}}')).toEqual(
      refused('ACL entry "*": read and write must be true or false'),
    );
    expect(parseEdit('ACL', '{"*": {"read": true, "delete": true}}')).toEqual(
      refused('ACL entry "*": only read and write are allowed'),
    );
    expect(parseEdit('ACL', '{"u1": true}')).toEqual(
      refused('ACL entry "u1": expected {"read": true, "write": true}'),
    );
  });

  it('a CSV cell that is empty is no value (the field is left out of the new row)', () => {
    expect(csvValue('Number', '')).toEqual(accepted(undefined));
    expect(csvValue('String', '  ')).toEqual(accepted(undefined));
    expect(csvValue('Number', '12e')).toEqual(refused('"12e" is not a number'));
  });
});

/** The CsvError a parse of `text` throws (fed in chunks of `size` characters), or null. */
function csvProblem(text: string, size = text.length): { line: number; reason: string } | null {
  const p = new CsvParser();
  try {
    for (let i = 0; i < text.length; i += size) p.push(text.slice(i, i + size));
    p.end();
    return null;
  } catch (err) {
    if (!(err instanceof CsvError)) throw err;
    expect(err.message).toBe(`line ${err.line}: ${err.reason}`);
    return { line: err.line, reason: err.reason };
  }
}

describe('CSV import refuses a malformed file, naming the line and the reason', () => {
  it.each([
    [
      'an unterminated quote (the line where it opens)',
      'name,n\nalpha,1\nbeta,2\n"unterminated,gamma,3\n',
      4,
      'a quoted field is not closed before the end of the file',
    ],
    ['a row with an extra field', 'name,n\nalpha,1\nbeta,2,oops\n', 3, '3 fields where the header has 2'],
    ['a row with a field missing', 'name,n,x\nalpha,1,y\nbeta\n', 3, '1 field where the header has 3'],
    ['text after a closing quote', 'name,n\n"al"pha,1\n', 2, 'text after the closing quote of a field'],
    [
      'a quote inside an unquoted field',
      'name,n\nal"pha,1\n',
      2,
      'a quote inside a field that does not start with one',
    ],
    [
      'a wrong row after a quoted field over three lines',
      'a,b\n"x\ny\nz",1\n2\n',
      5,
      '1 field where the header has 2',
    ],
  ])('%s', (_, text, line, reason) => {
    expect(csvProblem(text)).toEqual({ line, reason });
    // The same, whatever the chunks the file arrives in.
    expect(csvProblem(text, 1)).toEqual({ line, reason });
    expect(csvProblem(text, 3)).toEqual({ line, reason });
  });

  it('accepts well-formed files: quotes doubled, CRLF, blank lines, a last line without a newline', () => {
    for (const text of [
      'a,b\r\n"x ""quoted"", yes",1\r\n\r\n"",2',
      'a\n\n\nb\n',
      'a,b\n"multi\nline",2\n',
      'a,b\n"x",y\r\n',
    ])
      expect(csvProblem(text), text).toBeNull();
    expect(parseCsv('a,b\r\n"x ""q""",1\n')).toEqual([
      ['a', 'b'],
      ['x "q"', '1'],
    ]);
  });

  it('refuses a header that names a column twice', () => {
    const header: CsvRecord = { line: 1, cells: ['name', ' n', 'name '] };
    expect(() => csvHeader(header)).toThrow(new CsvError(1, 'the column "name" appears twice in the header'));
    expect(csvHeader({ line: 1, cells: [' a', 'b ', ''] })).toEqual(['a', 'b', '']);
  });

  it('checkCsv reads the whole file first: the number of rows, or the first problem', async () => {
    const stream = (text: string) => new Blob([text]).stream();
    expect(await checkCsv(stream('n\n1\n2\n\n3'))).toEqual({ rows: 3 });
    expect(await checkCsv(stream('n\n'))).toEqual({ rows: 0 });
    await expect(checkCsv(stream('n,m\n1,2\n3\n'))).rejects.toThrow(
      new CsvError(3, '1 field where the header has 2'),
    );
    await expect(checkCsv(stream('n,n\n1,2\n'))).rejects.toThrow(
      new CsvError(1, 'the column "n" appears twice in the header'),
    );
  });
});

describe('counts in words', () => {
  it('singular for one, plural otherwise, with thousands separators', () => {
    expect(countText(1, 'row')).toBe('1 row');
    expect(countText(0, 'row')).toBe('0 rows');
    expect(countText(2, 'row')).toBe('2 rows');
    expect(countText(12_345, 'row')).toBe('12,345 rows');
  });
});
