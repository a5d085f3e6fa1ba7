import type { FieldType } from '../../kernel/schema.ts';
import type { Dialect, GeoBox, GeoFieldType, JsonType, NativeGeo } from '../sql/dialect.ts';
import { indexName, sqlIdentifier, tableName } from '../sql/names.ts';
import { rowChangeTrigger } from './row-changes.ts';

const quote = (identifier: string) => `"${identifier.replace(/"/g, '""')}"`;

/** A text[] path literal such as `'{"a","b"}'`; keys are field-name safe, quoting keeps them whole. */
function pathLiteral(keys: readonly string[]): string {
  return `'{${keys.map((k) => `"${k.replace(/["'\\{},]/g, '')}"`).join(',')}}'`;
}

/**
 * A value as `json`: JSON kept as text (Object and Array columns; GeoPoint, Polygon and File too)
 * is read as it was written, keys in their order (jsonb would reorder them).
 */
const json = (expr: string) => `(${expr})::json`;

/** A key as a text literal. */
const keyLiteral = (key: string) => `'${key.replace(/'/g, "''")}'`;

/**
 * The JSON value at `keys` below `column` (json), or the column itself. Each step is `->` with a
 * text key, which answers NULL on an array (`#>` would read `0` as an index; SQLite's paths here
 * name object keys only).
 */
const at = (column: string, keys: readonly string[]) =>
  keys.length ? `(${json(column)}${keys.map((k) => ` -> ${keyLiteral(k)}`).join('')})` : json(column);

/** The column of `_ACL_COUNT` that holds a read list as JSON text (the class tables hold text[]). */
const COUNT_KEY = quote('rperm');

/**
 * The native geometry of each geo field type: PostgreSQL's type, the function of functions.ts that
 * computes it from the field's JSON, and what its GiST index holds. A polygon is indexed by its
 * bounding box (`box(polygon)`, box_ops) rather than by poly_ops: `polygon && polygon` rechecks
 * each candidate with PostgreSQL's own overlap test, whose fuzzy comparisons (1e-6) and winding
 * rule are not those of the ray casting in query/geo.ts, while `box && box` is the bounding-box
 * test that ray casting provably implies.
 */
const NATIVE_GEO: Record<
  GeoFieldType,
  { type: string; compute: string; indexed: (column: string) => string }
> = {
  GeoPoint: { type: 'point', compute: 'bds_geo_point', indexed: (column) => column },
  Polygon: { type: 'polygon', compute: 'bds_geo_polygon', indexed: (column) => `box(${column})` },
};

/**
 * The native column of a field: its type, a colon, the field (`point:location`). Field names hold
 * no colon, and the type comes first so that a name shortened to 63 bytes keeps it.
 */
const nativeColumn = (field: string, type: GeoFieldType) =>
  sqlIdentifier(`${NATIVE_GEO[type].type}:${field}`);

/** The GiST index of a native column. */
const nativeIndex = (className: string, field: string, type: GeoFieldType) =>
  indexName(className, nativeColumn(field, type));

/** A box of bound numbers; `box()` puts its corners in order. */
const boxOf = (box: GeoBox, param: (value: number) => string) =>
  `box(point(${param(box.west)}, ${param(box.south)}), point(${param(box.east)}, ${param(box.north)}))`;

/**
 * STORED generated columns of type point (x longitude, y latitude) and polygon (vertices as
 * (longitude, latitude)), GiST-indexed. A point's coordinates are exactly the numbers of its JSON.
 */
const nativeGeo: NativeGeo = {
  column: nativeColumn,
  addColumn: (className, field, type) => {
    const { type: sqlType, compute, indexed } = NATIVE_GEO[type];
    const table = quote(tableName(className));
    const column = quote(nativeColumn(field, type));
    return (
      `ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS ${column} ${sqlType} GENERATED ALWAYS AS (${compute}(${quote(field)})) STORED;` +
      `CREATE INDEX IF NOT EXISTS ${quote(nativeIndex(className, field, type))} ON ${table} USING gist (${indexed(column)});`
    );
  },
  indexes: (className, field, type) => [nativeIndex(className, field, type)],
  tableIndexes: (tableParam) =>
    `SELECT indexname AS name FROM pg_indexes WHERE schemaname = current_schema() AND tablename = ${tableParam}`,
  dropColumn: (className, field, type) =>
    `ALTER TABLE ${quote(tableName(className))} DROP COLUMN IF EXISTS ${quote(nativeColumn(field, type))};`,
  coordinates: (column) => ({ latitude: `(${column})[1]`, longitude: `(${column})[0]` }),
  pointInBoxes: (column, boxes, param) => {
    const tests = boxes.map((box) => `${column} <@ ${boxOf(box, param)}`);
    return tests.length === 1 ? tests[0]! : `(${tests.join(' OR ')})`;
  },
  polygonMeetsBox: (column, box, param) => `box(${column}) && ${boxOf(box, param)}`,
};

