import type { Path, QueryNode, SubQuery } from '../../kernel/query.ts';
import type { ClassSchema } from '../../kernel/schema.ts';
import { checkInQueryField, fieldKind, pointerKind, queryFieldDef } from '../../query/fields.ts';
import type { JsonType } from './dialect.ts';
import { tableName } from './names.ts';
import { WhereGeo } from './where-geo.ts';
import { FALSE, type JsonSlot, type Operand, TRUE, textLiteral } from './where-operands.ts';

/** The types whose columns hold a JSON value compared whole (GeoPoint and Polygon without `__type`). */
const WHOLE = new Set(['GeoPoint', 'Polygon', 'Object', 'Array']);

/**
 * The where compiler's subqueries (`$inQuery`, `$notInQuery`, `$select`, `$dontSelect`): the rows
 * of another class, compiled by the same compiler (their access rules are nodes of their where).
 */
export abstract class WhereSubqueries extends WhereGeo {
  abstract compile(node: QueryNode, schema: ClassSchema, alias: string): string;

  /**
   * Compiles a subquery's where that the SQL leaves out (its answer cannot matter), for its
   * refusals only: a where is refused or not whatever the rest of the query is.
   */
  protected abstract check(where: QueryNode, inner: ClassSchema): void;

  protected subquerySchema(query: SubQuery): ClassSchema | undefined {
    return this.lookup(query.className);
  }

  protected inQuery(schema: ClassSchema, alias: string, path: Path, query: SubQuery, not: boolean): string {
    const op = this.operand(schema, alias, path);
    const inner = this.subquerySchema(query);
    checkInQueryField(op, path);
    if (!inner) return not ? TRUE : FALSE;
    if (op.missing || (op.def?.type === 'Pointer' && op.def.targetClass !== inner.className)) {
      this.check(query.where, inner);
      return not ? TRUE : FALSE;
    }
    if (op.def?.type === 'Array') {
      // Elements that are pointers to the class.
      const el = this.dialect.jsonElements(op.column, this.nextAlias('e'));
      const { guard, expr } = this.slotValue(this.elementSlot(el), pointerKind(inner.className));
      const any = `EXISTS (SELECT 1 FROM ${el.from} WHERE ${guard} AND ${expr} IN (${this.objectIds(inner, query.where)}))`;
      return not ? `NOT ${any}` : any;
    }
    const sub = this.objectIds(inner, query.where);
    return not ? `(${op.sql} IS NULL OR ${op.sql} NOT IN (${sub}))` : `${op.sql} IN (${sub})`;
  }

  /** The objectIds of the rows of `inner` that match `where`. */
  protected objectIds(inner: ClassSchema, where: QueryNode): string {
    const a = this.nextAlias('s');
    return this.subquery(inner, a, where, [this.operand(inner, a, ['objectId']).sql]);
  }

  /**
   * `$select` / `$dontSelect`: the value is one of the values the subquery's rows hold at `key`, as
   * the matcher's `in` list of those values would decide (kinds included).
   */
  protected select(
    schema: ClassSchema,
    alias: string,
    path: Path,
    query: SubQuery,
    key: string,
    not: boolean,
  ): string {
    const op = this.operand(schema, alias, path);
    const inner = this.subquerySchema(query);
    const keyPath = key.split('.');
    if (!inner) return not ? TRUE : FALSE;
    const keyDef = queryFieldDef(inner, keyPath[0]!);
    const matches =
      op.missing || !keyDef || keyDef.type === 'Relation'
        ? FALSE
        : this.selected(op, inner, keyPath, query.where);
    if (matches === FALSE) this.check(query.where, inner);
    if (!not) return matches;
    return matches === FALSE ? TRUE : `(${matches}) IS NOT TRUE`;
  }

  protected selected(op: Operand, inner: ClassSchema, keyPath: string[], where: QueryNode): string {
    const a = this.nextAlias('s');
    const key = this.operand(inner, a, keyPath);
    const type = op.def?.type;
    const kind = op.def && fieldKind(op.def);
    if (kind) {
      const dateField = type === 'Date';
      if (key.def) {
        // Two typed columns: the common case, `column IN (SELECT column ...)` when they hold one kind.
        if (this.storedKind(key, dateField) !== kind) return FALSE;
        return `${this.columnValue(op)} IN (${this.subquery(inner, a, where, [this.columnValue(key)])})`;
      }
      const stored = this.storedKey(this.pathSlot(key), dateField);
      const sub = this.subquery(
        inner,
        a,
        where,
        [stored.value],
        () => `${stored.kind} = ${this.params.add(kind)}`,
      );
      return `${this.comparable(op, dateField)} IN (${sub})`;
    }
    if (type === 'GeoPoint' || type === 'Polygon' || type === 'Object') {
      // Compared whole, by JSON text with coordinates only: what these columns and Arrays hold.
      if (key.def && !WHOLE.has(key.def.type)) return FALSE;
      const slot = key.def ? undefined : this.pathSlot(key);
      const value = slot ? this.stripped(slot) : this.dialect.jsonParam(key.sql);
      const sub = this.subquery(inner, a, where, [value], () =>
        slot ? this.dialect.jsonTypeIn(slot.type, ['object', 'array']) : TRUE,
      );
      return `${this.dialect.jsonParam(op.sql)} IN (${sub})`;
    }
    // A key below an Object, or the elements of an Array: kinds known per row, compared as pairs.
    let pairs: string[];
    if (key.def) {
      const keyKind = this.storedKind(key, false);
      if (keyKind === undefined) return FALSE;
      pairs = [textLiteral(keyKind), this.comparable(key, false)];
    } else {
      const stored = this.storedKey(this.pathSlot(key), false);
      pairs = [stored.kind, stored.value];
    }
    const sub = this.subquery(inner, a, where, pairs);
    const pairIn = (slot: JsonSlot) => {
      const stored = this.storedKey(slot, false);
      return `(${stored.kind}, ${stored.value}) IN (${sub})`;
    };
    if (type === 'Array') {
      const el = this.dialect.jsonElements(op.column, this.nextAlias('e'));
      return `EXISTS (SELECT 1 FROM ${el.from} WHERE ${pairIn(this.elementSlot(el))})`;
    }
    return pairIn(this.pathSlot(op));
  }

