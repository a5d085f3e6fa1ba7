/** The report of query shapes and automatic indexes (docs/protocol.md#performance). */

/** One key of an index: a field and its direction. */
export interface IndexKey {
  field: string;
  descending: boolean;
}

/** An index the service built itself (docs/protocol.md#performance). */
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

/** What the Performance API asks of the store (server/src/http/routes/performance.ts); SqlStore's is storage/sql/auto-index.ts. */
export interface QueryPerformance {
  report(): { shapes: ShapeReport[]; indexes: AutoIndexReport[] };
  build(shape: string): Promise<AutoIndexReport>;
  drop(name: string): Promise<void>;
  /** One round of decisions: build the indexes the bounds allow, drop the unused ones. */
  tick(): Promise<void>;
}