/** PostGIS as installed in the database: the schema of its types and functions, and its sphere. */
export interface Postgis {
  /** The extension's schema (pg_extension.extnamespace), not necessarily on the search_path. */
  schema: string;
  /** The radius in meters of the sphere of its distances with use_spheroid false (the WGS84 mean radius). */
  radius: number;
}

/** One row `{schema}` when the database has the postgis extension, none otherwise. */
const POSTGIS_SCHEMA =
  "SELECT n.nspname AS schema FROM pg_extension AS e JOIN pg_namespace AS n ON n.oid = e.extnamespace WHERE e.extname = 'postgis'";

/** The geography (SRID 4326) of a point of longitude `x` and latitude `y`, with PostGIS in schema `ns` (quoted). */
const geographyOf = (ns: string, x: string, y: string) =>
  `${ns}.geography(${ns}.st_setsrid(${ns}.st_makepoint(${x}, ${y}), 4326))`;

/** The geography of a native point column: the expression of its geography index, which queries repeat. */
const pointGeography = (ns: string, column: string) => geographyOf(ns, `(${column})[0]`, `(${column})[1]`);

/**
 * PostGIS in the database, if installed (the service never installs it): its schema, and the
 * radius of its sphere as it measures it itself (a quarter meridian, times 2 / pi), so that the
 * distances the where compiler pads are those st_dwithin compares. Unusable (no privilege on its
 * schema, an odd radius): treated as absent.
 */
export async function findPostgis(
  query: (sql: string) => Promise<ReadonlyArray<Record<string, unknown>>>,
): Promise<Postgis | undefined> {
  const [found] = await query(POSTGIS_SCHEMA);
  if (!found) return undefined;
  const schema = String(found.schema);
  const ns = quote(schema);
  let radius: number;
  try {
    const [measured] = await query(
      `SELECT ${ns}.st_distance(${geographyOf(ns, '0::float8', '0::float8')}, ${geographyOf(ns, '0::float8', '90::float8')}, false) * 2 / pi() AS radius`,
    );
    radius = Number(measured?.radius);
  } catch {
    return undefined;
  }
  return radius > 6.3e6 && radius < 6.4e6 ? { schema, radius } : undefined;
}

/**
 * The native geometry with PostGIS: each native point also has a GiST index on its geography
 * (`"<class>:geography:<field>"`, made with the field, and at start for a class made before
 * PostGIS was installed), which serves `st_dwithin` on a sphere for `$centerSphere` and
 * `$nearSphere` with `$maxDistance`: caps over a pole, across the antimeridian and up to a half
 * turn, which boxes serve badly or not at all. Box and polygon tests stay those of `nativeGeo`.
 */
function postgisNativeGeo(postgis: Postgis): NativeGeo {
  const ns = quote(postgis.schema);
  const geographyIndex = (className: string, field: string) => indexName(className, `geography:${field}`);
  return {
    ...nativeGeo,
    addColumn: (className, field, type) =>
      nativeGeo.addColumn(className, field, type) +
      (type === 'GeoPoint'
        ? `CREATE INDEX IF NOT EXISTS ${quote(geographyIndex(className, field))} ON ${quote(tableName(className))} ` +
          `USING gist ((${pointGeography(ns, quote(nativeColumn(field, type)))}));`
        : ''),
    sphere: {
      radius: postgis.radius,
      // use_spheroid false: distances on the sphere of `radius`, which capMeters pads for.
      pointWithin: (column, center, meters, param) =>
        `${ns}.st_dwithin(${pointGeography(ns, column)}, ${geographyOf(ns, param(center.longitude), param(center.latitude))}, ${param(meters)}, false)`,
    },
    indexes: (className, field, type) => [
      ...nativeGeo.indexes(className, field, type),
      ...(type === 'GeoPoint' ? [geographyIndex(className, field)] : []),
    ],
  };
}

/** The PostgreSQL dialect of a database with PostGIS (see findPostgis), or without: `postgresDialect` itself. */
export function postgresDialectFor(postgis: Postgis | undefined): Dialect {
  return postgis ? { ...postgresDialect, nativeGeo: postgisNativeGeo(postgis) } : postgresDialect;
}

