import type Database from 'better-sqlite3';
import type { TextSearch } from '../../kernel/query.ts';
import { instantOf } from '../../query/fields.ts';
import { distanceRadians, pointInPolygon } from '../../query/geo.ts';
import { regexTest } from '../../query/regex.ts';
import { textScore } from '../../query/text.ts';
import { vectorView } from '../sql/values.ts';

/** A stored vector as float32 numbers: bytes of a `Vector` column, or JSON text of an `Array` column. */
function storedVector(value: unknown): Float32Array | undefined {
  if (value instanceof Uint8Array) return vectorView(value);
  if (typeof value !== 'string') return undefined;
  try {
    const parsed: unknown = JSON.parse(value);
    if (!Array.isArray(parsed) || !parsed.every((x) => typeof x === 'number')) return undefined;
    return Float32Array.from(parsed as number[]);
  } catch {
    return undefined;
  }
}

/** Similarity of `a` to the query `q` (norm `qNorm`): 0 cosine, 1 dot product, 2 negated euclidean. */
export function similarity(a: ArrayLike<number>, q: ArrayLike<number>, qNorm: number, kind: number): number {
  let dot = 0;
  let sq = 0;
  let dist = 0;
  for (let i = 0; i < q.length; i++) {
    const x = a[i]!;
    const y = q[i]!;
    dot += x * y;
    sq += x * x;
    dist += (x - y) * (x - y);
  }
  if (kind === 1) return dot;
  if (kind === 2) return -Math.sqrt(dist);
  const denominator = Math.sqrt(sq) * qNorm;
  return denominator === 0 ? 0 : dot / denominator;
}

/** SQL functions the SQLite dialect compiles to: regex matching, dates by instant, spherical geometry, vector similarity. */
export function registerFunctions(db: Database.Database): void {
  db.function('bds_regexp', { deterministic: true }, (source, flags, value) =>
    regexTest(String(source), String(flags), value) ? 1 : 0,
  );
  db.function('bds_instant', { deterministic: true }, (iso) => instantOf(iso) ?? null);
  db.function('bds_distance', { deterministic: true }, (lat1, lng1, lat2, lng2) => {
    if (typeof lat1 !== 'number' || typeof lng1 !== 'number') return null;
    return distanceRadians(lat1, lng1, Number(lat2), Number(lng2));
  });
  let lastQuery: Uint8Array | undefined;
  let lastVector: Float32Array | undefined;
  db.function('bds_vector_score', { deterministic: true }, (value, query, norm, kind) => {
    // The query vector is the same bound value for every row of one search: decode it once.
    if (query !== lastQuery) {
      lastQuery = query as Uint8Array;
      lastVector = storedVector(query);
    }
    const stored = storedVector(value);
    if (!stored || !lastVector || stored.length !== lastVector.length) return null;
    return similarity(stored, lastVector, Number(norm), Number(kind));
  });
  let lastSpec: string | undefined;
  let lastSearch: TextSearch | undefined;
  db.function('bds_text_score', { deterministic: true }, (value, spec) => {
    // The search is the same bound text for every row of one query: parsed once.
    if (spec !== lastSpec) {
      lastSpec = String(spec);
      lastSearch = JSON.parse(lastSpec) as TextSearch;
    }
    return textScore(value, lastSearch!);
  });
  db.function('bds_point_in_polygon', { deterministic: true }, (lat, lng, polygon) => {
    if (typeof lat !== 'number' || typeof lng !== 'number' || typeof polygon !== 'string') return 0;
    const vertices = JSON.parse(polygon) as Array<[number, number]>;
    return pointInPolygon(lat, lng, vertices) ? 1 : 0;
  });
}
