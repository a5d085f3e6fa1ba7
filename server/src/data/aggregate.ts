import { isObject } from '@bds/client/protocol';
import type { GroupStage, Projection, Stage } from '../kernel/aggregate.ts';
import type { Ctx } from '../kernel/context.ts';
import { BdsError, ErrorCode, invalidQuery } from '../kernel/errors.ts';
import { keyPathProblem } from '../kernel/names.ts';
import { MATCH_ALL, type Path, type QueryNode } from '../kernel/query.ts';
import type { OrderKey, Row } from '../kernel/records.ts';
import type { ClassSchema, FieldDef } from '../kernel/schema.ts';
import { parsePipeline } from '../query/aggregate.ts';
import { instantOf } from '../query/fields.ts';
import { compileMatcher, type RowMatcher } from '../query/match.ts';
import { parseWhere } from '../query/parse.ts';
import { checkClassName } from '../schema/registry.ts';
import { groupInSql } from '../storage/sql/aggregate.ts';
import { and, demandMaster } from './authorize.ts';
import type { Core } from './core.ts';
import { fillFileUrls } from './file-urls.ts';
import { resolveForMemory } from './resolve.ts';

/** Rows read from the store per page while a stage streams. */
const PAGE = 1000;
/** Vectors looked at to name the dimensions a field holds, when a search found none of its own. */
const DIMENSION_SAMPLE = 20;
/** A $sort after $group, $project, $unwind or $lookup holds at most this many documents. */
export const MAX_SORT_BUFFER = 100_000;

type Docs = AsyncIterable<Row>;

/**
 * POST /aggregate/<C> (master only: ACL, CLP and protectedFields do not apply). The leading stages
 * compile to SQL: `$vectorSearch` (exact top-k in the store), `$match` (the full where language),
 * then a `$group` with SQL accumulators or a `$count`, or `$sort`/`$skip`/`$limit`. What follows
 * runs streaming over pages of rows; no stage loads a class into memory.
 */
export class Aggregator {
  constructor(private readonly core: Core) {}

  async run(ctx: Ctx, className: string, pipeline: unknown): Promise<Row[]> {
    demandMaster(ctx.caller, 'aggregate', className);
    checkClassName(className);
    const stages = parsePipeline(pipeline);
    const schema = this.core.schemas.get(className);
    if (!schema) return [];
    let docs: Docs;
    let rest: Stage[];
    const first = stages[0];
    if (first?.stage === 'vectorSearch') {
      docs = this.fromArray(await this.vectorSearch(schema, first.search));
      rest = stages.slice(1);
    } else {
      ({ docs, rest } = await this.leading(schema, stages));
    }
    for (const stage of rest) docs = this.apply(ctx, schema, docs, stage);
    const out: Row[] = [];
    for await (const doc of docs) out.push(doc);
    return out;
  }

  /**
   * `distinct=<field>` (with an optional `where`), as the SDKs' `Query.distinct` sends it: the
   * distinct values the matching rows hold at the field (a dot path reaches into an Object), nulls
   * left out, an Array field's elements one by one. Run as the pipeline `$match`, `$unwind` (Array
   * fields), `$group` on the field, so it obeys the same rules (master only).
   */
  async distinct(ctx: Ctx, className: string, field: unknown, where: unknown): Promise<unknown[]> {
    demandMaster(ctx.caller, 'aggregate', className);
    checkClassName(className);
    if (typeof field !== 'string' || keyPathProblem(field)) {
      throw new BdsError(ErrorCode.INVALID_KEY_NAME, `Invalid field name: ${String(field)}`);
    }
    let match: unknown = where ?? {};
    if (typeof match === 'string') {
      try {
        match = match === '' ? {} : JSON.parse(match);
      } catch {
        throw new BdsError(ErrorCode.INVALID_JSON, 'where parameter is not valid JSON');
      }
    }
    const schema = this.core.schemas.get(className);
    const isArray = !field.includes('.') && schema?.fields[field]?.type === 'Array';
    const pipeline = [
      { $match: match },
      ...(isArray ? [{ $unwind: `$${field}` }] : []),
      { $group: { _id: `$${field}` } },
    ];
    const groups = await this.run(ctx, className, pipeline);
    return groups.map((g) => g.objectId).filter((v) => v !== null && v !== undefined);
  }