/**
 * PostgreSQL. Typed columns: Number is double precision, Boolean boolean, Vector bytea, the ACL
 * lists text[] (GIN-indexed; `principalsContain` is `&&`). Object, Array, GeoPoint, Polygon and
 * File are their JSON text as the service wrote it, read and rebuilt as `json` (which keeps the
 * order of keys, as SQLite does; the where compiler and the in-memory matcher compare JSON by its
 * text); a top-level GeoPoint or Polygon field also has a native point or polygon column beside
 * it (`nativeGeo`) that geo queries use. The rest is text. A scalar read from JSON is text (JSON
 * null is SQL NULL), compared with typed parameters through the operators of
 * postgres/functions.ts. Placeholders are `$n`, typed for numbers and booleans.
 */
export const postgresDialect: Dialect = {
  name: 'postgres',
  placeholder: (index, value) =>
    typeof value === 'number'
      ? `$${index}::float8`
      : typeof value === 'boolean'
        ? `$${index}::boolean`
        : `$${index}`,
  quote,
  columnType(type: FieldType): string {
    switch (type) {
      case 'Number':
        return 'double precision';
      case 'Boolean':
        return 'boolean';
      case 'Vector':
        return 'bytea';
      default:
        return 'text';
    }
  },
  bool: (value) => value,

  jsonPath: (column, keys) => `bds_scalar(${at(column, keys)})`,
  jsonNumber: (column, keys) => `bds_num(${at(column, keys)} #>> '{}')`,
  jsonPathRaw: (column, keys) => at(column, keys),
  jsonType: (column, keys) => `json_typeof(${at(column, keys)})`,
  jsonTypeIn: (typeExpr, types) =>
    types.length === 1
      ? `${typeExpr} = '${types[0]}'`
      : `${typeExpr} IN (${types.map((n: JsonType) => `'${n}'`).join(', ')})`,
  jsonElements: (column, alias, keys = []) => {
    const array = at(column, keys);
    return {
      // A value that is no array has no elements (json_array_elements would fail on it).
      from: `bds_elements(${array}) AS ${alias}`,
      scalar: `bds_scalar(${alias}.value)`,
      json: `${alias}.value`,
      type: `json_typeof(${alias}.value)`,
    };
  },
  // As text: the where compiler puts an instant beside text values in one CASE (SQLite's values
  // have no fixed type); the operators of functions.ts still compare it with a bound number by value.
  // Values read from JSON are text: a typed column meets them as text too (numbers as float8
  // prints them, the same digits as the JSON of a number the service wrote; JSON as compact text).
  comparableText: (expr) => `(${expr})::text`,
  dateInstant: (iso) => `(bds_instant(${iso}))::text`,

  regexMatch: (expr, pattern, flags) => `bds_regexp(${pattern}, ${flags}, ${expr})`,
  textScore: (expr, spec) => `bds_text_score((${expr})::text, (${spec})::jsonb)`,
  geoDistance: (latitude, longitude, lat, lng) =>
    `bds_distance((${latitude})::float8, (${longitude})::float8, ${lat}, ${lng})`,
  pointInPolygon: (latitude, longitude, polygon) =>
    `bds_point_in_polygon((${latitude})::float8, (${longitude})::float8, (${polygon})::jsonb)`,
  polygonContainsPoint: (column, lat, lng) => `bds_point_in_polygon(${lat}, ${lng}, (${column})::jsonb)`,
  nativeGeo,

  // Each returns json, stored into a text column as its text (an assignment cast).
  arrayAppend: (current, param) => `bds_array_append(${json(current)}, ${json(param)})`,
  arrayAddUnique: (current, param) => `bds_array_add_unique(${json(current)}, ${json(param)})`,
  arrayRemove: (current, param) => `bds_array_remove(${json(current)}, ${json(param)})`,
  jsonSet: (current, keys, param) =>
    `bds_json_set(COALESCE(${json(current)}, '{}'::json), ${pathLiteral(keys)}, ${json(param)})`,
  jsonSetNumber: (current, keys, expr) =>
    `bds_json_set(COALESCE(${json(current)}, '{}'::json), ${pathLiteral(keys)}, to_json((${expr})::float8))`,
  jsonRemove: (current, keys) => `bds_json_remove(${json(current)}, ${pathLiteral(keys)})`,
  // JSON compared whole compares by its text, as in SQLite (the service writes it compact).
  jsonParam: (param) => `(${param})::text`,

  binaryType: 'bytea',
  serialPrimaryKey: 'BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY',
  textContains: (expr, param) => `strpos(${expr}, ${param}) > 0`,
  vectorScore: (column, query, norm, kind) =>
    `bds_vector_score(${column}, (${query})::bytea, ${norm}, ${kind})`,

  insertIgnore: (table, columns, values) =>
    `INSERT INTO ${quote(table)} (${columns.map(quote).join(', ')}) VALUES (${values.join(', ')}) ON CONFLICT DO NOTHING`,
  uniqueViolation: (err) =>
    typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '23505',
  principalsContain: (column, principals, param) => {
    // `_ACL_COUNT` keys read lists by their JSON text (see functions.ts): `"name"` found in it is
    // exactly one element, as in the SQLite dialect. The class tables hold text[]: one `&&`, which
    // the GIN index serves.
    if (column.endsWith(COUNT_KEY) && !column.endsWith(quote('_rperm'))) {
      return principals.map((p) => `strpos(${column}, ${param(JSON.stringify(p))}) > 0`).join(' OR ');
    }
    return `${column} && (${param(principals as unknown as string)})::text[]`;
  },
  encodePrincipals: (list) => list,
  principalsType: 'text[]',
  principalsKey: (column) => `COALESCE(array_to_json(${column})::text, '')`,
  aclCountTriggers: (table, className) => {
    const name = (what: string) => quote(sqlIdentifier(`${table}:acl_count_${what}`));
    const t = quote(table);
    const cls = `'${className.replace(/'/g, "''")}'`;
    return (
      `CREATE OR REPLACE TRIGGER ${name('insert')} AFTER INSERT ON ${t} FOR EACH ROW EXECUTE FUNCTION bds_acl_count(${cls});` +
      `CREATE OR REPLACE TRIGGER ${name('delete')} AFTER DELETE ON ${t} FOR EACH ROW EXECUTE FUNCTION bds_acl_count(${cls});` +
      `CREATE OR REPLACE TRIGGER ${name('update')} AFTER UPDATE OF "_rperm" ON ${t} FOR EACH ROW ` +
      `WHEN (OLD."_rperm" IS DISTINCT FROM NEW."_rperm") EXECUTE FUNCTION bds_acl_count(${cls});` +
      // The read and write lists are searched with `&&`: GIN indexes serve it.
      `CREATE INDEX IF NOT EXISTS ${quote(sqlIdentifier(`${table}:_rperm_gin`))} ON ${t} USING gin ("_rperm");` +
      `CREATE INDEX IF NOT EXISTS ${quote(sqlIdentifier(`${table}:_wperm_gin`))} ON ${t} USING gin ("_wperm");`
    );
  },
  rowChangeTrigger,
  tableTriggers: (tableParam) =>
    `SELECT tgname AS name FROM pg_trigger WHERE tgrelid = to_regclass(quote_ident(${tableParam})) AND NOT tgisinternal`,
  queryTooComplex: (err) => {
    if (!(err instanceof Error)) return false;
    const code = (err as { code?: unknown }).code;
    // 54xxx: program limits (stack depth, too many arguments or columns); 2201B: a regular
    // expression PostgreSQL's engine refuses (RE2 syntax it lacks).
    return (
      (typeof code === 'string' && (code.startsWith('54') || code === '2201B')) ||
      /too many (clients|arguments|columns)|bind message has \d+ parameter formats|must be between 0 and 65535/i.test(
        err.message,
      )
    );
  },
  tableColumns: (tableParam) =>
    `SELECT column_name AS name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ${tableParam}`,
  // The planner's estimate: rows per page at the last ANALYZE or VACUUM (pg_class) times the
  // pages the table has now. A table never analyzed (reltuples -1) is counted.
  estimatedRowCount: (table) =>
    `SELECT CASE WHEN c.reltuples < 0 THEN (SELECT COUNT(*) FROM ${quote(table)}) ` +
    `WHEN c.relpages = 0 THEN c.reltuples::bigint ` +
    `ELSE round(c.reltuples / c.relpages * (pg_relation_size(c.oid) / current_setting('block_size')::integer))::bigint END AS n ` +
    `FROM pg_class AS c WHERE c.oid = to_regclass(${`'${quote(table).replace(/'/g, "''")}'`})`,
  schemaLock: () => `SELECT pg_advisory_xact_lock(hashtext(current_schema() || ':bds-schema')) AS locked`,
  addColumn: (table, definition) => `ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS ${definition};`,
};
