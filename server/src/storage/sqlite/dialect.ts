import type { FieldType } from '../../kernel/schema.ts';
import type { Dialect, JsonType } from '../sql/dialect.ts';
import { sqlIdentifier } from '../sql/names.ts';

const quote = (identifier: string) => `"${identifier.replace(/"/g, '""')}"`;

/** A JSON path literal such as `'$."a"."b"'`; keys are field-name safe, quoting keeps dots literal. */
function jsonPathLiteral(keys: readonly string[]): string {
  return `'$${keys.map((k) => `."${k.replace(/["'\\]/g, '')}"`).join('')}'`;
}

/** The names json_type and json_each give each type of JSON value. */
const SQLITE_JSON_TYPES: Record<JsonType, string[]> = {
  null: ['null'],
  boolean: ['true', 'false'],
  number: ['integer', 'real'],
  string: ['text'],
  array: ['array'],
  object: ['object'],
};

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
      case 'Vector':
        return 'BLOB';
      default:
        return 'TEXT';
    }
  },
  bool: (value) => (value ? 1 : 0),

  jsonPath: (column, keys) => `json_extract(${column}, ${jsonPathLiteral(keys)})`,
  jsonPathRaw: (column, keys) => `json_extract(${column}, ${jsonPathLiteral(keys)})`,
  jsonType: (column, keys) => `json_type(${column}, ${jsonPathLiteral(keys)})`,
  jsonTypeIn: (typeExpr, types) => {
    const names = types.flatMap((t) => SQLITE_JSON_TYPES[t]);
    return names.length === 1
      ? `${typeExpr} = '${names[0]}'`
      : `${typeExpr} IN (${names.map((n) => `'${n}'`).join(', ')})`;
  },
  jsonElements: (column, alias, keys = []) => ({
    from: `json_each(${column}${keys.length ? `, ${jsonPathLiteral(keys)}` : ''}) AS ${alias}`,
    scalar: `${alias}.value`,
    json: `${alias}.value`,
    type: `${alias}.type`,
  }),
  dateInstant: (iso) => `bds_instant(${iso})`,

  regexMatch: (expr, pattern, flags) => `bds_regexp(${pattern}, ${flags}, ${expr})`,
  textScore: (expr, spec) => `bds_text_score(${expr}, ${spec})`,
  geoDistance: (latitude, longitude, lat, lng) => `bds_distance(${latitude}, ${longitude}, ${lat}, ${lng})`,
  pointInPolygon: (latitude, longitude, polygon) =>
    `bds_point_in_polygon(${latitude}, ${longitude}, ${polygon})`,
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

  binaryType: 'BLOB',
  serialPrimaryKey: 'INTEGER PRIMARY KEY AUTOINCREMENT',
  textContains: (expr, param) => `instr(${expr}, ${param}) > 0`,
  vectorScore: (column, query, norm, kind) => `bds_vector_score(${column}, ${query}, ${norm}, ${kind})`,

  insertIgnore: (table, columns, values) =>
    `INSERT OR IGNORE INTO ${quote(table)} (${columns.map(quote).join(', ')}) VALUES (${values.join(', ')})`,
  uniqueViolation: (err) =>
    typeof err === 'object' &&
    err !== null &&
    String((err as { code?: unknown }).code).startsWith('SQLITE_CONSTRAINT'),
  // A principal holds no double quote (PRINCIPAL in data/write-body.ts), so `"name"` found in the
  // JSON text is exactly one element: no JSON parsing per row.
  principalsContain: (column, principals, param) =>
    principals.map((p) => `instr(${column}, ${param(JSON.stringify(p))}) > 0`).join(' OR '),
  aclCountTriggers: (table, className) => {
    const name = (what: string) => quote(sqlIdentifier(`${table}:acl_count_${what}`));
    const t = quote(table);
    const cls = `'${className.replace(/'/g, "''")}'`;
    const add = (rperm: string) =>
      `INSERT INTO "_ACL_COUNT" (class, rperm, n) VALUES (${cls}, COALESCE(${rperm}, ''), 1) ON CONFLICT (class, rperm) DO UPDATE SET n = n + 1;`;
    const remove = (rperm: string) =>
      `UPDATE "_ACL_COUNT" SET n = n - 1 WHERE class = ${cls} AND rperm = COALESCE(${rperm}, '');`;
    return (
      `CREATE TRIGGER IF NOT EXISTS ${name('insert')} AFTER INSERT ON ${t} BEGIN ${add('NEW._rperm')} END;` +
      `CREATE TRIGGER IF NOT EXISTS ${name('delete')} AFTER DELETE ON ${t} BEGIN ${remove('OLD._rperm')} END;` +
      `CREATE TRIGGER IF NOT EXISTS ${name('update')} AFTER UPDATE OF _rperm ON ${t} WHEN OLD._rperm IS NOT NEW._rperm BEGIN ${remove('OLD._rperm')} ${add('NEW._rperm')} END;`
    );
  },
  tableTriggers: (tableParam) =>
    `SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ${tableParam}`,
  queryTooComplex: (err) =>
    err instanceof Error &&
    /Expression tree is too large|parser stack overflow|too many (terms|columns|SQL variables)|at most \d+ tables in a join/i.test(
      err.message,
    ),
  tableColumns: (tableParam) => `SELECT name FROM pragma_table_info(${tableParam})`,
  // MIN and MAX of the rowid are two b-tree seeks, not a scan. Exact on a class that was only
  // inserted into; after deletes it overestimates (the gaps still count) until rows are re-added.
  estimatedRowCount: (table) => `SELECT COALESCE(MAX(rowid) - MIN(rowid) + 1, 0) AS n FROM ${quote(table)}`,
};
