import { isObject } from '@bds/client/protocol';
import { aclCondition } from '../access/acl.ts';
import type { Caller } from '../kernel/caller.ts';
import type { Ctx } from '../kernel/context.ts';
import { BdsError, ErrorCode, notFound } from '../kernel/errors.ts';
import { keyPathProblem } from '../kernel/names.ts';
import type { QueryNode } from '../kernel/query.ts';
import type { Row } from '../kernel/records.ts';
import { type ClassSchema, USER_INTERNAL_COLUMNS } from '../kernel/schema.ts';
import type { FindQuery } from '../kernel/triggers.ts';
import { parseWhere } from '../query/parse.ts';
import { TEXT_SCORE_KEY, textScore } from '../query/text.ts';
import { checkClassName } from '../schema/registry.ts';
import { and, classVerdict, denial, includeAccess, rowAccess, secureQuery, viewOf } from './authorize.ts';
import type { Core } from './core.ts';
import { fillFileUrls } from './file-urls.ts';
import {
  type ComplexityLimits,
  type FindOptions,
  parseFindOptions,
  parseGetOptions,
} from './find-options.ts';

/**
 * Reads of records: find, count and get, with include and keys. Every layer applies: the class
 * verdict, the ACL and pointer permissions as row conditions in the store's query (so limit,
 * skip and count stay exact), the protected-field checks of the where, then protectedFields on
 * the rows and, independently, on every included row.
 */
export class Reads {
  constructor(private readonly core: Core) {}

  limitsFor(caller: Caller): ComplexityLimits {
    return caller.isMaster ? {} : this.core.options.requestComplexity;
  }

  /**
   * Before the request's parameters are parsed: the class name, the built-in classes' own rules
   * (a master-only class refuses whatever is asked), and `_Session`, which is read through the
   * account rules only (GET /sessions and its aliases).
   */
  private checkRoute(ctx: Ctx, className: string, op: 'find' | 'get'): void {
    checkClassName(className);
    if (ctx.caller.isMaster) return;
    if (className === '_Session' && ctx.source !== 'account') {
      throw new BdsError(
        ErrorCode.OPERATION_FORBIDDEN,
        `Permission denied for action ${op} on class _Session.`,
      );
    }
    // A find may turn out to be a count (count=1&limit=0): refuse early only what refuses both.
    const ops: Array<'find' | 'get' | 'count'> = op === 'find' ? ['find', 'count'] : ['get'];
    const verdicts = ops.map((o) => classVerdict(this.core, ctx.caller, className, o));
    if (verdicts.every((v) => !v.allowed && v.layer === 'system')) throw denial(verdicts[0]!);
  }

  /**
   * The query the class's beforeFind answers for a find with these parameters; `undefined` when
   * the class has no find trigger. Realtime runs it once per subscribe and keeps its answer.
   */
  async beforeFind(
    ctx: Ctx,
    className: string,
    params: Record<string, unknown>,
  ): Promise<FindQuery | undefined> {
    const triggers = this.core.hooks.find;
    if (!triggers.hasFind(className)) return undefined;
    return triggers.beforeFind(ctx, findQueryOf(className, params));
  }

  /**
   * `answered`: what `beforeFind` already answered for these parameters (a realtime snapshot): the
   * trigger is not run again, its answer is the query.
   */
  async find(
    ctx: Ctx,
    className: string,
    params: Record<string, unknown>,
    answered?: FindQuery,
  ): Promise<{ results: Row[]; count?: number }> {
    if (params.redirectClassNameForKey !== undefined) {
      const { redirectClassNameForKey: key, ...rest } = params;
      return this.findRedirected(ctx, className, key, rest);
    }
    this.checkRoute(ctx, className, 'find');
    const { caller } = ctx;
    const { schemas, store, options } = this.core;
    let opts = parseFindOptions(params, this.limitsFor(caller), options.maxLimit);
    const finds = this.core.hooks.find;
    const triggers = finds.hasFind(className) ? finds : undefined;
    let query: FindQuery | undefined;
    if (triggers) {
      // The rewritten query is parsed and secured like the caller's own: it can only narrow.
      query = answered ?? (await triggers.beforeFind(ctx, findQueryOf(className, params)));
      opts = parseFindOptions(paramsOf(query, params), this.limitsFor(caller), options.maxLimit);
    }
    const where = await this.secureFind(caller, className, opts);
    const schema = schemas.get(className);
    if (!schema || where === undefined) return opts.count ? { results: [], count: 0 } : { results: [] };
    const spec = { where, order: opts.order, limit: opts.limit, skip: opts.skip };
    const rows = opts.limit === 0 ? [] : await store.find(schema, spec, schemas.lookup);
    if (opts.keys?.includes(TEXT_SCORE_KEY)) {
      addTextScores(opts.where, rows);
      opts = { ...opts, keys: opts.keys.map((k) => (k === TEXT_SCORE_KEY ? 'score' : k)) };
    }
    let results = await this.present(caller, schema, rows, opts);
    if (triggers && query) {
      results = onlyGiven(schema, results, await triggers.afterFind(ctx, query, structuredClone(results)));
    }
    if (!opts.count) return { results };
    return { results, count: await store.count(schema, spec, schemas.lookup) };
  }

