import type { GeoPointValue } from '../../kernel/query.ts';
import type { FieldType } from '../../kernel/schema.ts';

/** The types of JSON values, as the where compiler asks about them. */
export type JsonType = 'null' | 'boolean' | 'number' | 'string' | 'array' | 'object';

/** Collects bound parameters while SQL text is built; the dialect decides how a placeholder looks. */
export class Params {
  readonly values: unknown[] = [];
  constructor(private readonly placeholder: (index: number, value: unknown) => string) {}

  add(value: unknown): string {
    this.values.push(value);
    return this.placeholder(this.values.length, value);
  }
}

/** A rectangle of latitudes and longitudes in degrees, edges included; a bound may be infinite. */
export interface GeoBox {
  south: number;
  west: number;
  north: number;
  east: number;
}

/** The field types whose columns have native geometry beside them (see NativeGeo). */
export type GeoFieldType = 'GeoPoint' | 'Polygon';

/**
 * The engine's own geometry kept beside the JSON column of a top-level GeoPoint or Polygon field:
 * a column the engine computes from the JSON column (never written by the store, never decoded as
 * a field), with an index that answers box tests. The JSON column stays the field's value; geo
 * queries on the field read the point from the native column and put an index-usable box test
 * (a superset of the exact condition) before the exact one.
 */
export interface NativeGeo {
  /** The native column of a field; no field can have its name. */
  column(field: string, type: GeoFieldType): string;
  /** DDL adding the native column and its index to the class table when missing (the field's column exists). */
  addColumn(className: string, field: string, type: GeoFieldType): string;
  /** DDL dropping the native column (and so its index), run before the field's own column is dropped. */
  dropColumn(className: string, field: string, type: GeoFieldType): string;
  /** Latitude and longitude (as numbers) of a native point column, quoted with its table. */
  coordinates(column: string): { latitude: string; longitude: string };
  /** True when the native point lies in one of the boxes; the index serves it. */
  pointInBoxes(column: string, boxes: readonly GeoBox[], param: (value: number) => string): string;
  /** True when the bounding box of the native polygon meets the box; the index serves it. */
  polygonMeetsBox(column: string, box: GeoBox, param: (value: number) => string): string;
  /**
   * Distances on a sphere that an index serves (PostgreSQL with PostGIS): `$centerSphere` and
   * `$nearSphere` with `$maxDistance` test `pointWithin` rather than boxes, with a distance the
   * where compiler pads (capMeters) so that the test holds for every point the exact one accepts.
   */
  readonly sphere?: {
    /** The radius in meters of the engine's sphere. */
    readonly radius: number;
    /** True when the native point lies within `meters` (> 0) of the center on that sphere. */
    pointWithin(
      column: string,
      center: GeoPointValue,
      meters: number,
      param: (value: number) => string,
    ): string;
  };
  /**
   * The names of the indexes `addColumn` makes for a field; at start a table missing one of them
   * (or the column) gets `addColumn` again.
   */
  indexes(className: string, field: string, type: GeoFieldType): string[];
  /** A query answering one row `{name}` per index of the table named by the parameter. */
  tableIndexes(tableParam: string): string;
}

/**
 * Everything that differs between SQL engines. The store and the where compiler are written
 * against this interface only; a new engine is one more implementation of it.
 */
export interface Dialect {
  readonly name: string;
  /** The placeholder of the parameter at `index` (from 1); `value` is what it binds, for an engine that types it. */
  placeholder(index: number, value?: unknown): string;
  quote(identifier: string): string;
  columnType(type: FieldType): string;
  /** How a boolean is bound. */
  bool(value: boolean): unknown;

  /** A scalar read from a JSON column at a key path (an object or array below it reads as its JSON text). */
  jsonPath(column: string, keys: readonly string[]): string;
  /**
   * A number read from a JSON column at a key path, for arithmetic (an increment below an Object);
   * `jsonPath` when absent (SQLite's json_extract answers numbers as numbers).
   */
  jsonNumber?(column: string, keys: readonly string[]): string;
  /** A JSON value (object or array) read from a JSON column at a key path, still JSON. */
  jsonPathRaw(column: string, keys: readonly string[]): string;
  /** The JSON type of the value at a key path of a JSON column; NULL when there is none. */
  jsonType(column: string, keys: readonly string[]): string;
  /** True when a JSON type (from `jsonType` or an element's `type`) is one of `types`. */
  jsonTypeIn(typeExpr: string, types: readonly JsonType[]): string;
  /**
   * A FROM item listing the elements of the JSON array in `column` (or at `keys` below it); each
   * has `scalar` (read as `jsonPath` reads a value), `json` and its JSON `type`.
   */
  jsonElements(
    column: string,
    alias: string,
    keys?: readonly string[],
  ): { from: string; scalar: string; json: string; type: string };
  /**
   * A typed column's value (of `type`) as the where compiler compares it with values read from
   * JSON, whose type is known per row only; absent: as it is (SQLite compares across types).
   */
  comparableText?(expr: string, type: FieldType | undefined): string;
  /** Milliseconds since the epoch of an ISO 8601 text (as `Date.parse` reads it), or NULL. */
  dateInstant(isoExpr: string): string;

