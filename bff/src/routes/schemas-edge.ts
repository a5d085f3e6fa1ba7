import {
  ANY_CLASS_NAME_PATTERN,
  FIELD_NAME_PATTERN,
  MAX_FIELD_NAME,
  OBJECT_ID_PATTERN,
} from '@bds/client/protocol';
import { z } from 'zod';

/**
 * zod schemas shared by the route modules: the edge of the bff. Names and ids follow the
 * protocol's rules (docs/protocol.md#wire-values), so the bff refuses what the service would.
 */

export const className = z
  .string()
  .regex(ANY_CLASS_NAME_PATTERN, 'must be a class name (letters, digits, underscores)');
export const objectId = z.string().regex(OBJECT_ID_PATTERN, 'must be an object id');
const FIELD_NAME_TEXT = 'must be a field name (letters, digits, underscores)';
/** Whether `name` is a top-level field name by the protocol's pattern and length. */
export const isFieldName = (name: string): boolean =>
  FIELD_NAME_PATTERN.test(name) && name.length <= MAX_FIELD_NAME;
export const fieldName = z.string().refine(isFieldName, FIELD_NAME_TEXT);
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