  /**
   * `redirectClassNameForKey=<relation field>` (what an SDK sends to query a relation whose target
   * class it does not know): the find runs on the relation's target class, checked as any find of
   * that class, and each row names it as `className`, as the incumbent answers. A key that is not a
   * Relation field leaves the class as it is.
   */
  private async findRedirected(
    ctx: Ctx,
    className: string,
    key: unknown,
    params: Record<string, unknown>,
  ): Promise<{ results: Row[]; count?: number }> {
    checkClassName(className);
    if (typeof key !== 'string' || keyPathProblem(key)) {
      throw new BdsError(
        ErrorCode.INVALID_KEY_NAME,
        `Invalid redirectClassNameForKey: ${JSON.stringify(key)}.`,
      );
    }
    const def = this.core.schemas.get(className)?.fields[key];
    const target = def?.type === 'Relation' && def.targetClass ? def.targetClass : className;
    const found = await this.find(ctx, target, params);
    for (const row of found.results) row.className = target;
    return found;
  }

  /**
   * The where of a find with every layer in it: CLP find (count for `count=1&limit=0`, both when
   * results and a count are asked for), the ACL read condition, pointer permissions, and the
   * protected-field and subquery checks. `undefined` when the class does not exist.
   */
  private async secureFind(
    caller: Caller,
    className: string,
    opts: FindOptions,
  ): Promise<QueryNode | undefined> {
    const op = opts.count && opts.limit === 0 ? 'count' : 'find';
    let access = rowAccess(this.core, caller, className, op);
    if (opts.count && op === 'find' && !caller.isMaster) {
      const counting = classVerdict(this.core, caller, className, 'count');
      if (!counting.allowed) throw denial(counting);
      access = counting.condition ? and(access!, counting.condition) : access;
    }
    const schema = this.core.schemas.get(className);
    if (!schema) return undefined;
    const where = await secureQuery(this.core, caller, schema, opts.where, opts.order);
    if (!access) return where;
    // The store tests conditions in order. A where with costly tests (a $regex, geometry,
    // subqueries) runs after the access condition, so it never runs on rows the caller may not
    // read; a plain where first, so that the ACL is checked on the few rows it leaves.
    return hasCostlyTests(where) ? and(access, where) : and(where, access);
  }

  async get(ctx: Ctx, className: string, objectId: string, params: Record<string, unknown>): Promise<Row> {
    this.checkRoute(ctx, className, 'get');
    const { caller } = ctx;
    let opts = parseGetOptions(params, this.limitsFor(caller));
    let access = rowAccess(this.core, caller, className, 'get');
    const schema = this.core.schemas.get(className);
    if (!schema) throw notFound();
    const finds = this.core.hooks.find;
    const triggers = finds.hasFind(className) ? finds : undefined;
    let query: FindQuery | undefined;
    if (triggers) {
      const byId = { objectId };
      query = await triggers.beforeFind(ctx, { ...findQueryOf(className, params), where: byId });
      const { where: _where, limit: _limit, skip: _skip, order: _order, ...rest } = paramsOf(query, params);
      opts = parseGetOptions(rest, this.limitsFor(caller));
      // A rewritten where narrows the get: the row must also match it (with every access check).
      if (JSON.stringify(query.where) !== JSON.stringify(byId)) {
        const limits = this.limitsFor(caller);
        const extra = await secureQuery(this.core, caller, schema, parseWhere(query.where, limits), []);
        access = access ? and(access, extra) : extra;
      }
    }
    const row = await this.byId(schema, objectId, access);
    if (!row) throw notFound();
    let results = await this.present(caller, schema, [row], opts);
    if (triggers && query) {
      results = onlyGiven(schema, results, await triggers.afterFind(ctx, query, structuredClone(results)));
    }
    if (!results[0]) throw notFound();
    return results[0];
  }

