import type { Comparison, Path } from '../../kernel/query.ts';
import type { ClassSchema, FieldDef } from '../../kernel/schema.ts';
import { type Key, resolvePath } from '../../query/fields.ts';
import type { SchemaLookup } from '../adapter.ts';
import type { Dialect, JsonType, Params } from './dialect.ts';
import { tableName } from './names.ts';

const SQL_COMPARE = { eq: '=', ne: '<>', lt: '<', lte: '<=', gt: '>', gte: '>=' } as const;
type Ordering = Exclude<Comparison, 'eq' | 'ne'>;

export const TRUE = '1=1';
export const FALSE = '1=0';

/** A column reference resolved against the schema. */
export interface Operand {
  field: string;
  /** The column with its table alias (`NULL` when missing). */
  column: string;
  /** Keys below an Object field (`obj.a.b` -> `['a', 'b']`); empty for the field itself. */
  keys: readonly string[];
  /** SQL of the value: the column, or what is at `keys` below it. */
  sql: string;
  /** The field's type, or `undefined` for a JSON sub-key whose type is whatever is stored. */
  def: FieldDef | undefined;
  /** True when the field is not in the schema: it is null on every row. */
  missing: boolean;
  /** Where the field's dates come from, for ordering them (see `ordered`). */
  dates: DateSource;
}

/** The service's createdAt/updatedAt, a column that leads an index (its table and name), or other. */
type DateSource = 'service' | { table: string; column: string } | 'other';

/**
 * A JSON value whose type is known only per row: a key below an Object field, or an element of an
 * array. Queries compare it with a value only when it holds a value of the same kind (see `keyOf`).
 */
export interface JsonSlot {
  /** SQL of its JSON type; NULL when there is no value. */
  type: string;
  /** SQL of its value: a scalar, or the JSON text of an object or an array. */
  value: string;
  /** SQL of member `key` of the value when it is an object, else NULL (never an error). */
  member(key: string): string;
}

/** The ISO text of a Date key. */
const isoOf = (key: Key) => new Date(key.value as number).toISOString();

/** The target class of a pointer kind (`Pointer<Person>` -> `Person`). */
const pointerClass = (kind: string) => kind.slice('Pointer<'.length, -1);

/** A SQL text literal (kinds name classes, whose names are letters, digits and `_`; quotes doubled anyway). */
export const textLiteral = (text: string) => `'${text.replace(/'/g, "''")}'`;

export const definedKeys = (keys: Array<Key | undefined>): Key[] =>
  keys.filter((k): k is Key => k !== undefined);

/**
 * The first layer of the where compiler (where.ts): field paths resolved to columns and JSON
 * keys, values bound as the dialect stores them, and the per-row kind checks of a JSON value
 * (a key below an Object field, an array element). Parameters are positional: each is added
 * exactly when its placeholder enters the text.
 */
export class WhereOperands {
  private aliasCounter = 0;
  /** > 0 while a subquery compiles: its $nearSphere and $text filter but never order the outer rows. */
  protected subqueryLevel = 0;

  constructor(
    protected readonly dialect: Dialect,
    protected readonly params: Params,
    protected readonly lookup: SchemaLookup,
  ) {}

  protected nextAlias(prefix: string): string {
    this.aliasCounter += 1;
    return `${prefix}${this.aliasCounter}`;
  }

  protected operand(schema: ClassSchema, alias: string, path: Path): Operand {
    const { field, keys, def, missing } = resolvePath(schema, path);
    if (missing) {
      return { field, column: 'NULL', keys: [], sql: 'NULL', def: undefined, missing: true, dates: 'other' };
    }
    const quoted = this.dialect.quote(field);
    const column = `${alias}.${quoted}`;
    const sql = keys.length === 0 ? column : this.dialect.jsonPath(column, keys);
    let dates: DateSource = 'other';
    if (field === 'createdAt' || field === 'updatedAt') dates = 'service';
    else if (
      keys.length === 0 &&
      Object.values(schema.indexes).some((index) => Object.keys(index)[0] === field)
    ) {
      dates = { table: this.dialect.quote(tableName(schema.className)), column: quoted };
    }
    return { field, column, keys, sql, def, missing: false, dates };
  }

