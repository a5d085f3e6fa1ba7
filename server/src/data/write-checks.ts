import type { Caller } from '../kernel/caller.ts';
import { BdsError, ErrorCode } from '../kernel/errors.ts';
import type { ClassSchema } from '../kernel/schema.ts';
import { classVerdict, denial } from './authorize.ts';
import { checkRoleName } from './builtin-rules.ts';
import type { Core } from './core.ts';
import { type ParsedWrite, parseWriteBody } from './write-body.ts';

/**
 * The validate step of a create (data/pipeline.ts): the body against the class's schema as it
 * stands, the built-in classes' rules, and addField when the body adds fields. Runs on the body the
 * caller sent and again on the body the before-triggers answered.
 */
export function validateCreate(core: Core, caller: Caller, className: string, body: unknown): ParsedWrite {
  const schema = core.schemas.get(className);
  const parsed = parseWriteBody(body, 'create', schema?.fields ?? {});
  if (className === '_Role') {
    const name = parsed.writes.find((w) => w.field === 'name' && w.kind === 'set');
    checkRoleName(name && name.kind === 'set' ? name.value : undefined);
  }
  checkAddField(core, caller, schema, parsed);
  checkAccountFields(className, parsed);
  return parsed;
}

/** The validate step of an update (before and after the before-triggers, as for a create). */
export function validateUpdate(
  core: Core,
  caller: Caller,
  className: string,
  schema: ClassSchema,
  body: unknown,
): ParsedWrite {
  const parsed = parseWriteBody(body, 'update', schema.fields, className);
  checkAddField(core, caller, schema, parsed);
  checkAccountFields(className, parsed);
  return parsed;
}

/** A non-master write that adds fields to an existing class needs CLP addField. */
function checkAddField(
  core: Core,
  caller: Caller,
  schema: ClassSchema | undefined,
  parsed: ParsedWrite,
): void {
  if (caller.isMaster || !schema || parsed.types.size === 0) return;
  const verdict = classVerdict(core, caller, schema.className, 'addField');
  if (!verdict.allowed) throw denial(verdict);
}

/** `password` and `sessionToken` are written by the account rules, never as plain fields. */
function checkAccountFields(className: string, parsed: ParsedWrite): void {
  if (
    className === '_User' &&
    parsed.writes.some((w) => w.field === 'password' || w.field === 'sessionToken')
  ) {
    throw new BdsError(ErrorCode.INVALID_KEY_NAME, 'password cannot be written through /classes/_User.');
  }
}
