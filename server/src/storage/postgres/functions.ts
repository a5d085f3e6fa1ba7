/**
 * SQL functions and operators the PostgreSQL dialect compiles to, created in the store's schema
 * (the first of the connection's search_path) when the store starts: the counterparts of
 * sqlite/functions.ts, in plain SQL and PL/pgSQL (no extension needed).
 *
 * Values read below an Object field or from an array element are text (`#>>`), as SQLite's
 * json_extract answers a scalar; a number or a boolean is bound typed (`$1::float8`,
 * `$1::boolean`, see dialect.ts), and the operators below compare such text with it by value, so
 * `obj.n > 5` orders numbers as numbers. A text that is no number compares as NULL (unknown); the
 * where compiler checks the JSON type beside every such comparison anyway.
 */

import { NON_MEMBER_WAITS } from './sole-lease.ts';

/** Text as a number, NULL when it is none (never an error). */
const NUM = `
CREATE OR REPLACE FUNCTION bds_num(value text) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN value ~ '^-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?$' THEN value::double precision END
$$;
`;

const COMPARISONS: Array<[string, string, string]> = [
  ['=', 'eq', '<>'],
  ['<>', 'ne', '='],
  ['<', 'lt', '>='],
  ['<=', 'lte', '>'],
  ['>', 'gt', '<='],
  ['>=', 'gte', '<'],
];

/**
 * `text op float8` and `text op boolean`, each a function and an operator made once. Booleans
 * order as SQLite's 0 and 1 do (false before true).
 */
function operators(): string {
  let sql = '';
  for (const [op, name] of COMPARISONS) {
    sql += `CREATE OR REPLACE FUNCTION bds_text_${name}_num(a text, b double precision) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT bds_num(a) ${op} b $$;\n`;
    sql += `CREATE OR REPLACE FUNCTION bds_text_${name}_bool(a text, b boolean) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT (CASE a WHEN 'true' THEN 1 WHEN 'false' THEN 0 END) ${op} b::integer $$;\n`;
  }
  // CREATE OPERATOR has no OR REPLACE: made only when the schema lacks it.
  sql += 'DO $$ BEGIN\n';
  for (const [op, name] of COMPARISONS) {
    for (const [kind, type] of [
      ['num', 'double precision'],
      ['bool', 'boolean'],
    ] as const) {
      sql +=
        `IF NOT EXISTS (SELECT 1 FROM pg_operator o JOIN pg_namespace n ON n.oid = o.oprnamespace ` +
        `WHERE n.nspname = current_schema() AND o.oprname = '${op}' AND o.oprleft = 'text'::regtype AND o.oprright = '${type}'::regtype) THEN\n` +
        `  CREATE OPERATOR ${op} (LEFTARG = text, RIGHTARG = ${type}, FUNCTION = bds_text_${name}_${kind});\n` +
        'END IF;\n';
    }
  }
  sql += 'END $$;\n';
  return sql;
}

/**
 * Milliseconds since the epoch of an ISO 8601 text, as Date.parse reads one (a date alone, or a
 * date and time with or without a zone, years of four digits or six with a sign); NULL otherwise.
 */
const INSTANT = `
CREATE OR REPLACE FUNCTION bds_instant(iso text) RETURNS double precision
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  m text[];
  year integer;
  at timestamptz;
BEGIN
  m := regexp_match(iso, '^([+-][0-9]{6}|[0-9]{4})(-([0-9]{2})(-([0-9]{2}))?)?(T([0-9]{2}):([0-9]{2})(:([0-9]{2})(\\.[0-9]+)?)?(Z|[+-][0-9]{2}:[0-9]{2})?)?$');
  IF m IS NULL OR iso = '-000000' OR left(iso, 7) = '-000000' THEN RETURN NULL; END IF;
  year := m[1]::integer;
  BEGIN
    at := make_timestamptz(
      CASE WHEN year <= 0 THEN year - 1 ELSE year END,
      COALESCE(m[3], '01')::integer, COALESCE(m[5], '01')::integer,
      COALESCE(m[7], '00')::integer, COALESCE(m[8], '00')::integer,
      (COALESCE(m[10], '00') || COALESCE(m[11], ''))::double precision,
      CASE WHEN m[12] IS NULL OR m[12] = 'Z' THEN 'UTC' ELSE m[12] END);
  EXCEPTION WHEN others THEN
    RETURN NULL;
  END;
  RETURN floor(extract(epoch FROM at) * 1000);
END $$;
`;

