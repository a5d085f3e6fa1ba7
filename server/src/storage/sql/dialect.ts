import type { FieldType } from '../../schema/types.ts';

/** Collects bound parameters while SQL text is built; the dialect decides how a placeholder looks. */
export class Params {
  readonly values: unknown[] = [];
  constructor(private readonly placeholder: (index: number) => string) {}

  add(value: unknown): string {
    this.values.push(value);
    return this.placeholder(this.values.length);
  }
}

/**
 * Everything that differs between SQL engines. The store and the where compiler are written
 * against this interface only; a new engine is one more implementation of it.
 */
export interface Dialect {
  readonly name: string;
  placeholder(index: number): string;
  quote(identifier: string): string;
  columnType(type: FieldType): string;
  /** How a boolean is bound. */
  bool(value: boolean): unknown;

  /** A scalar read from a JSON column at a key path. */
  jsonPath(column: string, keys: readonly string[]): string;
  /** A JSON value (object or array) read from a JSON column at a key path, still JSON. */
  jsonPathRaw(column: string, keys: readonly string[]): string;
  /** A FROM item listing the elements of a JSON array column; each has `elem` (scalar) and `elemJson`. */
  jsonElements(column: string, alias: string): { from: string; scalar: string; json: string };

  regexMatch(expr: string, patternParam: string, flagsParam: string): string;
  /** Great-circle distance in radians between a stored GeoPoint column and a point. */
  geoDistance(column: string, latParam: string, lngParam: string): string;
  geoLatitude(column: string): string;
  geoLongitude(column: string): string;
  pointInPolygon(column: string, polygonParam: string): string;
  polygonContainsPoint(column: string, latParam: string, lngParam: string): string;

  /** Update expressions: each returns the new value of a JSON array from `current`. */
  arrayAppend(current: string, jsonArrayParam: string): string;
  arrayAddUnique(current: string, jsonArrayParam: string): string;
  arrayRemove(current: string, jsonArrayParam: string): string;
  jsonSet(current: string, keys: readonly string[], jsonValueParam: string): string;
  jsonSetNumber(current: string, keys: readonly string[], numberExpr: string): string;
  jsonRemove(current: string, keys: readonly string[]): string;
  /** A JSON text parameter. */
  jsonParam(param: string): string;

  insertIgnore(table: string, columns: string[], valuePlaceholders: string[]): string;
  uniqueViolation(err: unknown): boolean;
  /** A query answering one row `{name}` per column of the table named by the parameter. */
  tableColumns(tableParam: string): string;
  /**
   * A cheap (O(1), no scan) query answering one row `{n}`: about how many rows the table holds.
   * An estimate, not a count; PostgreSQL would read `pg_class.reltuples`.
   */
  estimatedRowCount(table: string): string;
}
