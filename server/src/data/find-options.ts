import { z } from 'zod';
import { BdsError, ErrorCode } from '../kernel/errors.ts';
import { keyPathProblem } from '../kernel/names.ts';
import type { Path, QueryNode } from '../kernel/query.ts';
import type { OrderKey } from '../kernel/records.ts';
import { jsonProblem, parseInput } from '../kernel/validate.ts';
import { parseWhere, type QueryLimits } from '../query/parse.ts';
import { TEXT_SCORE_KEY } from '../query/text.ts';

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

/** A list parameter as sent: `a,b` or repeated (`?keys=a&keys=b`); blanks dropped. */
function splitList(value: unknown): string[] {
  if (value === undefined || value === '') return [];
  const items = Array.isArray(value) ? value.map(String) : String(value).split(',');
  return items.map((s) => s.trim()).filter(Boolean);
}

/** A key that names no field: 105, as an invalid key of a where (query/parse.ts). */
const INVALID_KEY = { code: ErrorCode.INVALID_KEY_NAME };

/** `keys`, `excludeKeys`, `include`: key paths (or `*`). */
const listParam = (name: string) =>
  z.preprocess(
    splitList,
    z.array(
      z.string().refine((item) => item === '*' || item === TEXT_SCORE_KEY || !keyPathProblem(item), {
        error: (iss) => `Invalid ${name}: ${JSON.stringify(iss.input)}.`,
        params: INVALID_KEY,
      }),
    ),
  );

/**
 * `limit`, `skip`: a whole number from 0 to 2^53 - 1, as a number or its text. Past 2^53 a number
 * is no longer exact (and no class holds that many rows): refused, naming the parameter.
 */
const intParam = (name: string) => {
  const error = `Invalid ${name}: it must be a whole number >= 0.`;
  const tooLarge = `Invalid ${name}: it must be a whole number from 0 to ${Number.MAX_SAFE_INTEGER}.`;
  return z.optional(
    z.preprocess(
      (value) => (value === '' ? undefined : value),
      z.optional(
        z.coerce
          .number({ error })
          .refine((n) => Number.isInteger(n) && n >= 0, { error, abort: true })
          .refine((n) => n <= Number.MAX_SAFE_INTEGER, { error: tooLarge }),
      ),
    ),
  );
};

/**
 * The field an order item sorts on. `_created_at` and `_updated_at` (the incumbent's column names,
 * which its SDKs may send) are `createdAt` and `updatedAt`.
 */
const ORDER_ALIASES: Readonly<Record<string, string>> = {
  _created_at: 'createdAt',
  _updated_at: 'updatedAt',
};
const orderKey = (item: string) => {
  const key = item.startsWith('-') ? item.slice(1) : item;
  return Object.hasOwn(ORDER_ALIASES, key) ? ORDER_ALIASES[key]! : key;
};
const orderParam = z.preprocess(
  splitList,
  z.array(
    z
      .string()
      .refine((item) => orderKey(item) === TEXT_SCORE_KEY || !keyPathProblem(orderKey(item)), {
        error: (iss) => `Invalid order: ${JSON.stringify(iss.input)}.`,
        params: INVALID_KEY,
      })
      .transform(
        (item): OrderKey => ({ path: orderKey(item).split('.') as Path, descending: item.startsWith('-') }),
      ),
  ),
);

const COUNT_ON = [true, 1, '1', 'true'] as const;
const COUNT_OFF = ['0', 'false', 0, false, ''] as const;
const countParam = z.optional(
  z
    .literal([...COUNT_ON, ...COUNT_OFF], { error: 'Invalid count: use count=1.' })
    .transform((v) => (COUNT_ON as readonly unknown[]).includes(v)),
);