/** Great-circle distance in radians (haversine), as query/geo.ts distanceRadians. */
const DISTANCE = `
CREATE OR REPLACE FUNCTION bds_distance(lat1 double precision, lng1 double precision, lat2 double precision, lng2 double precision)
RETURNS double precision LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT 2 * atan2(sqrt(a), sqrt(1 - a)) FROM (SELECT
    sin(radians(lat2 - lat1) / 2) ^ 2 + cos(radians(lat1)) * cos(radians(lat2)) * sin(radians(lng2 - lng1) / 2) ^ 2 AS a) AS h
$$;
`;

/**
 * A point on the boundary (a vertex or an edge: zero cross product), or inside by ray casting, over
 * [latitude, longitude] vertices, with the arithmetic of query/geo.ts pointInPolygon: 1 inside, else 0.
 */
const POLYGON = `
CREATE OR REPLACE FUNCTION bds_point_in_polygon(lat double precision, lng double precision, polygon jsonb)
RETURNS integer LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  n integer;
  i integer;
  j integer;
  yi double precision; xi double precision; yj double precision; xj double precision;
  inside boolean := false;
BEGIN
  IF lat IS NULL OR lng IS NULL OR polygon IS NULL OR jsonb_typeof(polygon) <> 'array' THEN RETURN 0; END IF;
  n := jsonb_array_length(polygon);
  j := n - 1;
  FOR i IN 0 .. n - 1 LOOP
    yi := (polygon -> i ->> 0)::double precision; xi := (polygon -> i ->> 1)::double precision;
    yj := (polygon -> j ->> 0)::double precision; xj := (polygon -> j ->> 1)::double precision;
    IF lat >= least(yi, yj) AND lat <= greatest(yi, yj) AND lng >= least(xi, xj) AND lng <= greatest(xi, xj)
      AND (xj - xi) * (lat - yi) - (yj - yi) * (lng - xi) = 0 THEN
      RETURN 1;
    END IF;
    IF (yi > lat) <> (yj > lat) AND lng < (xj - xi) * (lat - yi) / (yj - yi) + xi THEN
      inside := NOT inside;
    END IF;
    j := i;
  END LOOP;
  RETURN CASE WHEN inside THEN 1 ELSE 0 END;
END $$;
`;

/**
 * The `$text` score of query/text.ts textScore, with the same arithmetic: the words of the value
 * (combining marks U+0300..U+036F dropped after NFD unless diacritic sensitive, lowercased unless
 * case sensitive, runs of letters and digits, stop words out) and, for each search term found
 * c times among n words, (2 - 2^(1-c)) * (0.5 * c / n + 0.5). 0 when nothing matches.
 */
const TEXT_SCORE = `
CREATE OR REPLACE FUNCTION bds_text_score(value text, spec jsonb)
RETURNS double precision LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  folded text;
  words text[];
  stop text[];
  n integer;
  c integer;
  term text;
  score double precision := 0;
BEGIN
  IF value IS NULL OR spec IS NULL OR jsonb_array_length(spec -> 'terms') = 0 THEN RETURN 0; END IF;
  folded := value;
  IF NOT (spec ->> 'diacriticSensitive')::boolean THEN
    folded := regexp_replace(normalize(folded, NFD), '[̀-ͯ]', '', 'g');
  END IF;
  IF NOT (spec ->> 'caseSensitive')::boolean THEN folded := lower(folded); END IF;
  stop := ARRAY(SELECT jsonb_array_elements_text(spec -> 'stop'));
  words := ARRAY(SELECT w FROM unnest(regexp_split_to_array(folded, '[^[:alnum:]]+')) AS w
    WHERE w <> '' AND NOT (lower(w) = ANY (stop)));
  n := cardinality(words);
  IF n = 0 THEN RETURN 0; END IF;
  FOR term IN SELECT jsonb_array_elements_text(spec -> 'terms') LOOP
    SELECT count(*) INTO c FROM unnest(words) AS w WHERE w = term;
    IF c > 0 THEN
      score := score + (2::float8 - 2::float8 ^ (1 - c)::float8) * ((0.5::float8 * c) / n + 0.5::float8);
    END IF;
  END LOOP;
  RETURN score;
END $$;
`;