  /**
   * The kind of the wire values of a typed column, as a field read with `dateField` sees them:
   * createdAt and updatedAt are ISO strings there (dates for a Date field); GeoPoint, Polygon,
   * Object and Array values are JSON.
   */
  protected storedKind(op: Operand, dateField: boolean): string | undefined {
    if (op.field === 'createdAt' || op.field === 'updatedAt') return dateField ? 'Date' : 'String';
    if (op.def && WHOLE.has(op.def.type)) return 'JSON';
    return op.def && fieldKind(op.def);
  }

  /** What a typed column compares by when kinds are compared per row: dates by instant, JSON by its wire text. */
  protected comparable(op: Operand, dateField: boolean): string {
    const value = this.comparableValue(op, dateField);
    return this.dialect.comparableText?.(value, op.def?.type) ?? value;
  }

  protected comparableValue(op: Operand, dateField: boolean): string {
    const date =
      op.def?.type === 'Date' || (dateField && (op.field === 'createdAt' || op.field === 'updatedAt'));
    if (date) return this.dialect.dateInstant(op.sql);
    // The columns keep GeoPoints and Polygons without the `__type` their wire form begins with.
    if (op.def?.type === 'GeoPoint') return `'{"__type":"GeoPoint",' || substr(${op.sql}, 2)`;
    if (op.def?.type === 'Polygon') return `'{"__type":"Polygon","coordinates":' || ${op.sql} || '}'`;
    return this.columnValue(op);
  }

  /** The JSON text of a slot's value as a GeoPoint, Polygon or Object field compares it: coordinates only. */
  protected stripped(slot: JsonSlot): string {
    // Each branch as the dialect compares JSON (SQLite's json(), PostgreSQL's text: its CASE needs one type).
    const json = this.dialect.jsonParam;
    return (
      `CASE ${slot.member('__type')} WHEN 'GeoPoint' THEN ${json(this.dialect.jsonRemove(slot.value, ['__type']))} ` +
      `WHEN 'Polygon' THEN ${json(slot.member('coordinates'))} ELSE ${json(slot.value)} END`
    );
  }

  /** The kind and the value (dates by instant) of what a slot holds, as SQL; both NULL without a value. */
  protected storedKey(slot: JsonSlot, dateField: boolean): { kind: string; value: string } {
    const is = (types: readonly JsonType[]) => this.dialect.jsonTypeIn(slot.type, types);
    const tag = slot.member('__type');
    const tagged = `${is(['object'])} AND ${tag} IN ('Date', 'Pointer', 'File', 'Bytes')`;
    const kind =
      `CASE WHEN ${is(['number'])} THEN 'Number' WHEN ${is(['string'])} THEN '${dateField ? 'Date' : 'String'}' ` +
      `WHEN ${is(['boolean'])} THEN 'Boolean' ` +
      `WHEN ${tagged} THEN CASE ${tag} WHEN 'Pointer' THEN 'Pointer<' || ${slot.member('className')} || '>' ELSE ${tag} END ` +
      `WHEN ${is(['object', 'array'])} THEN 'JSON' END`;
    const value =
      `CASE WHEN ${is(['string'])} THEN ${dateField ? this.dialect.dateInstant(slot.value) : slot.value} ` +
      `WHEN ${tagged} THEN CASE ${tag} WHEN 'Date' THEN ${this.dialect.dateInstant(slot.member('iso'))} ` +
      `WHEN 'Pointer' THEN ${slot.member('objectId')} WHEN 'File' THEN ${slot.member('name')} ` +
      `ELSE ${slot.member('base64')} END ELSE ${slot.value} END`;
    return { kind, value };
  }

  /**
   * `SELECT columns FROM inner AS alias WHERE where`, without the rows where a column is NULL;
   * `filter` (built after `where`, for its parameters) narrows the rows further.
   */
  protected subquery(
    inner: ClassSchema,
    alias: string,
    where: QueryNode,
    columns: string[],
    filter?: () => string,
  ): string {
    this.subqueryLevel++;
    let condition: string;
    try {
      condition = this.compile(where, inner, alias);
    } finally {
      this.subqueryLevel--;
    }
    const extra = filter ? ` AND ${filter()}` : '';
    // NULLs are left out: one NULL in the list would make `x NOT IN (...)` unknown for every row.
    const present = columns.map((c) => ` AND ${c} IS NOT NULL`).join('');
    return `SELECT ${columns.join(', ')} FROM ${this.dialect.quote(tableName(inner.className))} AS ${alias} WHERE (${condition})${extra}${present}`;
  }
}