  /** One row by id that meets `condition` (as stored: no layer applied to its fields). */
  async byId(schema: ClassSchema, objectId: string, condition?: QueryNode): Promise<Row | undefined> {
    const byId: QueryNode = { type: 'compare', path: ['objectId'], op: 'eq', value: objectId };
    const spec = { where: and(byId, condition), order: [], limit: 1, skip: 0 };
    return (await this.core.store.find(schema, spec, this.core.schemas.lookup))[0];
  }

  /** Whether the caller may read one row (CLP get and its row condition, ACL read). */
  async canRead(caller: Caller, schema: ClassSchema, objectId: string): Promise<boolean> {
    if (caller.isMaster) return true;
    const verdict = classVerdict(this.core, caller, schema.className, 'get');
    if (!verdict.allowed) return false;
    const access = and(aclCondition(caller, 'read')!, verdict.condition);
    return (await this.byId(schema, objectId, access)) !== undefined;
  }

  /**
   * secrets, protectedFields, includes, then projection (keys / excludeKeys). Rows are changed in
   * place (pass copies). Realtime (live/) presents event rows with it, as a find would.
   */
  async present(
    caller: Caller,
    schema: ClassSchema,
    rows: Row[],
    opts: { keys: string[] | undefined; excludeKeys: string[]; include: string[] },
  ): Promise<Row[]> {
    let include = opts.include;
    if (include.includes('*')) {
      const pointers = Object.entries(schema.fields)
        .filter(([, def]) => def.type === 'Pointer')
        .map(([name]) => name);
      include = [...new Set([...include.filter((i) => i !== '*'), ...pointers])];
    }
    stripSecrets(caller, schema.className, rows);
    if (caller.isMaster && schema.className === '_User') await this.markMfa(rows);
    this.hideProtected(caller, schema, rows);
    fillFileUrls(this.core, schema, rows);
    if (include.length) await this.includePaths(caller, schema, rows, buildTree(include), opts.keys);
    // Without keys or excludeKeys, project answers each row itself: no copy of the list either.
    if (!opts.keys && opts.excludeKeys.length === 0) return rows;
    return rows.map((row) => project(row, opts.keys, opts.excludeKeys));
  }

  /**
   * The master key sees whether each user enrolled a second factor (`authData.mfa.status`, as the
   * user's own GET /users/me says), never the factor's secret, which stays in an internal column.
   */
  private async markMfa(rows: Row[]): Promise<void> {
    const ids = rows.map((row) => row.objectId).filter((id): id is string => typeof id === 'string');
    // One query for the page, not one per row.
    const internal = await this.core.store.findInternalByIds('_User', ids, [USER_INTERNAL_COLUMNS.mfa]);
    const enrolled = new Set(internal.filter((r) => r[USER_INTERNAL_COLUMNS.mfa]).map((r) => r.objectId));
    for (const row of rows) {
      if (!enrolled.has(row.objectId)) continue;
      row.authData = { ...(isObject(row.authData) ? row.authData : {}), mfa: { status: 'enabled' } };
    }
  }

  /** protectedFields layer on read results (rows are changed in place). */
  hideProtected(caller: Caller, schema: ClassSchema, rows: Row[]): void {
    if (caller.isMaster) return;
    const view = viewOf(this.core, caller, schema);
    const fixed = view.fixedHidden;
    if (fixed) {
      if (fixed.length === 0) return;
      for (const row of rows) for (const field of fixed) delete row[field];
      return;
    }
    for (const row of rows) for (const field of view.hidden(row)) delete row[field];
  }