/**
 * The native geometry of a GeoPoint or Polygon column (see `nativeGeo` in dialect.ts), computed
 * from its JSON text by the STORED generated columns: a point (longitude, latitude) and a polygon
 * of (longitude, latitude) vertices. Each coordinate is read from the digits of its JSON number,
 * so it is the very number the service wrote. A value of another shape has none (NULL), never an
 * error that would refuse the row. Text of JSON, and not jsonb: jsonb would read numbers as numeric.
 */
const GEOMETRY = `
CREATE OR REPLACE FUNCTION bds_geo_point(value text) RETURNS point
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN json_typeof(value::json -> 'latitude') = 'number' AND json_typeof(value::json -> 'longitude') = 'number'
    THEN point((value::json ->> 'longitude')::double precision, (value::json ->> 'latitude')::double precision) END
$$;
CREATE OR REPLACE FUNCTION bds_geo_polygon(coordinates text) RETURNS polygon
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT ('(' || string_agg('(' || (v ->> 1) || ',' || (v ->> 0) || ')', ',' ORDER BY o) || ')')::polygon
  FROM json_array_elements(CASE WHEN json_typeof(coordinates::json) = 'array' THEN coordinates::json END) WITH ORDINALITY AS e(v, o)
  HAVING bool_and(CASE WHEN json_typeof(v) = 'array'
    THEN json_array_length(v) = 2 AND json_typeof(v -> 0) = 'number' AND json_typeof(v -> 1) = 'number' ELSE false END)
$$;
`;

/**
 * `$regex` by PostgreSQL's own engine (`~`), its flags translated: RE2's default (`.` and
 * `[^x]` stop at a newline, `^`/`$` at the ends) is PostgreSQL's `p`; `s` lets `.` match
 * newlines; `m` makes `^`/`$` match at lines (`n`, or `w` with `s`); `i` ignores case.
 * A pattern RE2 accepted and PostgreSQL does not is an error with SQLSTATE 2201B, which the
 * dialect reports as the caller's invalid query. RE2 syntax PostgreSQL reads otherwise or not at
 * all: `\b` and `\B` (word boundaries in RE2; PostgreSQL's are `\y` and `\Y`, its `\b` is a
 * backspace), `\z` (PostgreSQL: `\Z`), `\pL` and `\p{Greek}` (no Unicode classes), `(?P<name>…)`
 * named groups, `\Q…\E`, and flag groups inside a pattern (`(?i)` only at its very start, where
 * this function already puts its own). The parser still checks every pattern with RE2 and its
 * size bounds; PostgreSQL's engine is not linear-time by construction, but without
 * backreferences (which RE2 refuses) it ran the patterns of regex-attack.test.ts in under a
 * millisecond.
 */
const REGEXP = `
CREATE OR REPLACE FUNCTION bds_regexp(pattern text, flags text, value text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT value ~ ('(?' ||
    CASE WHEN strpos(flags, 's') > 0 THEN CASE WHEN strpos(flags, 'm') > 0 THEN 'w' ELSE 's' END
         ELSE CASE WHEN strpos(flags, 'm') > 0 THEN 'n' ELSE 'p' END END ||
    CASE WHEN strpos(flags, 'i') > 0 THEN 'i' ELSE '' END || ')' || pattern)
$$;
`;

/**
 * Vector similarity, as sqlite/functions.ts similarity: 0 cosine, 1 dot product, 2 negated
 * euclidean distance; NULL when the dimensions differ. The stored value is a Vector column's
 * little-endian float32 bytes or an Array column's JSON numbers.
 */
