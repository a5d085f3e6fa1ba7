import type { Projection, Stage } from '../kernel/aggregate.ts';
import type { Ctx } from '../kernel/context.ts';
import { BdsError, ErrorCode, invalidQuery } from '../kernel/errors.ts';
import { keyPathProblem } from '../kernel/names.ts';
import { MATCH_ALL, type Path, type QueryNode } from '../kernel/query.ts';
import type { OrderKey, Row } from '../kernel/records.ts';
import type { ClassSchema } from '../kernel/schema.ts';
import { parsePipeline } from '../query/aggregate.ts';
import { queryFieldDef } from '../query/fields.ts';
import { membershipKeys } from '../query/match.ts';
import { parseWhere } from '../query/parse.ts';
import { checkClassName } from '../schema/registry.ts';
import { groupInSql } from '../storage/sql/aggregate.ts';
import {
  comparable,
  countDocs,
  type Docs,
  group,
  limitDocs,
  map,
  project,
  skipDocs,
  sortDocs,
  unwind,
  valueAt,
} from './aggregate-stages.ts';
import { and, demandMaster } from './authorize.ts';
import type { Core } from './core.ts';
import { docMatcher } from './doc-matcher.ts';
import { fillFileUrls } from './file-urls.ts';
import { resolveForMemory } from './resolve.ts';

/** Rows read from the store per page while a stage streams. */
const PAGE = 1000;
/** Documents one `$lookup` query joins at most, and the distinct local values it asks for. */
const LOOKUP_DOCS = 100;
const LOOKUP_VALUES = 1000;
/** Vectors looked at to name the dimensions a field holds, when a search found none of its own. */
const DIMENSION_SAMPLE = 20;

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

  /**
   * The stages that compile to SQL, and the source of documents for the rest. A `$sort` after the
   * leading `$match` runs in the store, also after `$project` and `$match` stages (which stream in
   * the order they are given) when each of its keys names a field of the class through them.
   */
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
    let between: Stage[] = [];
    let j = i;
    while (stages[j]?.stage === 'project' || stages[j]?.stage === 'match') j++;
    const sort = stages[j];
    if (sort?.stage === 'sort') {
      const keys = storeOrder(schema, stages.slice(i, j), sort.keys);
      if (keys) {
        order = keys;
        between = stages.slice(i, j);
        i = j + 1;
      }
    }
    let skip = 0;
    let limit = Number.POSITIVE_INFINITY;
    // A $match streamed between would count against a $skip or $limit given to the store.
    const filtered = between.some((s) => s.stage === 'match');
    for (; !filtered && (stages[i]?.stage === 'skip' || stages[i]?.stage === 'limit'); i++) {
      const s = stages[i] as { stage: 'skip' | 'limit'; n: number };
      if (s.stage === 'skip') {
        skip += s.n;
        limit = Math.max(0, limit - s.n);
      } else limit = Math.min(limit, s.n);
    }
    return { docs: this.scan(schema, where, order, skip, limit), rest: [...between, ...stages.slice(i)] };
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
        return sortDocs(docs, stage.keys, this.core.options.aggregate.maxSortDocuments);
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

  /**
   * `$lookup`: the rows of `from` whose `foreignField` holds one of the document's `localField`
   * values (what `$in` of them matches), in objectId order. Documents are joined a page at a time:
   * one query of the page's values, matched to each document in memory by the keys `$in` compares
   * (`membershipKeys`). A page whose rows pass `PAGE` (or the bound) is split; a document
   * joined to more rows than the option `aggregate.maxLookupMatches` answers 102.
   */
  private async *lookup(docs: Docs, stage: Extract<Stage, { stage: 'lookup' }>): Docs {
    checkClassName(stage.from);
    let page: Array<{ doc: Row; values: unknown[] }> = [];
    const distinct = new Set<string>();
    for await (const doc of docs) {
      const local = valueAt(doc, stage.localField);
      const values =
        local === undefined || local === null
          ? []
          : (Array.isArray(local) ? local : [local]).map((v) =>
              stage.foreignField === 'objectId' ? comparable(v) : v,
            );
      page.push({ doc, values });
      for (const v of values) distinct.add(JSON.stringify(v));
      if (page.length >= LOOKUP_DOCS || distinct.size >= LOOKUP_VALUES) {
        yield* await this.joinPage(page, stage);
        page = [];
        distinct.clear();
      }
    }
    if (page.length > 0) yield* await this.joinPage(page, stage);
  }

  private async joinPage(
    page: Array<{ doc: Row; values: unknown[] }>,
    stage: Extract<Stage, { stage: 'lookup' }>,
  ): Promise<Row[]> {
    const { store, schemas, options } = this.core;
    const target = schemas.get(stage.from);
    const unique = new Map<string, unknown>();
    for (const { values } of page) for (const v of values) unique.set(JSON.stringify(v), v);
    if (!target || unique.size === 0) return page.map(({ doc }) => ({ ...doc, [stage.as]: [] }));
    const bound = options.aggregate.maxLookupMatches;
    // Rows one query reads at most: past them the page is split (a page of one document: 102).
    const cap = Math.max(bound, PAGE);
    const where = parseWhere({ [stage.foreignField]: { $in: [...unique.values()] } });
    const rows = await store.find(
      target,
      { where, order: [{ path: ['objectId'], descending: false }], limit: cap + 1, skip: 0 },
      schemas.lookup,
    );
    if (rows.length > cap) {
      if (page.length === 1) throw lookupBound(stage.from, bound);
      const half = Math.ceil(page.length / 2);
      return [
        ...(await this.joinPage(page.slice(0, half), stage)),
        ...(await this.joinPage(page.slice(half), stage)),
      ];
    }
    fillFileUrls(this.core, target, rows);
    // Each row under the keys its foreignField holds; rows without a value under ABSENT (a null
    // among the local values matches them, as it does in `$in`).
    const { listed, held } = membershipKeys(queryFieldDef(target, stage.foreignField));
    const byKey = new Map<string, number[]>();
    rows.forEach((row, index) => {
      const value = row[stage.foreignField];
      const keys = value === undefined || value === null ? [ABSENT] : held(value);
      for (const key of keys) {
        const indexes = byKey.get(key);
        if (indexes) indexes.push(index);
        else byKey.set(key, [index]);
      }
    });
    return page.map(({ doc, values }) => {
      const found = new Set<number>();
      for (const v of values) {
        const key = v === null ? ABSENT : listed(v);
        for (const index of (key !== undefined && byKey.get(key)) || []) found.add(index);
      }
      if (found.size > bound) throw lookupBound(stage.from, bound);
      return { ...doc, [stage.as]: [...found].sort((a, b) => a - b).map((index) => rows[index]!) };
    });
  }
}

