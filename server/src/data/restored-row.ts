import { ISO_DATE_PATTERN, OBJECT_ID_PATTERN } from '@bds/client/protocol';
import { BdsError, ErrorCode, incorrectType } from '../kernel/errors.ts';
import type { Row } from '../kernel/records.ts';
import { type ClassSchema, USER_INTERNAL_COLUMNS } from '../kernel/schema.ts';
import type { InternalValues } from '../storage/adapter.ts';
import { type ParsedWrite, parseWriteBody } from './write-body.ts';

/** Internal columns a restore may write, per class: the ones the service itself keeps. */
const RESTORABLE_INTERNAL: Record<string, readonly string[]> = {
  _User: Object.values(USER_INTERNAL_COLUMNS),
};

/**
 * The checks of a restored row against its class's schema (`WritePipeline.restore`; the import
 * also runs them on every row before it writes anything): ids and dates as the service writes
 * them, values of the schema's types and no operations, internal columns the service keeps.
 */
export function parseRestoredRow(
  schema: ClassSchema,
  row: Row,
  internal: InternalValues | undefined,
): { objectId: string; createdAt: string; updatedAt: string; parsed: ParsedWrite } {
  const { className } = schema;
  const { objectId, createdAt, updatedAt, ...fields } = row;
  if (typeof objectId !== 'string' || !OBJECT_ID_PATTERN.test(objectId)) {
    throw new BdsError(ErrorCode.INVALID_KEY_NAME, 'objectId must be 1 to 64 letters, digits, "_" or "-".');
  }
  for (const [name, value] of [
    ['createdAt', createdAt],
    ['updatedAt', updatedAt],
  ] as const) {
    if (typeof value !== 'string' || !ISO_DATE_PATTERN.test(value) || Number.isNaN(Date.parse(value))) {
      throw incorrectType(`${name} must be a date in ISO 8601 form, in UTC.`);
    }
  }
  // Relation fields hold no value in a row: their members are restored by restoreRelation.
  for (const [name, def] of Object.entries(schema.fields)) if (def.type === 'Relation') delete fields[name];
  const parsed = parseWriteBody(fields, 'create', schema.fields);
  const missing = [...parsed.types.keys()];
  if (missing.length > 0) throw incorrectType(`${className} has no field ${missing[0]} in its schema.`);
  if (parsed.relations.length > 0 || parsed.writes.some((w) => w.kind !== 'set')) {
    throw incorrectType('A restored row holds values, not operations.');
  }
  for (const [column, value] of Object.entries(internal ?? {})) {
    if (!(RESTORABLE_INTERNAL[className] ?? []).includes(column)) {
      throw new BdsError(ErrorCode.INVALID_KEY_NAME, `${className} has no internal column ${column}.`);
    }
    if (value !== null && typeof value !== 'string') {
      throw incorrectType(`The internal column ${column} holds text.`);
    }
  }
  return { objectId, createdAt: createdAt as string, updatedAt: updatedAt as string, parsed };
}