const VECTOR = `
CREATE OR REPLACE FUNCTION bds_float32s(bytes bytea) RETURNS double precision[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  out double precision[] := '{}';
  bits bigint;
  e integer;
  mantissa bigint;
  v double precision;
BEGIN
  IF bytes IS NULL THEN RETURN NULL; END IF;
  FOR i IN 0 .. length(bytes) / 4 - 1 LOOP
    bits := get_byte(bytes, 4 * i)::bigint | (get_byte(bytes, 4 * i + 1)::bigint << 8)
      | (get_byte(bytes, 4 * i + 2)::bigint << 16) | (get_byte(bytes, 4 * i + 3)::bigint << 24);
    e := ((bits >> 23) & 255)::integer;
    mantissa := bits & 8388607;
    IF e = 0 THEN v := mantissa * 2.0::double precision ^ -149;
    ELSIF e = 255 THEN v := 'NaN';
    ELSE v := (1 + mantissa / 8388608.0::double precision) * 2.0::double precision ^ (e - 127);
    END IF;
    IF (bits >> 31) = 1 THEN v := -v; END IF;
    out := out || v;
  END LOOP;
  RETURN out;
END $$;
CREATE OR REPLACE FUNCTION bds_similarity(a double precision[], q double precision[], qnorm double precision, kind double precision)
RETURNS double precision LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  dot double precision := 0; sq double precision := 0; dist double precision := 0;
BEGIN
  IF a IS NULL OR q IS NULL OR cardinality(a) <> cardinality(q) THEN RETURN NULL; END IF;
  FOR i IN 1 .. cardinality(q) LOOP
    dot := dot + a[i] * q[i];
    sq := sq + a[i] * a[i];
    dist := dist + (a[i] - q[i]) * (a[i] - q[i]);
  END LOOP;
  IF kind = 1 THEN RETURN dot; END IF;
  IF kind = 2 THEN RETURN -sqrt(dist); END IF;
  IF sqrt(sq) * qnorm = 0 THEN RETURN 0; END IF;
  RETURN dot / (sqrt(sq) * qnorm);
END $$;
CREATE OR REPLACE FUNCTION bds_vector_score(stored bytea, query bytea, qnorm double precision, kind double precision)
RETURNS double precision LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT bds_similarity(bds_float32s(stored), bds_float32s(query), qnorm, kind)
$$;
CREATE OR REPLACE FUNCTION bds_vector_score(stored text, query bytea, qnorm double precision, kind double precision)
RETURNS double precision LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN json_typeof(stored::json) = 'array'
    AND NOT EXISTS (SELECT 1 FROM json_array_elements(stored::json) AS e WHERE json_typeof(e) <> 'number')
  THEN bds_similarity(
    (SELECT array_agg(((e #>> '{}')::real)::double precision ORDER BY i) FROM json_array_elements(stored::json) WITH ORDINALITY AS t(e, i)),
    bds_float32s(query), qnorm, kind) END
$$;
`;

/**
 * `_ACL_COUNT` (rows per class and read list, storage/sql/store-part.ts) is a view: the sum of
 * `_ACL_COUNT_SHARDS`, where each connection of the service counts the rows it writes under a
 * shard of its own (`ACL_COUNT_SHARD`). One shared entry per read list made every two transactions
 * writing rows of one list wait for each other (and deadlock when they took two lists in opposite
 * orders); a connection's own entries are locked by no other writer, and the sums stay exact.
 * Writes to the view (the start-up migrations recount a class, a class's deletion drops its
 * entries) go to shard 0. A read list is counted under its JSON text (`["*","u1"]`), '' for a row
 * without an ACL. A table `_ACL_COUNT` of an older version becomes shard 0.
 */