  private async includePaths(
    caller: Caller,
    schema: ClassSchema,
    rows: Row[],
    tree: IncludeTree,
    keys: string[] | undefined,
  ): Promise<void> {
    for (const [field, children] of tree) {
      const def = schema.fields[field];
      if (!def || (def.type !== 'Pointer' && def.type !== 'Array')) continue;
      const byClass = new Map<string, Set<string>>();
      for (const row of rows) {
        for (const p of pointersIn(row[field])) {
          let ids = byClass.get(p.className);
          if (!ids) {
            ids = new Set();
            byClass.set(p.className, ids);
          }
          ids.add(p.objectId);
        }
      }
      const subKeys = keys?.filter((k) => k.startsWith(`${field}.`)).map((k) => k.slice(field.length + 1));
      const found = new Map<string, Row>();
      for (const [className, ids] of byClass) {
        const target = this.core.schemas.get(className);
        if (!target) continue;
        // An included pointer is checked on its own: rows the caller may not read stay bare pointers.
        const access = includeAccess(this.core, caller, className);
        if (access === null) continue;
        const byIds: QueryNode = { type: 'in', path: ['objectId'], values: [...ids], not: false };
        const spec = { where: and(byIds, access), order: [], limit: ids.size, skip: 0 };
        const objects = await this.core.store.find(target, spec, this.core.schemas.lookup);
        stripSecrets(caller, className, objects);
        this.hideProtected(caller, target, objects);
        fillFileUrls(this.core, target, objects);
        if (children.size) await this.includePaths(caller, target, objects, children, subKeys);
        for (const obj of objects) {
          found.set(`${className}/${obj.objectId}`, {
            __type: 'Object',
            className,
            ...project(obj, subKeys?.length ? subKeys : undefined, []),
          });
        }
      }
      for (const row of rows) {
        const value = row[field];
        const swap = (v: unknown) =>
          isPointerValue(v) ? (found.get(`${v.className}/${v.objectId}`) ?? v) : v;
        if (Array.isArray(value)) row[field] = value.map(swap);
        else if (value !== undefined) row[field] = swap(value);
      }
    }
  }
}

const COSTLY = new Set<QueryNode['type']>([
  'regex',
  'text',
  'nearSphere',
  'withinPolygon',
  'withinCenterSphere',
  'intersectsPoint',
  'inQuery',
  'select',
  'relatedTo',
]);

/**
 * `keys=$score`: each row answers its `$text` score as `score` (the first `$text` of the where,
 * outside subqueries), computed by the rule the store matched and sorted with (query/text.ts).
 */
function addTextScores(where: QueryNode, rows: Row[]): void {
  const text = firstText(where);
  if (!text) return;
  for (const row of rows) {
    let value: unknown = row;
    for (const key of text.path) value = isObject(value) ? value[key] : undefined;
    row.score = textScore(value, text.search);
  }
}

function firstText(node: QueryNode): Extract<QueryNode, { type: 'text' }> | undefined {
  if (node.type === 'text') return node;
  if (node.type === 'and' || node.type === 'or' || node.type === 'nor') {
    for (const child of node.children) {
      const found = firstText(child);
      if (found) return found;
    }
  }
  return undefined;
}

function hasCostlyTests(node: QueryNode): boolean {
  if (node.type === 'and' || node.type === 'or' || node.type === 'nor')
    return node.children.some(hasCostlyTests);
  return COSTLY.has(node.type);
}

/** The wire form of a find's parameters, for beforeFind (`where` parsed from its JSON). */
function findQueryOf(className: string, params: Record<string, unknown>): FindQuery {
  let where: unknown = params.where ?? {};
  if (typeof where === 'string') where = where === '' ? {} : JSON.parse(where);
  const query: FindQuery = { className, where: isObject(where) ? where : {} };
  const num = (v: unknown) => (v === undefined || v === '' ? undefined : Number(v));
  if (num(params.limit) !== undefined) query.limit = num(params.limit);
  if (num(params.skip) !== undefined) query.skip = num(params.skip);
  for (const key of ['order', 'keys', 'include'] as const) {
    const value = params[key];
    if (value !== undefined && value !== '')
      query[key] = Array.isArray(value) ? value.join(',') : String(value);
  }
  return query;
}

/** A find's parameters from a (rewritten) query; `count` and `excludeKeys` stay the caller's. */
function paramsOf(query: FindQuery, params: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { where: query.where };
  for (const key of ['limit', 'skip', 'order', 'keys', 'include'] as const) {
    if (query[key] !== undefined) out[key] = query[key];
  }
  for (const key of ['count', 'excludeKeys'] as const) if (params[key] !== undefined) out[key] = params[key];
  return out;
}