  /** The value at a key below an Object field. */
  protected pathSlot(op: Operand): JsonSlot {
    return {
      type: this.dialect.jsonType(op.column, op.keys),
      value: op.sql,
      member: (key) => this.dialect.jsonPath(op.column, [...op.keys, key]),
    };
  }

  /** An element listed by `jsonElements`. */
  protected elementSlot(el: { scalar: string; json: string; type: string }): JsonSlot {
    const isObject = this.dialect.jsonTypeIn(el.type, ['object']);
    return {
      type: el.type,
      value: el.scalar,
      // Guarded: reading a member of a string element would be an error (not JSON).
      member: (key) => `CASE WHEN ${isObject} THEN ${this.dialect.jsonPath(el.json, [key])} END`,
    };
  }

  /** A key's value as bound: booleans as the dialect stores them, dates as their ISO text. */
  protected bind(key: Key): string {
    if (key.kind === 'Boolean') return this.params.add(this.dialect.bool(key.value as boolean));
    if (key.kind === 'Date') return this.params.add(isoOf(key));
    return this.params.add(key.value);
  }

  /** What a typed column compares by: a File column by the name in its JSON, the others by the column. */
  protected columnValue(op: Operand): string {
    return op.def?.type === 'File' ? this.dialect.jsonPath(op.column, ['name']) : op.sql;
  }

  /**
   * `expr cmp key`, where `expr` holds values of the key's kind. Dates are ISO text (canonical, as
   * the service writes them), which orders as the instants do for the years 0 to 9999. Other years
   * start with a sign and sort before every digit, '+' (after 9999) first, then '-' (before 0).
   * `dates` says where `expr` comes from: a createdAt or updatedAt column (the service sets them:
   * never such a year), a Date column that leads an index, or anything else.
   */
  protected ordered(expr: string, cmp: Ordering, key: Key, dates: DateSource): string {
    const op = SQL_COMPARE[cmp];
    if (key.kind !== 'Date') return `${expr} ${op} ${this.bind(key)}`;
    const iso = isoOf(key);
    // Rare: an instant outside the years 0 to 9999 is compared as one, without an index.
    if (!/^\d/.test(iso)) return `${this.dialect.dateInstant(expr)} ${op} ${this.params.add(key.value)}`;
    if (dates === 'service') return `${expr} ${op} ${this.params.add(iso)}`;
    // Before a year 0..9999: one range, from '-' (years before 0 are all earlier) up.
    if (cmp === 'lt' || cmp === 'lte') return `(${expr} ${op} ${this.params.add(iso)} AND ${expr} >= '-')`;
    const after = `(${expr} ${op} ${this.params.add(iso)} OR ${expr} < '-')`;
    if (dates === 'other') return after;
    // After it: the years after 9999 sort first, so no one range of the index holds both. An OR of
    // two ranges would make SQLite walk the whole index for an ORDER BY on the column; instead the
    // range starts at the date unless the table holds a year after 9999 (one probe of the index),
    // and the test row by row keeps the answer exact (a count over a long range pays for it).
    const far = this.nextAlias('d');
    const holdsFar = `EXISTS (SELECT 1 FROM ${dates.table} AS ${far} WHERE ${far}.${dates.column} < '-')`;
    return `${expr} ${op} (CASE WHEN ${holdsFar} THEN '' ELSE ${this.params.add(iso)} END) AND ${after}`;
  }