const ACL_COUNT = `
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
                 WHERE s.nspname = current_schema() AND c.relname = '_ACL_COUNT_SHARDS') THEN
    CREATE TABLE "_ACL_COUNT_SHARDS" (class TEXT NOT NULL, rperm TEXT NOT NULL, shard INTEGER NOT NULL,
      n INTEGER NOT NULL, PRIMARY KEY (class, rperm, shard));
    IF EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
               WHERE s.nspname = current_schema() AND c.relname = '_ACL_COUNT' AND c.relkind = 'r') THEN
      INSERT INTO "_ACL_COUNT_SHARDS" (class, rperm, shard, n) SELECT class, rperm, 0, n FROM "_ACL_COUNT";
      DROP TABLE "_ACL_COUNT";
    END IF;
  END IF;
END $$;
CREATE OR REPLACE VIEW "_ACL_COUNT" AS
  SELECT class, rperm, SUM(n) AS n FROM "_ACL_COUNT_SHARDS" GROUP BY class, rperm;
CREATE OR REPLACE FUNCTION bds_acl_count_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    DELETE FROM "_ACL_COUNT_SHARDS" WHERE class = OLD.class AND rperm = OLD.rperm;
    RETURN OLD;
  END IF;
  INSERT INTO "_ACL_COUNT_SHARDS" (class, rperm, shard, n) VALUES (NEW.class, NEW.rperm, 0, NEW.n)
  ON CONFLICT (class, rperm, shard) DO UPDATE SET n = "_ACL_COUNT_SHARDS".n + EXCLUDED.n;
  RETURN NEW;
END $$;
CREATE OR REPLACE TRIGGER "_ACL_COUNT:write" INSTEAD OF INSERT OR DELETE ON "_ACL_COUNT"
  FOR EACH ROW EXECUTE FUNCTION bds_acl_count_write();
CREATE OR REPLACE FUNCTION bds_acl_count() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  own_shard integer := COALESCE(NULLIF(current_setting('bds.acl_shard', true), ''), '0')::integer;
BEGIN
  ${NON_MEMBER_WAITS}
  IF TG_OP IN ('DELETE', 'UPDATE') THEN
    INSERT INTO "_ACL_COUNT_SHARDS" (class, rperm, shard, n)
    VALUES (TG_ARGV[0], COALESCE(array_to_json(OLD._rperm)::text, ''), own_shard, -1)
    ON CONFLICT (class, rperm, shard) DO UPDATE SET n = "_ACL_COUNT_SHARDS".n - 1;
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    INSERT INTO "_ACL_COUNT_SHARDS" (class, rperm, shard, n)
    VALUES (TG_ARGV[0], COALESCE(array_to_json(NEW._rperm)::text, ''), own_shard, 1)
    ON CONFLICT (class, rperm, shard) DO UPDATE SET n = "_ACL_COUNT_SHARDS".n + 1;
  END IF;
  RETURN NULL;
END $$;
`;

/**
 * Gives the connection it runs on an `_ACL_COUNT` shard no other live connection of the schema
 * has: the first number from 1 whose session advisory lock it takes (held until the connection
 * closes, when the number is free for the next one), kept as the setting `bds.acl_shard`.
 * The series is in the select list, where PostgreSQL makes its numbers one at a time as the LIMIT
 * asks; in FROM it would first write out all million of them (140 ms on every new connection).
 */
export const ACL_COUNT_SHARD = `SELECT set_config('bds.acl_shard', s::text, false) AS shard
FROM (SELECT generate_series(1, 1000000) AS s) AS numbers
WHERE pg_try_advisory_lock(hashtext(current_schema() || ':bds-acl-shard'), s) LIMIT 1`;

/**
 * JSON as SQLite keeps it: text, as the service wrote it (JSON.stringify: compact, keys in the
 * order given). The functions below read and rebuild it as `json` (which, unlike jsonb, keeps the
 * text and the order of keys), comparing values with jsonb's equality where elements are matched.
 *
 * bds_scalar answers a value as json_extract does: a scalar as text (JSON null as NULL), an
 * object or array as its JSON text.
 */
