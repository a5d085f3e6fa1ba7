import type { Similarity } from '../../kernel/aggregate.ts';

/**
 * An exact in-memory index of one `Vector` field: every stored vector in one float32 matrix (4
 * bytes per number, as on disk) with its norm, so a top-k search is one pass of multiply-adds
 * instead of a call per row from SQL. Filled from the store on the first search, then kept
 * current by the store's own writes once they commit (a rollback drops it).
 */
export class VectorIndex {
  private matrix: Float32Array;
  private norms: Float32Array;
  private ids: Array<string | undefined> = [];
  private readonly slots = new Map<string, number>();
  private readonly free: number[] = [];

  constructor(
    readonly dimension: number,
    capacity = 1024,
  ) {
    this.matrix = new Float32Array(capacity * dimension);
    this.norms = new Float32Array(capacity);
  }

  get size(): number {
    return this.slots.size;
  }

  private grow(): void {
    const capacity = this.norms.length * 2;
    const matrix = new Float32Array(capacity * this.dimension);
    matrix.set(this.matrix);
    const norms = new Float32Array(capacity);
    norms.set(this.norms);
    this.matrix = matrix;
    this.norms = norms;
  }

  /** Adds or replaces a row's vector; a vector of another dimension (or none) removes it. */
  set(objectId: string, vector: ArrayLike<number> | undefined): void {
    if (!vector || vector.length !== this.dimension) {
      this.delete(objectId);
      return;
    }
    let slot = this.slots.get(objectId);
    if (slot === undefined) {
      slot = this.free.pop() ?? this.ids.length;
      if (slot === this.ids.length) {
        if (slot >= this.norms.length) this.grow();
        this.ids.push(objectId);
      } else this.ids[slot] = objectId;
      this.slots.set(objectId, slot);
    }
    const base = slot * this.dimension;
    let sq = 0;
    for (let d = 0; d < this.dimension; d++) {
      const x = Math.fround(vector[d]!);
      this.matrix[base + d] = x;
      sq += x * x;
    }
    this.norms[slot] = Math.sqrt(sq);
  }

  delete(objectId: string): void {
    const slot = this.slots.get(objectId);
    if (slot === undefined) return;
    this.slots.delete(objectId);
    this.ids[slot] = undefined;
    this.free.push(slot);
  }

  /** The `limit` best rows (best first; ties by objectId), among `allowed` when given. */
  search(
    query: ArrayLike<number>,
    limit: number,
    similarity: Similarity,
    allowed?: Set<string>,
  ): Array<{ objectId: string; score: number }> {
    const dim = this.dimension;
    const q = Float32Array.from(query);
    let qNorm = 0;
    for (let d = 0; d < dim; d++) qNorm += q[d]! * q[d]!;
    qNorm = Math.sqrt(qNorm);
    const best: Array<{ objectId: string; score: number }> = [];
    const m = this.matrix;
    for (let slot = 0; slot < this.ids.length; slot++) {
      const id = this.ids[slot];
      if (id === undefined || (allowed && !allowed.has(id))) continue;
      const base = slot * dim;
      let score: number;
      if (similarity === 'euclidean') {
        let sum = 0;
        for (let d = 0; d < dim; d++) {
          const diff = m[base + d]! - q[d]!;
          sum += diff * diff;
        }
        score = -Math.sqrt(sum);
      } else {
        // Four running sums: independent multiply-adds the CPU can overlap.
        let d0 = 0;
        let d1 = 0;
        let d2 = 0;
        let d3 = 0;
        let d = 0;
        for (; d + 3 < dim; d += 4) {
          d0 += m[base + d]! * q[d]!;
          d1 += m[base + d + 1]! * q[d + 1]!;
          d2 += m[base + d + 2]! * q[d + 2]!;
          d3 += m[base + d + 3]! * q[d + 3]!;
        }
        for (; d < dim; d++) d0 += m[base + d]! * q[d]!;
        const dot = d0 + d1 + d2 + d3;
        if (similarity === 'cosine') {
          const denominator = this.norms[slot]! * qNorm;
          score = denominator === 0 ? 0 : dot / denominator;
        } else score = dot;
      }
      if (best.length === limit) {
        const worst = best[limit - 1]!;
        if (score < worst.score || (score === worst.score && id > worst.objectId)) continue;
        best.pop();
      }
      let i = best.length;
      while (
        i > 0 &&
        (best[i - 1]!.score < score || (best[i - 1]!.score === score && best[i - 1]!.objectId > id))
      )
        i--;
      best.splice(i, 0, { objectId: id, score });
    }
    return best;
  }
}

/**
 * The vector indexes of a store, by class and field. The store reports its writes: committed ones
 * update the indexes of their class (`changed`), schema changes and rollbacks drop them.
 */
export class VectorIndexes {
  private readonly byClass = new Map<string, Map<string, VectorIndex>>();
  /** Committed writes per class, so a load that overlapped a write starts again. */
  private readonly versions = new Map<string, number>();

  /** A committed write of one row (`row` null: deleted). */
  changed(className: string, objectId: string, row: Record<string, unknown> | null): void {
    this.versions.set(className, (this.versions.get(className) ?? 0) + 1);
    const indexes = this.byClass.get(className);
    if (!indexes) return;
    for (const [field, index] of indexes) {
      if (row) index.set(objectId, row[field] as number[] | undefined);
      else index.delete(objectId);
    }
  }

  drop(className?: string): void {
    if (className === undefined) this.byClass.clear();
    else this.byClass.delete(className);
    if (className !== undefined) this.versions.set(className, (this.versions.get(className) ?? 0) + 1);
  }

  /** The index of a field, loaded with `load` (pages of `[objectId, vector]`) on first use. */
  async get(
    className: string,
    field: string,
    dimension: number,
    load: (add: (objectId: string, vector: ArrayLike<number>) => void) => Promise<void>,
  ): Promise<VectorIndex> {
    const existing = this.byClass.get(className)?.get(field);
    if (existing && existing.dimension === dimension) return existing;
    let index: VectorIndex;
    for (let attempt = 0; ; attempt++) {
      const version = this.versions.get(className) ?? 0;
      index = new VectorIndex(dimension);
      await load((id, vector) => index.set(id, vector));
      if ((this.versions.get(className) ?? 0) === version || attempt === 4) break;
    }
    let indexes = this.byClass.get(className);
    if (!indexes) {
      indexes = new Map();
      this.byClass.set(className, indexes);
    }
    indexes.set(field, index);
    return index;
  }
}
