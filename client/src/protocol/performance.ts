/**
 * The answers of the Performance API (docs/protocol.md#performance, master key only): the shapes
 * of finds with their counts and times and the index serving each, and the automatic indexes.
 */

/** One key of an index: a field and its direction. */
export interface IndexKey {
  field: string;
  descending: boolean;
}

/** An index the service built itself. */
export interface AutoIndexReport {
  /** The index's SQL name: `<Class>:auto:<keys>`, which no declared index can have (theirs have no `:`). */
  name: string;
  className: string;
  keys: IndexKey[];
  /** `automatic` (the bounds were met) or `requested` (POST /performance/indexes). */
  origin: 'automatic' | 'requested';
  /** The shape it was built for, when the service knows it. */
  shape?: string;
  builtAt?: string;
  buildMs?: number;
  lastUsedAt?: string;
  /** Mean time of the shape's finds before the index, and since. */
  effect?: { beforeMs: number; beforeCount: number; afterMs?: number; afterCount: number };
}

/** A query shape as the report answers it. */
export interface ShapeReport {
  shape: string;
  className: string;
  equality: string[];
  range: string[];
  sort: IndexKey[];
  count: number;
  totalMs: number;
  meanMs: number;
  maxMs: number;
  lastSeenAt: string;
  /** The index that serves it (a declared, built-in or automatic one), else null: the find scans. */
  index: string | null;
  /** Why no automatic index was built for it yet, when it scans. */
  waiting?: string;
}

/** The answer of `GET /performance/queries`: the shapes, the most total time first, and the automatic indexes. */
export interface PerformanceReport {
  results: ShapeReport[];
  indexes: AutoIndexReport[];
}