/** Fields an afterFind may never add back: schema fields the caller was not shown, and secrets. */
const NEVER_ADDED = new Set(['password', 'authData', 'sessionToken', 'ACL', 'createdAt', 'updatedAt']);

/**
 * What an afterFind answered, kept only as far as it stays within what access control gave it:
 * rows it was given (by objectId, each once), with their own fields (changed values allowed)
 * and computed fields that are not fields of the class. Rows it dropped stay dropped.
 */
function onlyGiven(schema: ClassSchema, given: Row[], answered: Row[]): Row[] {
  const byId = new Map(given.map((row) => [row.objectId, row]));
  const out: Row[] = [];
  for (const row of answered) {
    if (!isObject(row)) continue;
    const base = byId.get(row.objectId);
    if (!base) continue;
    byId.delete(row.objectId);
    const kept: Row = {};
    for (const [key, value] of Object.entries(row)) {
      if (key in base || (!(key in schema.fields) && !NEVER_ADDED.has(key))) kept[key] = value;
    }
    out.push(kept);
  }
  return out;
}

/** `password` is never readable; `authData` only by master. */
export function stripSecrets(caller: Caller, className: string, rows: Row[]): void {
  if (className !== '_User') return;
  for (const row of rows) {
    delete row.password;
    if (!caller.isMaster) delete row.authData;
  }
}

type IncludeTree = Map<string, IncludeTree>;

function buildTree(paths: string[]): IncludeTree {
  const root: IncludeTree = new Map();
  for (const path of paths) {
    let node = root;
    for (const part of path.split('.')) {
      let next = node.get(part);
      if (!next) {
        next = new Map();
        node.set(part, next);
      }
      node = next;
    }
  }
  return root;
}

function isPointerValue(v: unknown): v is { className: string; objectId: string } {
  return (
    isObject(v) && v.__type === 'Pointer' && typeof v.className === 'string' && typeof v.objectId === 'string'
  );
}

function pointersIn(value: unknown): Array<{ className: string; objectId: string }> {
  if (isPointerValue(value)) return [value];
  if (Array.isArray(value)) return value.filter(isPointerValue);
  return [];
}

const ALWAYS_RETURNED = ['objectId', 'createdAt', 'updatedAt', 'ACL'];

/** keys / excludeKeys, with dotted keys reaching into Object fields and included objects. */
export function project(row: Row, keys: string[] | undefined, excludeKeys: string[]): Row {
  let out: Row = row;
  if (keys) {
    out = {};
    for (const k of ALWAYS_RETURNED) if (row[k] !== undefined) out[k] = row[k];
    if (row.__type !== undefined) {
      out.__type = row.__type;
      out.className = row.className;
    }
    for (const key of keys) {
      const [top, ...rest] = key.split('.') as [string, ...string[]];
      const value = row[top];
      if (value === undefined) continue;
      if (rest.length === 0) {
        out[top] = value;
      } else if (isObject(value) && value.__type === undefined) {
        out[top] = mergePick(out[top] as Row | undefined, value, rest);
      } else {
        // Included objects were already narrowed to their sub-keys; bare pointers pass as they are.
        out[top] = value;
      }
    }
  }
  if (excludeKeys.length) {
    out = { ...out };
    for (const key of excludeKeys) out = withoutPath(out, key.split('.'));
  }
  return out;
}

/** A copy of `row` without the value at `path`; objects along the way are copied, not changed. */
function withoutPath(row: Row, path: string[]): Row {
  const [head, ...rest] = path as [string, ...string[]];
  if (!(head in row)) return row;
  const out: Row = { ...row };
  if (rest.length === 0) delete out[head];
  else if (isObject(row[head])) out[head] = withoutPath(row[head] as Row, rest);
  return out;
}

function mergePick(target: Row | undefined, source: Record<string, unknown>, path: string[]): Row {
  const out: Row = target ?? {};
  const [head, ...rest] = path as [string, ...string[]];
  if (!(head in source)) return out;
  const value = source[head];
  if (rest.length === 0 || !isObject(value)) out[head] = value;
  else out[head] = mergePick(out[head] as Row | undefined, value, rest);
  return out;
}
