import { isObject } from '@bds/client/protocol';
import type { GroupStage, Projection, Stage } from '../kernel/aggregate.ts';
import { invalidQuery } from '../kernel/errors.ts';
import type { Path } from '../kernel/query.ts';
import type { Row } from '../kernel/records.ts';

/**
 * Documents as the stages of POST /aggregate stream them. The stages here run in memory over what
 * the stages before them yield; data/aggregate.ts runs first what compiles to SQL.
 */
export type Docs = AsyncIterable<Row>;

/** The value at a path of a document (own properties of objects only). */
export function valueAt(doc: unknown, path: Path): unknown {
  let node = doc;
  for (const key of path) {
    if (!isObject(node) || !Object.hasOwn(node, key)) return undefined;
    node = node[key];
  }
  return node;
}

/** The scalar a wire value sorts and groups as: dates by their instant text, pointers by objectId. */
export function comparable(value: unknown): unknown {
  if (isObject(value)) {
    if (value.__type === 'Date') return value.iso;
    if (value.__type === 'Pointer' || value.__type === 'Object') return value.objectId;
  }
  return value;
}

/** Orders two values: numbers and strings by themselves, null and missing first. */
function compareValues(a: unknown, b: unknown): number {
  const x = comparable(a);
  const y = comparable(b);
  if (x === y) return 0;
  if (x === undefined || x === null) return -1;
  if (y === undefined || y === null) return 1;
  if (typeof x === 'number' && typeof y === 'number') return x - y;
  return String(x) < String(y) ? -1 : String(x) > String(y) ? 1 : 0;
}

export async function* map(docs: Docs, fn: (d: Row) => Row): Docs {
  for await (const d of docs) yield fn(d);
}

export async function* skipDocs(docs: Docs, n: number): Docs {
  let seen = 0;
  for await (const d of docs) if (seen++ >= n) yield d;
}

export async function* limitDocs(docs: Docs, n: number): Docs {
  if (n === 0) return;
  let given = 0;
  for await (const d of docs) {
    yield d;
    if (++given >= n) return;
  }
}

export async function* countDocs(docs: Docs, field: string): Docs {
  let n = 0;
  for await (const _ of docs) n++;
  if (n > 0) yield { [field]: n };
}

/**
 * A `$sort` in memory (one the store cannot run: after `$group`, `$unwind` or `$lookup`, or below
 * a field that is no Object): it holds every document, at most `max` (the option
 * `aggregate.maxSortDocuments`), and answers 102 past them.
 */
export async function* sortDocs(
  docs: Docs,
  keys: Array<{ path: Path; descending: boolean }>,
  max: number,
): Docs {
  const buffer: Row[] = [];
  for await (const d of docs) {
    buffer.push(d);
    if (buffer.length > max) {
      throw invalidQuery(
        `$sort holds at most ${max} documents in memory when the store cannot sort (after $group, $unwind or $lookup, or below a field that is no Object); $match fewer documents, sort earlier in the pipeline, or raise the option aggregate.maxSortDocuments.`,
      );
    }
  }
  buffer.sort((a, b) => {
    for (const k of keys) {
      const c = compareValues(valueAt(a, k.path), valueAt(b, k.path));
      if (c !== 0) return k.descending ? -c : c;
    }
    return 0;
  });
  yield* buffer;
}

export async function* unwind(docs: Docs, stage: Extract<Stage, { stage: 'unwind' }>): Docs {
  const [field] = stage.path;
  for await (const d of docs) {
    const value = valueAt(d, stage.path);
    if (Array.isArray(value) && value.length > 0) {
      for (let i = 0; i < value.length; i++) {
        const out = setPath({ ...d }, stage.path, value[i]);
        if (stage.includeArrayIndex) out[stage.includeArrayIndex] = i;
        yield out;
      }
    } else if (value !== undefined && value !== null && !Array.isArray(value)) {
      const out = { ...d };
      if (stage.includeArrayIndex) out[stage.includeArrayIndex] = null;
      yield out;
    } else if (stage.preserveNullAndEmptyArrays) {
      const out = { ...d };
      if (Array.isArray(value) && field) delete out[field];
      if (stage.includeArrayIndex) out[stage.includeArrayIndex] = null;
      yield out;
    }
  }
}