/** `include`: key paths, at most `includeCount` of them, each at most `includeDepth` deep. */
const includeParam = (limits: ComplexityLimits) =>
  listParam('include').check((ctx) => {
    const include = ctx.value;
    const maxCount = limits.includeCount;
    if (maxCount !== undefined && maxCount >= 0 && include.length > maxCount) {
      ctx.issues.push({
        code: 'custom',
        input: include,
        message: `Include count of ${include.length} exceeds the maximum of ${maxCount}.`,
      });
      return;
    }
    const maxDepth = limits.includeDepth;
    if (maxDepth === undefined || maxDepth < 0) return;
    for (const path of include) {
      const depth = path.split('.').length;
      if (depth > maxDepth) {
        ctx.issues.push({
          code: 'custom',
          input: include,
          message: `Include depth of ${depth} exceeds the maximum of ${maxDepth}.`,
        });
        return;
      }
    }
  });

/**
 * `where`: JSON text (or an object, from a `_method: GET` body), within the nesting limit, parsed
 * into the query AST; a parse error keeps its own code.
 */
const whereParam = (limits: ComplexityLimits) =>
  z.unknown().transform((raw, ctx): QueryNode => {
    if (raw === undefined || raw === '') return { type: 'and', children: [] };
    const fail = (message: string, code: number = ErrorCode.INVALID_QUERY) => {
      ctx.issues.push({ code: 'custom', input: raw, message, params: { code } });
      return z.NEVER;
    };
    let where = raw;
    if (typeof raw === 'string') {
      try {
        where = JSON.parse(raw);
      } catch {
        return fail('Invalid where: it is not valid JSON.');
      }
    }
    const problem = jsonProblem(where);
    if (problem) return fail(`Invalid where: it ${problem}.`);
    try {
      return parseWhere(where, limits);
    } catch (err) {
      if (err instanceof BdsError) return fail(err.message, err.code);
      throw err;
    }
  });

/**
 * The parameters a request may name, checked first: an unknown one is refused before any value
 * is looked at (in the order the request gives them).
 */
const onlyParams = (names: readonly string[]) =>
  z.strictObject(Object.fromEntries(names.map((n) => [n, z.optional(z.unknown())])), {
    error: (iss) =>
      iss.code === 'unrecognized_keys' ? `Invalid parameter for query: ${iss.keys[0]}` : undefined,
  });

/** The checks run in the order of the keys below, and the first failing one answers. */
const findParams = (limits: ComplexityLimits) =>
  onlyParams(['where', 'order', 'limit', 'skip', 'keys', 'excludeKeys', 'include', 'count']).pipe(
    z.object({
      include: z.optional(includeParam(limits)),
      order: z.optional(orderParam),
      count: countParam,
      limit: intParam('limit'),
      where: z.optional(whereParam(limits)),
      skip: intParam('skip'),
      keys: z.optional(listParam('keys')),
      excludeKeys: z.optional(listParam('excludeKeys')),
    }),
  );

const getParams = (limits: ComplexityLimits) =>
  onlyParams(['keys', 'excludeKeys', 'include']).pipe(
    z.object({
      include: z.optional(includeParam(limits)),
      keys: z.optional(listParam('keys')),
      excludeKeys: z.optional(listParam('excludeKeys')),
    }),
  );

/**
 * The schemas depend on the caller's limits: built once per limits object (the options' own, or
 * none at all for the master key).
 */
function cached<T>(build: (limits: ComplexityLimits) => T): (limits: ComplexityLimits) => T {
  const unlimited = build({});
  const byLimits = new WeakMap<ComplexityLimits, T>();
  return (limits) => {
    if (Object.keys(limits).length === 0) return unlimited;
    let schema = byLimits.get(limits);
    if (!schema) {
      schema = build(limits);
      byLimits.set(limits, schema);
    }
    return schema;
  };
}

const findSchema = cached(findParams);
const getSchema = cached(getParams);

/** What the fast path of a find accepts; anything else (a list parameter, an unknown name) goes to zod. */
const FAST_FIND_PARAMS = new Set(['where', 'order', 'limit', 'skip', 'count']);
const WHOLE_NUMBER = /^(?:0|[1-9][0-9]{0,14})$/;
const NOT_FAST = Symbol('not fast');