  private async vectorSearch(
    schema: ClassSchema,
    search: Extract<Stage, { stage: 'vectorSearch' }>['search'],
  ) {
    const def = schema.fields[search.path];
    if (def?.type === 'Vector' && def.dimension !== search.vector.length) {
      throw invalidQuery(
        `$vectorSearch: queryVector has ${search.vector.length} dimensions but ${schema.className}.${search.path} has ${def.dimension}.`,
      );
    }
    const hits = await this.core.store.vectorSearch(schema, search, this.core.schemas.lookup);
    if (hits.length === 0) await this.checkStoredDimensions(schema, search);
    const rows = await this.byIds(
      schema,
      hits.map((h) => h.objectId),
    );
    const byId = new Map(rows.map((r) => [r.objectId as string, r]));
    return hits.flatMap((h) => {
      const row = byId.get(h.objectId);
      return row ? [{ ...row, _score: h.score }] : [];
    });
  }

  /**
   * A field without a declared dimension (an Array of numbers) scores only the vectors of the query's
   * dimension. When none scored, the vectors the filter keeps are looked at: if there are some and
   * none has the query's dimension, that is the caller's mismatch (102 naming both), not an empty
   * answer.
   */
  private async checkStoredDimensions(
    schema: ClassSchema,
    search: Extract<Stage, { stage: 'vectorSearch' }>['search'],
  ): Promise<void> {
    const where = and(search.filter, { type: 'exists', path: [search.path], exists: true });
    const rows = await this.core.store.find(
      schema,
      { where, order: [], limit: DIMENSION_SAMPLE, skip: 0 },
      this.core.schemas.lookup,
    );
    const held = new Set<number>();
    for (const row of rows) {
      const value = row[search.path];
      if (Array.isArray(value) && value.length > 0 && value.every((x) => typeof x === 'number')) {
        held.add(value.length);
      }
    }
    if (held.size === 0 || held.has(search.vector.length)) return;
    const dimensions = [...held].sort((a, b) => a - b).join(' or ');
    throw invalidQuery(
      `$vectorSearch: queryVector has ${search.vector.length} dimensions but ${schema.className}.${search.path} holds vectors of ${dimensions}.`,
    );
  }

  private async byIds(schema: ClassSchema, ids: string[]): Promise<Row[]> {
    if (ids.length === 0) return [];
    const where: QueryNode = { type: 'in', path: ['objectId'], values: ids, not: false };
    const rows = await this.core.store.find(
      schema,
      { where, order: [], limit: ids.length, skip: 0 },
      this.core.schemas.lookup,
    );
    fillFileUrls(this.core, schema, rows);
    return rows;
  }

  /** The stages that compile to SQL, and the source of documents for the rest. */
  private async leading(schema: ClassSchema, stages: Stage[]): Promise<{ docs: Docs; rest: Stage[] }> {
    const { store, schemas } = this.core;
    let where: QueryNode = MATCH_ALL;
    let i = 0;
    for (; stages[i]?.stage === 'match'; i++) where = and(where, (stages[i] as { node: QueryNode }).node);
    const next = stages[i];
    if (next?.stage === 'group' && groupInSql(next.group)) {
      return {
        docs: this.fromArray(await store.group(schema, where, next.group, schemas.lookup)),
        rest: stages.slice(i + 1),
      };
    }
    if (next?.stage === 'count') {
      const n = await store.count(schema, { where }, schemas.lookup);
      return { docs: this.fromArray(n > 0 ? [{ [next.field]: n }] : []), rest: stages.slice(i + 1) };
    }
    let order: OrderKey[] = [];
    if (next?.stage === 'sort') {
      order = next.keys.filter(
        (k) =>
          k.path[0] === 'objectId' ||
          k.path[0] === 'createdAt' ||
          k.path[0] === 'updatedAt' ||
          schema.fields[k.path[0]!],
      );
      i++;
    }
    let skip = 0;
    let limit = Number.POSITIVE_INFINITY;
    for (; stages[i]?.stage === 'skip' || stages[i]?.stage === 'limit'; i++) {
      const s = stages[i] as { stage: 'skip' | 'limit'; n: number };
      if (s.stage === 'skip') {
        skip += s.n;
        limit = Math.max(0, limit - s.n);
      } else limit = Math.min(limit, s.n);
    }
    return { docs: this.scan(schema, where, order, skip, limit), rest: stages.slice(i) };
  }

