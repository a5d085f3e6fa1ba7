import type { z } from 'zod';
import { BdsError } from './errors.ts';

/**
 * Validation at the edge with zod: the first issue becomes a protocol error. Its text is the
 * schema's own message; its code is `code`, unless the failing check names another in
 * `params.code` (a refinement that answers, say, 105 where the rest answer 107). A record key
 * that fails answers with its own check's text, not the record's.
 */
export function parseInput<T extends z.ZodType>(schema: T, value: unknown, code: number): z.output<T> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  let issue = result.error.issues[0]!;
  while (issue.code === 'invalid_key' && issue.issues.length > 0) issue = issue.issues[0]!;
  const issueCode =
    issue.code === 'custom' ? (issue.params as { code?: number } | undefined)?.code : undefined;
  throw new BdsError(issueCode ?? code, issue.message);
}

/**
 * How deeply a request's JSON may nest (bodies and `where` alike). Well under what the store's
 * JSON functions take (SQLite: 1,000), so no stored value can later break a query on it.
 */
export const MAX_JSON_DEPTH = 128;

/**
 * What is wrong with a parsed JSON value, if anything: nesting deeper than `max` objects and
 * arrays, or a key named `__proto__` anywhere (JSON.parse makes it an own property, which code
 * that copies objects may then turn into a prototype). Walked without recursion.
 */
export function jsonProblem(value: unknown, max = MAX_JSON_DEPTH): string | undefined {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!;
    if (item === null || typeof item !== 'object') continue;
    if (depth + 1 > max) return `nests deeper than ${max} levels`;
    if (!Array.isArray(item) && Object.hasOwn(item, '__proto__')) return 'holds a key named __proto__';
    for (const child of Array.isArray(item) ? item : Object.values(item)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
  return undefined;
}
