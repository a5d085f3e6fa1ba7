/**
 * The subscriptions of each class, indexed so that an event decides only the ones it can concern:
 * by the equality of their where (IndexSpec), in registration order, and counted by caller.
 */
import type { QueryNode } from '../kernel/query.ts';
import type { Row } from '../kernel/records.ts';
import type { ClassSchema } from '../kernel/schema.ts';

/**
 * The equality a subscription is indexed by: a top-level `field: value` (or `$eq`) condition of
 * its where's top-level AND, on a field the matcher compares by kind and value (String, Number,
 * Boolean, or not in the schema). A row can only match the where when its `field` holds that key,
 * so an event needs to decide the subscription only when the row before or after the change does.
 */
export interface IndexSpec {
  readonly field: string;
  readonly key: string;
}

const INDEXABLE_TYPES = new Set(['String', 'Number', 'Boolean']);

/** The key of a primitive as the matcher compares it (`keyOf`: kind and value), or undefined. */
export function keyOfValue(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
      return `s\u0000${value}`;
    case 'number':
      // -0 and 0 are the same key for the matcher (===), and String() says "0" for both.
      return `n\u0000${String(value)}`;
    case 'boolean':
      return value ? 'b\u0000true' : 'b\u0000false';
    default:
      return undefined;
  }
}

/** The key of a row's field (an own property only, as the matcher reads it). */
export function keyOfRow(row: Row | null, field: string): string | undefined {
  if (!row || !Object.hasOwn(row, field)) return undefined;
  return keyOfValue(row[field]);
}

/**
 * The index of a where as compiled (after resolution), or null when it has no indexable condition
 * (such a subscription is a candidate for every event of its class).
 */
export function indexSpecOf(where: QueryNode, schema: ClassSchema): IndexSpec | null {
  const conditions = where.type === 'and' ? where.children : [where];
  for (const node of conditions) {
    if (node.type !== 'compare' || node.op !== 'eq' || node.path.length !== 1) continue;
    const field = node.path[0]!;
    const def = schema.fields[field];
    if (def && !INDEXABLE_TYPES.has(def.type)) continue;
    const key = keyOfValue(node.value);
    if (key !== undefined) return { field, key };
  }
  return null;
}

/** What the registry keeps on each subscription. */
export interface Placed<G> {
  indexedAs: IndexSpec | null;
  /** The group of a plain subscription (indexed, decided by its group alone when it is no candidate); null otherwise. */
  groupedAs: G | null;
  /** Registration order: the order events are decided in. */
  ordinal: number;
}

/**
 * The subscriptions of one class: all of them in registration order (the order events are decided
 * in, as the delivery trace lists them), by the key of their indexed equality, and counted by group
 * (their caller) for the plain ones: indexed, and filtered for a reason that depends on the caller
 * alone when they are no candidate. The others (no indexed equality, or a CLP row condition) are
 * `special` and decided one by one.
 */
export class ClassSubscriptions<S extends Placed<G>, G> {
  readonly all = new Set<S>();
  readonly special = new Set<S>();
  /** group → number of plain subscriptions in it. */
  readonly groups = new Map<G, number>();
  /** field → key → subscriptions. */
  private readonly byField = new Map<string, Map<string, Set<S>>>();
  private nextOrdinal = 0;
  /** The generation and schema at which every subscription was last seen current (null: not known). */
  freshAt: { generation: number; schema: ClassSchema | undefined } | null = null;

  get size(): number {
    return this.all.size;
  }

  /** `group` null: a special subscription. */
  add(sub: S, spec: IndexSpec | null, group: G | null): void {
    sub.ordinal = this.nextOrdinal++;
    this.all.add(sub);
    this.place(sub, spec, group);
  }

  delete(sub: S): void {
    this.all.delete(sub);
    this.unplace(sub);
  }

  /** Places a subscription again (its state was compiled again), keeping its place in `all`. */
  reindex(sub: S, spec: IndexSpec | null, group: G | null): void {
    this.unplace(sub);
    this.place(sub, spec, group);
  }

  /** Calls `visit` with each indexed subscription whose key equals the row's before or after the change. */
  candidates(before: Row | null, after: Row | null, visit: (sub: S) => void): void {
    for (const [field, byKey] of this.byField) {
      const a = keyOfRow(before, field);
      const b = keyOfRow(after, field);
      if (a !== undefined) {
        const set = byKey.get(a);
        if (set) for (const sub of set) visit(sub);
      }
      if (b !== undefined && b !== a) {
        const set = byKey.get(b);
        if (set) for (const sub of set) visit(sub);
      }
    }
  }

  private place(sub: S, spec: IndexSpec | null, group: G | null): void {
    sub.indexedAs = spec;
    sub.groupedAs = spec ? group : null;
    if (sub.groupedAs === null) this.special.add(sub);
    else this.groups.set(sub.groupedAs, (this.groups.get(sub.groupedAs) ?? 0) + 1);
    if (!spec) return;
    let byKey = this.byField.get(spec.field);
    if (!byKey) {
      byKey = new Map();
      this.byField.set(spec.field, byKey);
    }
    let set = byKey.get(spec.key);
    if (!set) {
      set = new Set();
      byKey.set(spec.key, set);
    }
    set.add(sub);
  }

  private unplace(sub: S): void {
    const spec = sub.indexedAs;
    const group = sub.groupedAs;
    sub.indexedAs = null;
    sub.groupedAs = null;
    if (group === null) this.special.delete(sub);
    else {
      const n = (this.groups.get(group) ?? 0) - 1;
      if (n > 0) this.groups.set(group, n);
      else this.groups.delete(group);
    }
    if (!spec) return;
    const byKey = this.byField.get(spec.field);
    const set = byKey?.get(spec.key);
    if (!byKey || !set) return;
    set.delete(sub);
    if (set.size === 0) byKey.delete(spec.key);
    if (byKey.size === 0) this.byField.delete(spec.field);
  }
}