  /**
   * The rows matching `where`, in pages: by objectId from the last one seen when no order is asked
   * (constant cost per page on any size), by offset within the asked order otherwise.
   */
  private async *scan(
    schema: ClassSchema,
    where: QueryNode,
    order: OrderKey[],
    skip: number,
    limit: number,
  ): Docs {
    const { store, schemas } = this.core;
    let left = limit;
    let offset = skip;
    let after: string | undefined;
    const keyset = order.length === 0;
    const fullOrder: OrderKey[] = keyset
      ? [{ path: ['objectId'], descending: false }]
      : [...order, { path: ['objectId'], descending: false }];
    if (keyset && skip > 0) {
      // Skip by pages too, so a large skip never asks the store for one huge page.
      offset = 0;
      let toSkip = skip;
      while (toSkip > 0) {
        const page = await store.find(
          schema,
          { where: this.after(where, after), order: fullOrder, limit: Math.min(PAGE, toSkip), skip: 0 },
          schemas.lookup,
        );
        if (page.length === 0) return;
        toSkip -= page.length;
        after = page.at(-1)!.objectId as string;
      }
    }
    while (left > 0) {
      const size = Math.min(PAGE, left);
      const spec = keyset
        ? { where: this.after(where, after), order: fullOrder, limit: size, skip: 0 }
        : { where, order: fullOrder, limit: size, skip: offset };
      const page = await store.find(schema, spec, schemas.lookup);
      fillFileUrls(this.core, schema, page);
      for (const row of page) yield row;
      if (page.length < size) return;
      left -= page.length;
      offset += page.length;
      after = page.at(-1)!.objectId as string;
    }
  }

  private after(where: QueryNode, objectId: string | undefined): QueryNode {
    return objectId === undefined
      ? where
      : and(where, { type: 'compare', path: ['objectId'], op: 'gt', value: objectId });
  }

  private async *fromArray(rows: Row[]): Docs {
    yield* rows;
  }

  private apply(ctx: Ctx, schema: ClassSchema, docs: Docs, stage: Stage): Docs {
    switch (stage.stage) {
      case 'match':
        return this.match(ctx, schema, docs, stage.node);
      case 'group':
        return group(docs, stage.group);
      case 'project':
        return map(docs, (d) => project(d, stage.projection));
      case 'sort':
        return sortDocs(docs, stage.keys);
      case 'skip':
        return skipDocs(docs, stage.n);
      case 'limit':
        return limitDocs(docs, stage.n);
      case 'count':
        return countDocs(docs, stage.field);
      case 'unwind':
        return unwind(docs, stage);
      case 'lookup':
        return this.lookup(docs, stage);
      case 'vectorSearch':
        throw invalidQuery('$vectorSearch must be the first stage of the pipeline.');
    }
  }

  /**
   * A `$match` over documents that are no longer rows of the class (after $group, $project,
   * $unwind or $lookup): the one in-memory matcher of the where AST (query/match.ts), so the full
   * where language applies with the semantics of the SQL path. Subqueries are answered by the store
   * first, as for realtime; each document's fields are typed by the values it holds (`docMatcher`).
   */
  private async *match(ctx: Ctx, schema: ClassSchema, docs: Docs, node: QueryNode): Docs {
    const test = docMatcher(await resolveForMemory(this.core, ctx.caller, schema, node));
    for await (const d of docs) if (test(d)) yield d;
  }

  /** `$lookup`: the rows of `from` whose `foreignField` equals the document's `localField` (one query per document). */
  private async *lookup(docs: Docs, stage: Extract<Stage, { stage: 'lookup' }>): Docs {
    checkClassName(stage.from);
    const { store, schemas } = this.core;
    for await (const doc of docs) {
      const target = schemas.get(stage.from);
      const local = valueAt(doc, stage.localField);
      let matches: Row[] = [];
      if (target && local !== undefined && local !== null) {
        const values = (Array.isArray(local) ? local : [local]).map((v) =>
          stage.foreignField === 'objectId' ? comparable(v) : v,
        );
        const where = parseWhere({ [stage.foreignField]: { $in: values } });
        matches = await store.find(
          target,
          { where, order: [{ path: ['objectId'], descending: false }], limit: 10_000, skip: 0 },
          schemas.lookup,
        );
        fillFileUrls(this.core, target, matches);
      }
      yield { ...doc, [stage.as]: matches };
    }
  }
}

/** Where a streamed document's id is matched: its `objectId` may hold a group key of any type. */
const DOC_ID = '\u0000id';

/** The where with `objectId` paths moved to `DOC_ID` (so they are typed by value, not as the String column). */
function moveIdPaths(node: QueryNode): QueryNode {
  switch (node.type) {
    case 'and':
    case 'or':
    case 'nor':
      return { ...node, children: node.children.map(moveIdPaths) };
    case 'relatedTo':
    case 'acl':
      return node;
    default: {
      const [head, ...tail] = node.path;
      return head === 'objectId' ? { ...node, path: [DOC_ID, ...tail] } : node;
    }
  }
}