  /** Where a slot holding a value of `kind` keeps what that kind compares by, and the test (no parameters) that it holds one. */
  protected slotValue(slot: JsonSlot, kind: string): { guard: string; expr: string } {
    const isType = (types: readonly JsonType[]) => this.dialect.jsonTypeIn(slot.type, types);
    const tagged = (type: string) => `${slot.member('__type')} = '${type}'`;
    switch (kind) {
      case 'Number':
        return { guard: isType(['number']), expr: slot.value };
      case 'String':
        return { guard: isType(['string']), expr: slot.value };
      case 'Boolean':
        return { guard: isType(['boolean']), expr: slot.value };
      case 'JSON':
        return { guard: isType(['object', 'array']), expr: slot.value };
      case 'Date':
        return { guard: tagged('Date'), expr: slot.member('iso') };
      case 'File':
        return { guard: tagged('File'), expr: slot.member('name') };
      case 'Bytes':
        return { guard: tagged('Bytes'), expr: slot.member('base64') };
      default:
        return {
          guard: `${tagged('Pointer')} AND ${slot.member('className')} = ${textLiteral(pointerClass(kind))}`,
          expr: slot.member('objectId'),
        };
    }
  }

  /** The slot holds a value equal to one of `keys`. */
  protected slotIn(slot: JsonSlot, keys: readonly Key[]): string {
    const byKind = new Map<string, Key[]>();
    for (const key of keys) byKind.set(key.kind, [...(byKind.get(key.kind) ?? []), key]);
    const parts = [...byKind].map(([kind, same]) => {
      const { guard, expr } = this.slotValue(slot, kind);
      const list = same.map((k) => this.bind(k));
      // The value first: it rules out most rows before the type is read.
      return `(${expr} ${list.length === 1 ? `= ${list[0]}` : `IN (${list.join(', ')})`} AND ${guard})`;
    });
    return parts.length === 0 ? FALSE : parts.join(' OR ');
  }

  /** The slot holds a value of the key's kind that orders `cmp` against it. */
  protected slotOrder(slot: JsonSlot, cmp: Ordering, key: Key): string {
    const { guard, expr } = this.slotValue(slot, key.kind);
    // Objects that are dates, pointers, files or bytes are of their own kinds, not JSON.
    const plainJson =
      key.kind === 'JSON'
        ? ` AND COALESCE(${slot.member('__type')}, '') NOT IN ('Date', 'Pointer', 'File', 'Bytes')`
        : '';
    return `${this.ordered(expr, cmp, key, 'other')} AND ${guard}${plainJson}`;
  }

  /**
   * Some element of the operand's array satisfies `test`. Below an Object, an array there is
   * searched and any other value is an element by itself.
   */
  protected someElement(op: Operand, test: (slot: JsonSlot) => string): string {
    if (op.missing) return FALSE;
    if (op.def?.type === 'Array') {
      const el = this.dialect.jsonElements(op.column, this.nextAlias('e'));
      return `EXISTS (SELECT 1 FROM ${el.from} WHERE ${test(this.elementSlot(el))})`;
    }
    const slot = this.pathSlot(op);
    const el = this.dialect.jsonElements(op.column, this.nextAlias('e'), op.keys);
    return (
      `CASE WHEN ${this.dialect.jsonTypeIn(slot.type, ['array'])} ` +
      `THEN EXISTS (SELECT 1 FROM ${el.from} WHERE ${test(this.elementSlot(el))}) ` +
      `ELSE (${test(slot)}) IS TRUE END`
    );
  }

  /** Every element of the operand's array satisfies `test` (true without an array); elements as in `someElement`. */
  protected everyElement(op: Operand, test: (slot: JsonSlot) => string): string {
    if (op.missing) return TRUE;
    if (op.def?.type === 'Array') {
      const el = this.dialect.jsonElements(op.column, this.nextAlias('e'));
      return `NOT EXISTS (SELECT 1 FROM ${el.from} WHERE (${test(this.elementSlot(el))}) IS NOT TRUE)`;
    }
    const slot = this.pathSlot(op);
    const el = this.dialect.jsonElements(op.column, this.nextAlias('e'), op.keys);
    return (
      `CASE WHEN ${this.dialect.jsonTypeIn(slot.type, ['array'])} ` +
      `THEN NOT EXISTS (SELECT 1 FROM ${el.from} WHERE (${test(this.elementSlot(el))}) IS NOT TRUE) ` +
      `WHEN ${slot.value} IS NULL THEN ${TRUE} ` +
      `ELSE (${test(slot)}) IS TRUE END`
    );
  }
}