/** `limit` / `skip` as the zod schema reads a plain valid one; NOT_FAST for anything else. */
function fastInt(value: unknown): number | undefined | typeof NOT_FAST {
  if (value === undefined || value === '') return undefined;
  if (typeof value === 'string') return WHOLE_NUMBER.test(value) ? Number(value) : NOT_FAST;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
  return NOT_FAST;
}

/**
 * The common find (`where`, `order`, `limit`, `skip`, `count`, all valid) read without zod, which
 * costs more than the rest of the request's parsing. It gives the same answer as the schema; a
 * value it is unsure of, or any invalid one, answers `undefined` and the schema decides (and
 * words the error) as always.
 */
function fastFindOptions(
  params: Record<string, unknown>,
  limits: ComplexityLimits,
  maxLimit: number,
): FindOptions | undefined {
  for (const key in params) if (!FAST_FIND_PARAMS.has(key) || !Object.hasOwn(params, key)) return undefined;
  const limit = fastInt(params.limit);
  const skip = fastInt(params.skip);
  if (limit === NOT_FAST || skip === NOT_FAST) return undefined;
  let count = false;
  const rawCount = params.count;
  if (rawCount !== undefined) {
    if ((COUNT_ON as readonly unknown[]).includes(rawCount)) count = true;
    else if (!(COUNT_OFF as readonly unknown[]).includes(rawCount)) return undefined;
  }
  const order: OrderKey[] = [];
  const rawOrder = params.order;
  if (rawOrder !== undefined) {
    if (typeof rawOrder !== 'string') return undefined;
    for (const item of splitList(rawOrder)) {
      const key = orderKey(item);
      if (key !== TEXT_SCORE_KEY && keyPathProblem(key)) return undefined;
      order.push({ path: key.split('.') as Path, descending: item.startsWith('-') });
    }
  }
  let where: QueryNode = { type: 'and', children: [] };
  const rawWhere = params.where;
  if (rawWhere !== undefined && rawWhere !== '') {
    let value = rawWhere;
    try {
      if (typeof rawWhere === 'string') value = JSON.parse(rawWhere);
      if (jsonProblem(value)) return undefined;
      where = parseWhere(value, limits);
    } catch {
      return undefined;
    }
  }
  return {
    where,
    order,
    limit: Math.min(limit ?? 100, maxLimit),
    skip: skip ?? 0,
    count,
    keys: undefined,
    excludeKeys: [],
    include: [],
  };
}

/** Parses and checks the parameters of a find (query string or `_method: GET` body). */
export function parseFindOptions(
  params: Record<string, unknown>,
  limits: ComplexityLimits,
  maxLimit: number,
): FindOptions {
  const fast = fastFindOptions(params, limits, maxLimit);
  if (fast) return fast;
  const p = parseInput(findSchema(limits), params, ErrorCode.INVALID_QUERY);
  return {
    where: p.where ?? { type: 'and', children: [] },
    order: p.order ?? [],
    limit: Math.min(p.limit ?? 100, maxLimit),
    skip: p.skip ?? 0,
    count: p.count ?? false,
    keys: p.keys,
    excludeKeys: p.excludeKeys ?? [],
    include: p.include ?? [],
  };
}

export function parseGetOptions(
  params: Record<string, unknown>,
  limits: ComplexityLimits,
): Pick<FindOptions, 'keys' | 'excludeKeys' | 'include'> {
  // No parameters (the common get by id): nothing to check.
  let any = false;
  for (const _ in params) {
    any = true;
    break;
  }
  if (!any) return { keys: undefined, excludeKeys: [], include: [] };
  const p = parseInput(getSchema(limits), params, ErrorCode.INVALID_QUERY);
  return { keys: p.keys, excludeKeys: p.excludeKeys ?? [], include: p.include ?? [] };
}
