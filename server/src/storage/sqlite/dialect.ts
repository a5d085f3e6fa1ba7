import type { FieldType } from '../../schema/types.ts';
import type { Dialect } from '../sql/dialect.ts';

const quote = (identifier: string) => `"${identifier.replace(/"/g, '""')}"`;

/** A JSON path literal such as `'$."a"."b"'`; keys are field-name safe, quoting keeps dots literal. */
function jsonPathLiteral(keys: readonly string[]): string {
  return `'$${keys.map((k) => `."${k.replace(/["'\\]/g, '')}"`).join('')}'`;
}

/** Rebuilds an array from (g, k, t, v) rows, keeping JSON elements as JSON after a subquery drops their subtype. */
const REBUILD = `json_group_array(CASE t WHEN 'object' THEN json(v) WHEN 'array' THEN json(v) WHEN 'true' THEN json('true') WHEN 'false' THEN json('false') ELSE v END ORDER BY g, k)`;

/**
 * What array elements compare by in AddUnique and Remove: the JSON type and value, so that `true`
 * and `1` differ and `null` compares equal to `null` (a bare NULL would make NOT IN unknown).
 */
const ELEMENT_KEY = `(type || ':' || COALESCE(value, ''))`;

export const sqliteDialect: Dialect = {
  name: 'sqlite',
  placeholder: () => '?',
  quote,
  columnType(type: FieldType): string {
    switch (type) {
      case 'Number':
        return 'REAL';
      case 'Boolean':
        return 'INTEGER';
      default:
        return 'TEXT';
    }
  },
  bool: (value) => (value ? 1 : 0),

  jsonPath: (column, keys) => `json_extract(${column}, ${jsonPathLiteral(keys)})`,
  jsonPathRaw: (column, keys) => `json_extract(${column}, ${jsonPathLiteral(keys)})`,
  jsonElements: (column, alias) => ({
    from: `json_each(${column}) AS ${alias}`,
    scalar: `${alias}.value`,
    json: `${alias}.value`,
  }),

  regexMatch: (expr, pattern, flags) => `bds_regexp(${pattern}, ${flags}, ${expr})`,
  geoDistance: (column, lat, lng) =>
    `bds_distance(json_extract(${column}, '$.latitude'), json_extract(${column}, '$.longitude'), ${lat}, ${lng})`,
  geoLatitude: (column) => `json_extract(${column}, '$.latitude')`,
  geoLongitude: (column) => `json_extract(${column}, '$.longitude')`,
  pointInPolygon: (column, polygon) =>
    `bds_point_in_polygon(json_extract(${column}, '$.latitude'), json_extract(${column}, '$.longitude'), ${polygon})`,
  polygonContainsPoint: (column, lat, lng) => `bds_point_in_polygon(${lat}, ${lng}, ${column})`,

  arrayAppend: (current, param) =>
    `(SELECT ${REBUILD} FROM (SELECT 0 AS g, key AS k, type AS t, value AS v FROM json_each(COALESCE(${current}, '[]'))` +
    ` UNION ALL SELECT 1, key, type, value FROM json_each(${param})))`,
  arrayAddUnique: (current, param) =>
    `(SELECT ${REBUILD} FROM (SELECT 0 AS g, key AS k, type AS t, value AS v FROM json_each(COALESCE(${current}, '[]'))` +
    ` UNION ALL SELECT 1, min(key), type, value FROM json_each(${param})` +
    ` WHERE ${ELEMENT_KEY} NOT IN (SELECT ${ELEMENT_KEY} FROM json_each(COALESCE(${current}, '[]'))) GROUP BY type, value))`,
  arrayRemove: (current, param) =>
    `(SELECT ${REBUILD} FROM (SELECT 0 AS g, key AS k, type AS t, value AS v FROM json_each(COALESCE(${current}, '[]'))` +
    ` WHERE ${ELEMENT_KEY} NOT IN (SELECT ${ELEMENT_KEY} FROM json_each(${param}))))`,
  jsonSet: (current, keys, param) =>
    `json_set(COALESCE(${current}, '{}'), ${jsonPathLiteral(keys)}, json(${param}))`,
  jsonSetNumber: (current, keys, expr) =>
    `json_set(COALESCE(${current}, '{}'), ${jsonPathLiteral(keys)}, ${expr})`,
  jsonRemove: (current, keys) => `json_remove(${current}, ${jsonPathLiteral(keys)})`,
  jsonParam: (param) => `json(${param})`,

  insertIgnore: (table, columns, values) =>
    `INSERT OR IGNORE INTO ${quote(table)} (${columns.map(quote).join(', ')}) VALUES (${values.join(', ')})`,
  uniqueViolation: (err) =>
    typeof err === 'object' &&
    err !== null &&
    String((err as { code?: unknown }).code).startsWith('SQLITE_CONSTRAINT'),
  tableColumns: (tableParam) => `SELECT name FROM pragma_table_info(${tableParam})`,
  // MIN and MAX of the rowid are two b-tree seeks, not a scan. Exact on a class that was only
  // inserted into; after deletes it overestimates (the gaps still count) until rows are re-added.
  estimatedRowCount: (table) => `SELECT COALESCE(MAX(rowid) - MIN(rowid) + 1, 0) AS n FROM ${quote(table)}`,
};
