import type { Path, QueryNode } from './query.ts';

/**
 * The aggregation AST (POST /aggregate/<C>): what `query/aggregate.ts` parses a pipeline into and
 * what `data/aggregate.ts` runs, compiling to SQL what SQL can do and streaming the rest.
 */

export type Similarity = 'cosine' | 'dotProduct' | 'euclidean';

export interface VectorSearch {
  path: string;
  vector: number[];
  limit: number;
  numCandidates: number;
  filter: QueryNode;
  similarity: Similarity;
}

export type AccumulatorOp = 'sum' | 'avg' | 'min' | 'max' | 'count' | 'first' | 'last' | 'push' | 'addToSet';

/** What an accumulator reads: a field path (`"$score"`), or a constant (`{$sum: 1}`). */
export type Operand = { path: Path } | { constant: unknown };

export interface Accumulator {
  op: AccumulatorOp;
  operand: Operand;
}

/** `_id` of a `$group`: null (one group), one field, or several named fields. */
export type GroupKey =
  | { kind: 'null' }
  | { kind: 'field'; path: Path }
  | { kind: 'fields'; fields: Array<[string, Path]> };

export interface GroupStage {
  key: GroupKey;
  accumulators: Array<[string, Accumulator]>;
}

/** `$project`: included fields (with renames from `"$field"`), or excluded ones. */
export type Projection =
  | { mode: 'include'; fields: Array<[string, Path]>; keepId: boolean }
  | { mode: 'exclude'; fields: string[]; keepId: boolean };

export type Stage =
  | { stage: 'vectorSearch'; search: VectorSearch }
  | { stage: 'match'; where: unknown; node: QueryNode }
  | { stage: 'group'; group: GroupStage }
  | { stage: 'project'; projection: Projection }
  | { stage: 'sort'; keys: Array<{ path: Path; descending: boolean }> }
  | { stage: 'limit'; n: number }
  | { stage: 'skip'; n: number }
  | { stage: 'count'; field: string }
  | { stage: 'unwind'; path: Path; includeArrayIndex?: string; preserveNullAndEmptyArrays: boolean }
  | { stage: 'lookup'; from: string; localField: Path; foreignField: string; as: string };
