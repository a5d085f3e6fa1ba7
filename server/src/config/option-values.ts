import { z } from 'zod';

/**
 * How the master-only options view (config/options-view.ts, GET /serverInfo/options) shows an
 * option that holds a credential: `hidden` (only whether it is set), `url` (the address without
 * its password or secret parameters), `publicKeys` (each key's id and SHA-256 digest, never key text).
 */
export type SecretKind = 'hidden' | 'url' | 'publicKeys';

/** The one mark of a secret option, set where the option is declared; the options view reads it. */
export const secretOptions = z.registry<{ secret: SecretKind }>();

/** Marks an option as a secret of the given kind (what the options view shows of it). */
export function secret<T extends z.ZodType>(schema: T, kind: SecretKind = 'hidden'): T {
  secretOptions.add(schema, { secret: kind });
  return schema;
}

/** A bound of the request complexity: -1 for none. */
export const limit = z.number().int().min(-1);

function isRegExp(source: string): boolean {
  try {
    new RegExp(source);
    return true;
  } catch {
    return false;
  }
}

/** A size in bytes, as a number or a text such as "20mb". */
export const byteSize = z.union([
  z.number().int().positive(),
  z
    .string()
    .regex(/^\d+(\.\d+)?\s*(b|kb|mb|gb)?$/i, 'must be a size such as "20mb"')
    .transform(parseByteSize),
]);

/** A regular expression, as text. */
export const pathPattern = z.string().refine(isRegExp, 'must be a valid regular expression');

function parseByteSize(text: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*(b|kb|mb|gb)?$/i.exec(text.trim())!;
  const units: Record<string, number> = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 };
  return Math.floor(Number(m[1]) * units[(m[2] ?? 'b').toLowerCase()]!);
}
