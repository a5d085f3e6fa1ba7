import { z } from 'zod';

/** zod schemas shared by the route modules: the edge of the bff. */

export const className = z
  .string()
  .regex(/^_?[A-Za-z][A-Za-z0-9_]{0,119}$/, 'must be a class name (letters, digits, underscores)');
export const objectId = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'must be an object id');
export const fieldName = z
  .string()
  .regex(/^[A-Za-z][A-Za-z0-9_]{0,119}$/, 'must be a field name (letters, digits, underscores)');
export const jsonObject = z.record(z.string(), z.unknown());

export const aclEntry = z.strictObject({ read: z.boolean().optional(), write: z.boolean().optional() });
export const acl = z.record(z.string().min(1), aclEntry);

/** A JSON object passed as a query-string parameter (`where={"score":{"$gt":1}}`). */
const jsonParam = z.string().transform((text, ctx) => {
  try {
    const value = JSON.parse(text);
    if (value !== null && typeof value === 'object' && !Array.isArray(value))
      return value as Record<string, unknown>;
  } catch {
    // reported below
  }
  ctx.addIssue({ code: 'custom', message: 'must be a JSON object' });
  return z.NEVER;
});
const intParam = (max: number) =>
  z
    .string()
    .regex(/^\d+$/, 'must be a non-negative integer')
    .transform(Number)
    .pipe(z.number().int().min(0).max(max));
const listParam = z.string().max(10_000);
const boolParam = z.enum(['1', '0', 'true', 'false']).transform((v) => v === '1' || v === 'true');

/** The find query string: the service's full query language passed through. */
export const findQuery = z.strictObject({
  where: jsonParam.optional(),
  order: listParam.optional(),
  limit: intParam(1000).optional(),
  skip: intParam(10_000_000).optional(),
  keys: listParam.optional(),
  excludeKeys: listParam.optional(),
  include: listParam.optional(),
  count: boolParam.optional(),
});
export type FindQuery = z.output<typeof findQuery>;

export const countQuery = z.strictObject({ where: jsonParam.optional() });
export const getQuery = z.strictObject({ keys: listParam.optional(), include: listParam.optional() });