/** The top-level fields a where reads, and those it compares with a date (a string there reads as one). */
function fieldsRead(node: QueryNode, read: Set<string>, dated: Set<string>): void {
  switch (node.type) {
    case 'and':
    case 'or':
    case 'nor':
      for (const child of node.children) fieldsRead(child, read, dated);
      return;
    case 'relatedTo':
    case 'acl':
      return;
    default: {
      const field = node.path[0]!;
      read.add(field);
      const values = node.type === 'compare' ? [node.value] : 'values' in node ? node.values : [];
      if (node.path.length === 1 && values.some((v) => isObject(v) && v.__type === 'Date')) dated.add(field);
    }
  }
}

/** The field type a document's value stands for; `undefined` for null or absent (the field is missing). */
function typeOfValue(value: unknown, dated: boolean): FieldDef | undefined {
  if (value === undefined || value === null) return undefined;
  if (Array.isArray(value)) return { type: 'Array' };
  switch (typeof value) {
    case 'number':
      return { type: 'Number' };
    case 'boolean':
      return { type: 'Boolean' };
    case 'string':
      return { type: dated && instantOf(value) !== undefined ? 'Date' : 'String' };
  }
  if (isObject(value)) {
    switch (value.__type) {
      case 'Date':
      case 'File':
      case 'GeoPoint':
      case 'Polygon':
      case 'Bytes':
        return { type: value.__type };
      case 'Pointer':
      case 'Relation':
        return { type: value.__type, targetClass: String(value.className) };
    }
    return { type: 'Object' };
  }
  return { type: 'Object' };
}

/**
 * Compiles a resolved where for streamed documents: a document has no class schema, so each one is
 * typed by the values of the fields the where reads, and the matcher compiled for that typing
 * (once per distinct typing; a where on a field holding an array where an object is expected
 * answers the same 102 as on a class).
 */
export function docMatcher(where: QueryNode): (doc: Row) => boolean {
  const node = moveIdPaths(where);
  const read = new Set<string>();
  const dated = new Set<string>();
  fieldsRead(node, read, dated);
  const fields = [...read];
  const movesId = read.has(DOC_ID);
  const compiled = new Map<string, RowMatcher>();
  return (doc) => {
    const view: Row = movesId ? { ...doc, [DOC_ID]: doc.objectId } : doc;
    const defs: Record<string, FieldDef> = {};
    let signature = '';
    for (const field of fields) {
      const def = typeOfValue(Object.hasOwn(view, field) ? view[field] : undefined, dated.has(field));
      if (def) defs[field] = def;
      signature += `${def?.type ?? ''}${def?.targetClass ? `<${def.targetClass}>` : ''}\u0000`;
    }
    let test = compiled.get(signature);
    if (!test) {
      test = compileMatcher(node, { className: '', fields: defs, classLevelPermissions: {}, indexes: {} });
      compiled.set(signature, test);
    }
    return test(view);
  };
}

/** The value at a path of a document (own properties of objects only). */
function valueAt(doc: unknown, path: Path): unknown {
  let node = doc;
  for (const key of path) {
    if (!isObject(node) || !Object.hasOwn(node, key)) return undefined;
    node = node[key];
  }
  return node;
}

/** The scalar a wire value sorts and groups as: dates by their instant text, pointers by objectId. */
function comparable(value: unknown): unknown {
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

async function* map(docs: Docs, fn: (d: Row) => Row): Docs {
  for await (const d of docs) yield fn(d);
}

async function* skipDocs(docs: Docs, n: number): Docs {
  let seen = 0;
  for await (const d of docs) if (seen++ >= n) yield d;
}

async function* limitDocs(docs: Docs, n: number): Docs {
  if (n === 0) return;
  let given = 0;
  for await (const d of docs) {
    yield d;
    if (++given >= n) return;
  }
}

async function* countDocs(docs: Docs, field: string): Docs {
  let n = 0;
  for await (const _ of docs) n++;
  if (n > 0) yield { [field]: n };
}

async function* sortDocs(docs: Docs, keys: Array<{ path: Path; descending: boolean }>): Docs {
  const buffer: Row[] = [];
  for await (const d of docs) {
    buffer.push(d);
    if (buffer.length > MAX_SORT_BUFFER) {
      throw invalidQuery(
        `$sort after $group, $project, $unwind or $lookup holds at most ${MAX_SORT_BUFFER} documents; sort earlier in the pipeline or $match fewer rows.`,
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

async function* unwind(docs: Docs, stage: Extract<Stage, { stage: 'unwind' }>): Docs {
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

function project(doc: Row, p: Projection): Row {
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
async function* group(docs: Docs, spec: GroupStage): Docs {
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