const JSON_FUNCTIONS = `
CREATE OR REPLACE FUNCTION bds_scalar(v json) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN json_typeof(v) IN ('object', 'array') THEN v::text ELSE v #>> '{}' END
$$;
CREATE OR REPLACE FUNCTION bds_json_set(doc json, path text[], value json) RETURNS json
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  head text := path[1];
  child json;
  inner_value json;
BEGIN
  IF cardinality(path) = 0 THEN RETURN value; END IF;
  -- Only objects have keys: a value on the way that is no object leaves the document as it is.
  IF doc IS NULL OR json_typeof(doc) <> 'object' THEN RETURN doc; END IF;
  IF cardinality(path) = 1 THEN
    inner_value := COALESCE(value, 'null'::json);
  ELSE
    child := COALESCE(doc -> head, '{}'::json);
    IF json_typeof(child) <> 'object' THEN RETURN doc; END IF;
    inner_value := bds_json_set(child, path[2:], value);
  END IF;
  IF EXISTS (SELECT 1 FROM json_each(doc) AS e WHERE e.key = head) THEN
    RETURN ('{' || (SELECT string_agg(to_json(e.key)::text || ':' || CASE WHEN e.key = head THEN inner_value::text ELSE e.value::text END, ',' ORDER BY e.o)
      FROM json_each(doc) WITH ORDINALITY AS e(key, value, o)) || '}')::json;
  END IF;
  RETURN ('{' || COALESCE((SELECT string_agg(to_json(e.key)::text || ':' || e.value::text, ',' ORDER BY e.o)
      FROM json_each(doc) WITH ORDINALITY AS e(key, value, o)) || ',', '') || to_json(head)::text || ':' || inner_value::text || '}')::json;
END $$;
CREATE OR REPLACE FUNCTION bds_json_remove(doc json, path text[]) RETURNS json
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  head text := path[1];
BEGIN
  IF doc IS NULL OR json_typeof(doc) <> 'object' OR cardinality(path) = 0 THEN RETURN doc; END IF;
  IF NOT EXISTS (SELECT 1 FROM json_each(doc) AS e WHERE e.key = head) THEN RETURN doc; END IF;
  IF cardinality(path) = 1 THEN
    RETURN ('{' || COALESCE((SELECT string_agg(to_json(e.key)::text || ':' || e.value::text, ',' ORDER BY e.o)
      FROM json_each(doc) WITH ORDINALITY AS e(key, value, o) WHERE e.key <> head), '') || '}')::json;
  END IF;
  RETURN bds_json_set(doc, ARRAY[head], bds_json_remove(doc -> head, path[2:]));
END $$;
CREATE OR REPLACE FUNCTION bds_elements(v json) RETURNS TABLE (value json, o bigint)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT e.value, e.o FROM json_array_elements(CASE WHEN json_typeof(v) = 'array' THEN v END) WITH ORDINALITY AS e(value, o)
$$;
CREATE OR REPLACE FUNCTION bds_array_append(cur json, added json) RETURNS json
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT ('[' || COALESCE(string_agg(x.value::text, ',' ORDER BY x.g, x.o), '') || ']')::json FROM (
    SELECT 0 AS g, c.o, c.value FROM bds_elements(cur) AS c
    UNION ALL SELECT 1, a.o, a.value FROM bds_elements(added) AS a) AS x
$$;
CREATE OR REPLACE FUNCTION bds_array_add_unique(cur json, added json) RETURNS json
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT ('[' || COALESCE(string_agg(x.value::text, ',' ORDER BY x.g, x.o), '') || ']')::json FROM (
    SELECT 0 AS g, c.o, c.value FROM bds_elements(cur) AS c
    UNION ALL SELECT 1, a.o, a.value FROM bds_elements(added) AS a
    WHERE NOT EXISTS (SELECT 1 FROM bds_elements(cur) AS c WHERE c.value::jsonb = a.value::jsonb)
      AND NOT EXISTS (SELECT 1 FROM bds_elements(added) AS b WHERE b.o < a.o AND b.value::jsonb = a.value::jsonb)) AS x
$$;
CREATE OR REPLACE FUNCTION bds_array_remove(cur json, removed json) RETURNS json
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT ('[' || COALESCE(string_agg(c.value::text, ',' ORDER BY c.o), '') || ']')::json FROM bds_elements(cur) AS c
  WHERE NOT EXISTS (SELECT 1 FROM bds_elements(removed) AS r WHERE r.value::jsonb = c.value::jsonb)
$$;
`;

/** Everything above, as one script (safe to run again; run under the schema lock). */
export function functionsSql(): string {
  return (
    NUM +
    operators() +
    INSTANT +
    JSON_FUNCTIONS +
    DISTANCE +
    POLYGON +
    TEXT_SCORE +
    GEOMETRY +
    REGEXP +
    VECTOR +
    ACL_COUNT
  );
}