const lookupBound = (from: string, bound: number) =>
  invalidQuery(
    `$lookup from ${from} matched more than ${bound} rows for one document; the option aggregate.maxLookupMatches raises the bound.`,
  );

/** The key of rows without a foreignField value, for `$lookup`. */
const ABSENT = '\u0000absent';

/**
 * The order a `$sort` asks, as the store reads it from the class's rows: each key followed back
 * through the `$project` stages before it (a `$match` changes no field; a `$project` only renames,
 * keeps or drops fields) to a field of the class, or a key below an Object field. A key no document
 * holds (a field the class lacks or a `$project` dropped, a relation, the ACL) orders nothing and
 * is left out. `undefined` when a key reads below another type of field (a pointer's `objectId`,
 * say), which the store does not read: the sort then runs in memory.
 */
function storeOrder(
  schema: ClassSchema,
  before: Stage[],
  keys: Array<{ path: Path; descending: boolean }>,
): OrderKey[] | undefined {
  const order: OrderKey[] = [];
  for (const key of keys) {
    let path: Path | undefined = key.path;
    for (const stage of [...before].reverse()) {
      if (path && stage.stage === 'project') path = throughProjection(stage.projection, path);
    }
    if (!path) continue;
    const [head, ...below] = path;
    const def = queryFieldDef(schema, head!);
    if (!def || def.type === 'Relation' || def.type === 'ACL') continue;
    if (below.length > 0 && def.type !== 'Object') return undefined;
    order.push({ path, descending: key.descending });
  }
  return order;
}

/** The path a projected document's `path` was read from, or `undefined` when the projection dropped it. */
function throughProjection(projection: Projection, path: Path): Path | undefined {
  const [head, ...below] = path;
  if (projection.mode === 'exclude') {
    if (head === 'objectId') return projection.keepId ? path : undefined;
    return projection.fields.includes(head!) ? undefined : path;
  }
  const field = projection.fields.find(([name]) => name === head);
  if (field) return [...field[1], ...below];
  return head === 'objectId' && projection.keepId ? path : undefined;
}
