import { invalidQuery } from '../kernel/errors.ts';
import { keyPathProblem } from '../kernel/names.ts';
import type { Path, QueryNode } from '../kernel/query.ts';
import type { OrderKey } from '../kernel/records.ts';
import { jsonProblem } from '../kernel/validate.ts';
import { parseWhere, type QueryLimits } from '../query/parse.ts';

export interface FindOptions {
  where: QueryNode;
  order: OrderKey[];
  limit: number;
  skip: number;
  count: boolean;
  /** Top-level and dotted keys to return; `undefined` returns every field. */
  keys: string[] | undefined;
  excludeKeys: string[];
  include: string[];
}

export interface ComplexityLimits extends QueryLimits {
  includeDepth?: number;
  includeCount?: number;
}

const FIND_PARAMS = new Set(['where', 'order', 'limit', 'skip', 'keys', 'excludeKeys', 'include', 'count']);
const GET_PARAMS = new Set(['keys', 'excludeKeys', 'include']);

function listParam(value: unknown, name: string): string[] {
  if (value === undefined || value === '') return [];
  const items = Array.isArray(value) ? value.map(String) : String(value).split(',');
  const out = items.map((s) => s.trim()).filter(Boolean);
  for (const item of out) {
    if (item !== '*' && keyPathProblem(item)) throw invalidQuery(`Invalid ${name}: ${JSON.stringify(item)}.`);
  }
  return out;
}

function intParam(value: unknown, name: string): number | undefined {
  if (value === undefined || value === '') return undefined;
  const n = typeof value === 'number' ? value : Number(value);
  if (!Number.isInteger(n) || n < 0) throw invalidQuery(`Invalid ${name}: it must be a whole number >= 0.`);
  // Past 2^53 a number is no longer exact; no class holds that many rows anyway.
  return Math.min(n, Number.MAX_SAFE_INTEGER);
}

function parseOrder(value: unknown): OrderKey[] {
  if (value === undefined || value === '') return [];
  const items = Array.isArray(value) ? value.map(String) : String(value).split(',');
  return items
    .map((s) => s.trim())
    .filter(Boolean)
    .map((item) => {
      const descending = item.startsWith('-');
      const key = descending ? item.slice(1) : item;
      if (keyPathProblem(key)) throw invalidQuery(`Invalid order: ${JSON.stringify(item)}.`);
      return { path: key.split('.') as Path, descending };
    });
}

function checkParams(params: Record<string, unknown>, allowed: Set<string>): void {
  for (const key of Object.keys(params)) {
    if (!allowed.has(key)) throw invalidQuery(`Invalid parameter for query: ${key}`);
  }
}

function checkIncludes(include: string[], limits: ComplexityLimits): void {
  const maxCount = limits.includeCount;
  if (maxCount !== undefined && maxCount >= 0 && include.length > maxCount) {
    throw invalidQuery(`Include count of ${include.length} exceeds the maximum of ${maxCount}.`);
  }
  const maxDepth = limits.includeDepth;
  for (const path of include) {
    const depth = path.split('.').length;
    if (maxDepth !== undefined && maxDepth >= 0 && depth > maxDepth) {
      throw invalidQuery(`Include depth of ${depth} exceeds the maximum of ${maxDepth}.`);
    }
  }
}

function parseWhereParam(raw: unknown, limits: ComplexityLimits): QueryNode {
  if (raw === undefined || raw === '') return { type: 'and', children: [] };
  let where = raw;
  if (typeof raw === 'string') {
    try {
      where = JSON.parse(raw);
    } catch {
      throw invalidQuery('Invalid where: it is not valid JSON.');
    }
  }
  const problem = jsonProblem(where);
  if (problem) throw invalidQuery(`Invalid where: it ${problem}.`);
  return parseWhere(where, limits);
}

/** Parses and checks the parameters of a find (query string or `_method: GET` body). */
export function parseFindOptions(
  params: Record<string, unknown>,
  limits: ComplexityLimits,
  maxLimit: number,
): FindOptions {
  checkParams(params, FIND_PARAMS);
  const include = listParam(params.include, 'include');
  checkIncludes(include, limits);
  const order = parseOrder(params.order);
  const countParam = params.count;
  const count = countParam === true || countParam === 1 || countParam === '1' || countParam === 'true';
  if (countParam !== undefined && !count && !['0', 'false', 0, false, ''].includes(countParam as never)) {
    throw invalidQuery('Invalid count: use count=1.');
  }
  const limit = intParam(params.limit, 'limit');
  return {
    where: parseWhereParam(params.where, limits),
    order,
    limit: Math.min(limit ?? 100, maxLimit),
    skip: intParam(params.skip, 'skip') ?? 0,
    count,
    keys: params.keys === undefined ? undefined : listParam(params.keys, 'keys'),
    excludeKeys: listParam(params.excludeKeys, 'excludeKeys'),
    include,
  };
}

export function parseGetOptions(
  params: Record<string, unknown>,
  limits: ComplexityLimits,
): Pick<FindOptions, 'keys' | 'excludeKeys' | 'include'> {
  checkParams(params, GET_PARAMS);
  const include = listParam(params.include, 'include');
  checkIncludes(include, limits);
  return {
    keys: params.keys === undefined ? undefined : listParam(params.keys, 'keys'),
    excludeKeys: listParam(params.excludeKeys, 'excludeKeys'),
    include,
  };
}