function setPath(doc: Row, path: Path, value: unknown): Row {
  if (path.length === 1) {
    doc[path[0]!] = value;
    return doc;
  }
  const [head, ...tail] = path;
  const inner = doc[head!];
  doc[head!] = setPath(typeof inner === 'object' && inner !== null ? { ...(inner as Row) } : {}, tail, value);
  return doc;
}

export function project(doc: Row, p: Projection): Row {
  if (p.mode === 'exclude') {
    const out = { ...doc };
    for (const f of p.fields) delete out[f];
    if (!p.keepId) delete out.objectId;
    return out;
  }
  const out: Row = {};
  if (p.keepId && doc.objectId !== undefined) out.objectId = doc.objectId;
  for (const [name, path] of p.fields) {
    const v = valueAt(doc, path);
    if (v !== undefined) out[name] = v;
  }
  return out;
}

interface GroupState {
  key: unknown;
  values: unknown[];
  seen: Array<Set<string>>;
  sums: number[];
  counts: number[];
}

/** `$group` streaming: one state per group (never the rows themselves, except for $push/$addToSet). */
export async function* group(docs: Docs, spec: GroupStage): Docs {
  const groups = new Map<string, GroupState>();
  const keyOf = (d: Row): unknown => {
    if (spec.key.kind === 'null') return null;
    if (spec.key.kind === 'field') return valueAt(d, spec.key.path) ?? null;
    return Object.fromEntries(spec.key.fields.map(([name, path]) => [name, valueAt(d, path) ?? null]));
  };
  for await (const d of docs) {
    const key = keyOf(d);
    const id = JSON.stringify(key);
    let state = groups.get(id);
    if (!state) {
      state = {
        key,
        values: spec.accumulators.map(([, a]) => (a.op === 'push' || a.op === 'addToSet' ? [] : undefined)),
        seen: spec.accumulators.map(() => new Set()),
        sums: spec.accumulators.map(() => 0),
        counts: spec.accumulators.map(() => 0),
      };
      groups.set(id, state);
    }
    spec.accumulators.forEach(([, acc], i) => {
      const value = 'path' in acc.operand ? valueAt(d, acc.operand.path) : acc.operand.constant;
      switch (acc.op) {
        case 'count':
          state.sums[i]! += 1;
          break;
        case 'sum':
        case 'avg':
          if (typeof value === 'number') {
            state.sums[i]! += value;
            state.counts[i]! += 1;
          }
          break;
        case 'min':
        case 'max': {
          if (value === undefined || value === null) break;
          const current = state.values[i];
          const c = current === undefined ? 0 : compareValues(value, current);
          if (current === undefined || (acc.op === 'min' ? c < 0 : c > 0)) state.values[i] = value;
          break;
        }
        case 'first':
          if (state.counts[i] === 0) state.values[i] = value ?? null;
          state.counts[i]! += 1;
          break;
        case 'last':
          state.values[i] = value ?? null;
          break;
        case 'push':
          if (value !== undefined) (state.values[i] as unknown[]).push(value);
          break;
        case 'addToSet': {
          const k = JSON.stringify(value ?? null);
          if (value !== undefined && !state.seen[i]!.has(k)) {
            state.seen[i]!.add(k);
            (state.values[i] as unknown[]).push(value);
          }
          break;
        }
      }
    });
  }
  for (const state of groups.values()) {
    const out: Row = { objectId: state.key };
    spec.accumulators.forEach(([name, acc], i) => {
      if (acc.op === 'sum' || acc.op === 'count') out[name] = state.sums[i];
      else if (acc.op === 'avg') out[name] = state.counts[i] ? state.sums[i]! / state.counts[i]! : null;
      else out[name] = state.values[i] ?? null;
    });
    yield out;
  }
}