  regexMatch(expr: string, patternParam: string, flagsParam: string): string;
  /** The `$text` score of a string for a search given as JSON (query/text.ts textSpecJson); 0 without a match. */
  textScore(expr: string, specParam: string): string;
  /** Great-circle distance in radians between a point (its latitude and longitude expressions) and a point. */
  geoDistance(latitude: string, longitude: string, latParam: string, lngParam: string): string;
  /** 1 when the point (its latitude and longitude expressions) lies in the polygon, else 0. */
  pointInPolygon(latitude: string, longitude: string, polygonParam: string): string;
  polygonContainsPoint(column: string, latParam: string, lngParam: string): string;
  /** Native geometry beside GeoPoint and Polygon columns; absent: geo queries read the JSON only. */
  readonly nativeGeo?: NativeGeo;

  /** Update expressions: each returns the new value of a JSON array from `current`. */
  arrayAppend(current: string, jsonArrayParam: string): string;
  arrayAddUnique(current: string, jsonArrayParam: string): string;
  arrayRemove(current: string, jsonArrayParam: string): string;
  jsonSet(current: string, keys: readonly string[], jsonValueParam: string): string;
  jsonSetNumber(current: string, keys: readonly string[], numberExpr: string): string;
  jsonRemove(current: string, keys: readonly string[]): string;
  /** A JSON text parameter. */
  jsonParam(param: string): string;

  /** Column type of raw bytes (file chunks). */
  readonly binaryType: string;
  /** The definition of a whole-number primary key the engine numbers itself, never reusing a number. */
  readonly serialPrimaryKey: string;
  /** SQL true when the text `expr` holds the text bound at `param` (case-sensitive, no wildcards). */
  textContains(expr: string, param: string): string;
  /**
   * Similarity of a stored vector (a `Vector` column of float32 bytes, or an `Array` column of
   * numbers as JSON) to the query vector (float32 bytes) with its norm; `kindParam` is 0 cosine,
   * 1 dot product, 2 negated euclidean distance. NULL when the dimensions differ. PostgreSQL with
   * pgvector would compile this to its distance operators.
   */
  vectorScore(column: string, queryParam: string, normParam: string, kindParam: string): string;

  insertIgnore(table: string, columns: string[], valuePlaceholders: string[]): string;
  uniqueViolation(err: unknown): boolean;
  /**
   * SQL true when the principal list stored in `column` (a JSON array of strings) holds one of
   * `principals`; `param` binds a value and answers its placeholder. Called for every row a query
   * reads, so it must not parse the column.
   */
  principalsContain(column: string, principals: readonly string[], param: (value: unknown) => string): string;
  /**
   * A principal list (`_rperm`, `_wperm`) as bound and stored; absent: its JSON text. A stored list
   * reads back as that JSON text or as an array of strings.
   */
  encodePrincipals?(list: readonly string[]): unknown;
  /** The `_ACL_COUNT` key of a stored read list (its JSON text, '' for none); absent: the column itself. */
  principalsKey?(column: string): string;
  /** Column type of the principal lists; absent: TEXT (their JSON). */
  readonly principalsType?: string;
  /**
   * A statement run first in the transaction of a schema change (create, change, delete a class),
   * holding a lock until it ends, so that several instances on one database change schemas one at
   * a time; absent where one process owns the database.
   */
  schemaLock?(): string;
  /** DDL adding a column (`table` quoted, `definition` its name and type); absent: ALTER TABLE ADD COLUMN. */
  addColumn?(table: string, definition: string): string;
  /**
   * Statements that keep `_ACL_COUNT` (rows per class and read list) right as rows of `table` are
   * inserted, deleted and have their read list changed; safe to run again.
   */
  aclCountTriggers(table: string, className: string): string;
  /**
   * Where other processes write the store too: the trigger (its name and DDL, safe to run again)
   * logging the class's changed rows for the row caches (storage/postgres/row-changes.ts).
   */
  rowChangeTrigger?(table: string, className: string): { name: string; ddl: string } | undefined;
  /** A query answering one row `{name}` per trigger on the table named by the parameter. */
  tableTriggers(tableParam: string): string;
  /** The engine refused a query as too complex (expression depth, parser stack): the caller's where, not a fault. */
  queryTooComplex(err: unknown): boolean;
  /** A query answering one row `{name}` per column of the table named by the parameter. */
  tableColumns(tableParam: string): string;
  /**
   * A cheap (O(1), no scan) query answering one row `{n}`: about how many rows the table holds.
   * An estimate, not a count; PostgreSQL would read `pg_class.reltuples`.
   */
  estimatedRowCount(table: string): string;
}
