import { isObject, OBJECT_ID_PATTERN } from '@bds/client/protocol';
import { BdsError, ErrorCode, incorrectType } from '../kernel/errors.ts';
import { keyPathProblem } from '../kernel/names.ts';
import type { FieldWrite, RelationChange, StoredAcl } from '../kernel/records.ts';
import type { FieldDef, FieldType } from '../kernel/schema.ts';
import { checkVector, normaliseValue, typeOfValue } from '../schema/values.ts';

const RESERVED = new Set(['objectId', 'createdAt', 'updatedAt']);

/**
 * Who may choose the objectId of a create: the master key (an import that keeps its ids), and any
 * caller with the option allowCustomObjectId (the incumbent's option; SDKs then send `objectId`).
 */
export function mayChooseObjectId(isMaster: boolean, options: { allowCustomObjectId: boolean }): boolean {
  return isMaster || options.allowCustomObjectId;
}

/**
 * The objectId a create body chooses (when `mayChoose`: see mayChooseObjectId), and the body
 * without it. Other callers keep `objectId` in the body, where parseWriteBody refuses it (105).
 */
export function takeChosenObjectId(
  body: unknown,
  mayChoose: boolean,
): { body: unknown; objectId: string | undefined } {
  if (!mayChoose || !isObject(body) || !('objectId' in body)) return { body, objectId: undefined };
  const { objectId, ...rest } = body;
  if (objectId === undefined || objectId === null || objectId === '') {
    throw new BdsError(ErrorCode.MISSING_OBJECT_ID, 'objectId must not be empty, null or undefined');
  }
  if (typeof objectId !== 'string' || !OBJECT_ID_PATTERN.test(objectId)) {
    throw new BdsError(ErrorCode.INVALID_KEY_NAME, 'objectId must be 1 to 64 letters, digits, "_" or "-".');
  }
  return { body: rest, objectId };
}

/** A write body, checked and split into what the store applies. */
export interface ParsedWrite {
  /** Field types the body needs in the schema (new fields are created from these). */
  types: Map<string, FieldDef>;
  writes: FieldWrite[];
  relations: RelationChange[];
  /** `undefined`: no ACL in the body. */
  acl: StoredAcl | null | undefined;
  /** Fields a create filled with their schema default: the answer carries them, as the incumbent's. */
  defaulted?: string[];
}

/**
 * Parses a create or update body. Operations stay operations: the store applies them as SQL
 * expressions over the stored value, never as a read-modify-write here.
 */
export function parseWriteBody(
  body: unknown,
  mode: 'create' | 'update',
  schemaFields: Record<string, FieldDef>,
  className?: string,
): ParsedWrite {
  if (!isObject(body)) throw new BdsError(ErrorCode.INVALID_JSON, 'The request body must be a JSON object.');
  const parsed: ParsedWrite = { types: new Map(), writes: [], relations: [], acl: undefined };

  for (const [key, raw] of Object.entries(body)) {
    if (RESERVED.has(key)) throw new BdsError(ErrorCode.INVALID_KEY_NAME, `${key} is an invalid field name.`);
    if (key === 'ACL') {
      parsed.acl = parseAcl(raw);
      continue;
    }
    const [field, ...subPath] = key.split('.') as [string, ...string[]];
    const problem = keyPathProblem(key);
    if (problem) throw new BdsError(ErrorCode.INVALID_KEY_NAME, `Invalid field name: ${key} (${problem}).`);
    if (subPath.length > 0) {
      if (mode === 'create') throw new BdsError(ErrorCode.INVALID_KEY_NAME, `Invalid field name: ${key}.`);
      const def = schemaFields[field];
      if (!def) throw incorrectType(`${field} does not exist; it must be an Object field to set ${key}.`);
      // A key below a field that is not an Object writes an object there: the incumbent's text.
      if (def.type !== 'Object') {
        const where = className ? `${className}.${field}` : field;
        throw incorrectType(`schema mismatch for ${where}; expected ${def.type} but got Object`);
      }
    }
    const op = isObject(raw) && typeof raw.__op === 'string' ? raw : undefined;
    if (!op) {
      if (subPath.length > 0) {
        parsed.writes.push({ field, subPath, kind: 'set', value: normaliseValue(raw, key), type: 'Object' });
        continue;
      }
      const existing = schemaFields[field];
      if (raw === null) {
        if (existing?.type === 'Relation')
          throw incorrectType(`${field} is a Relation; change it with AddRelation or RemoveRelation.`);
        // A field the schema does not have holds nothing (and has no column): unsetting it is a no-op.
        if (mode === 'update' && existing) parsed.writes.push({ field, subPath, kind: 'delete' });
        continue;
      }
      if (existing?.type === 'Vector') {
        const vector = checkVector(raw, field, existing.dimension ?? 0);
        parsed.writes.push({ field, subPath, kind: 'set', value: vector, type: 'Vector' });
        continue;
      }
      const value = normaliseValue(raw, field);
      const def = typeOfValue(value, field);
      if (existing?.type === 'Relation' || def.type === 'Relation') {
        if (def.type === 'Relation' && (!existing || existing.targetClass === def.targetClass)) {
          needType(parsed, schemaFields, field, def); // declares the relation; it holds no value of its own
          continue;
        }
        throw incorrectType(
          `${field} is a Relation; change it with AddRelation or RemoveRelation, not by assigning a value.`,
        );
      }
      needType(parsed, schemaFields, field, def);
      parsed.writes.push({ field, subPath, kind: 'set', value, type: def.type });
      continue;
    }
    parseOperation(field, subPath, op, schemaFields, parsed);
  }
  applyFieldRules(body, mode, schemaFields, parsed);
  return parsed;
}

/** A value that leaves a field empty, for `required`: null, the empty string, or a Delete. */
const clears = (value: unknown) =>
  value === null || value === '' || (isObject(value) && value.__op === 'Delete');

/**
 * The schema's `required` and `defaultValue`, as the incumbent applies them. A create without a
 * field (or with a Delete of it) stores its default; a required field without a default that the
 * create leaves empty, or that an update clears, is 142 `<field> is required`. Every writer passes
 * here (REST, batch, cloud code, the console), and a before-trigger's body is checked again.
 */
function applyFieldRules(
  body: Record<string, unknown>,
  mode: 'create' | 'update',
  schemaFields: Record<string, FieldDef>,
  parsed: ParsedWrite,
): void {
  if (mode === 'update') {
    for (const [key, value] of Object.entries(body)) {
      if (Object.hasOwn(schemaFields, key) && schemaFields[key]!.required && clears(value)) {
        throw new BdsError(ErrorCode.VALIDATION_ERROR, `${key} is required`);
      }
    }
    return;
  }
  for (const [field, def] of Object.entries(schemaFields)) {
    if (!def.required && def.defaultValue === undefined) continue;
    const value = Object.hasOwn(body, field) ? body[field] : undefined;
    const absent = value === undefined || (isObject(value) && value.__op === 'Delete');
    if (absent && def.defaultValue !== undefined) {
      parsed.writes = parsed.writes.filter((w) => w.field !== field);
      parsed.writes.push({
        field,
        subPath: [],
        kind: 'set',
        value: structuredClone(def.defaultValue),
        type: def.type,
      });
      parsed.defaulted ??= [];
      parsed.defaulted.push(field);
      continue;
    }
    if (def.required && (absent || clears(value))) {
      throw new BdsError(ErrorCode.VALIDATION_ERROR, `${field} is required`);
    }
  }
}

/** Records the type a write needs for `field` (a 111 when the schema, or the body, says otherwise). */
function needType(
  parsed: ParsedWrite,
  schemaFields: Record<string, FieldDef>,
  field: string,
  def: FieldDef,
): void {
  const known = schemaFields[field] ?? parsed.types.get(field);
  if (known && (known.type !== def.type || (known.targetClass ?? null) !== (def.targetClass ?? null))) {
    throw incorrectType(
      `schema mismatch for ${field}; expected ${known.targetClass ? `${known.type}<${known.targetClass}>` : known.type} but got ${def.targetClass ? `${def.type}<${def.targetClass}>` : def.type}`,
    );
  }
  if (!schemaFields[field]) parsed.types.set(field, def);
}

function parseOperation(
  field: string,
  subPath: string[],
  op: Record<string, unknown>,
  schemaFields: Record<string, FieldDef>,
  parsed: ParsedWrite,
): void {
  const existing = schemaFields[field];
  const name = subPath.length > 0 ? `${field}.${subPath.join('.')}` : field;
  const inObject = subPath.length > 0;
  switch (op.__op) {
    case 'Increment': {
      const amount = op.amount;
      if (typeof amount !== 'number' || !Number.isFinite(amount)) {
        throw incorrectType(`Increment on ${name} needs a numeric amount.`);
      }
      if (!inObject) needType(parsed, schemaFields, field, { type: 'Number' });
      parsed.writes.push({ field, subPath, kind: 'increment', amount });
      return;
    }
    case 'Add':
    case 'AddUnique':
    case 'Remove': {
      if (!Array.isArray(op.objects)) throw incorrectType(`${op.__op} on ${name} needs an objects array.`);
      const values = op.objects.map((v) => normaliseValue(v, name));
      if (!inObject) {
        if (existing?.type === 'Relation') {
          throw incorrectType(`${field} is a Relation; use AddRelation or RemoveRelation.`);
        }
        needType(parsed, schemaFields, field, { type: 'Array' });
      }
      const kind = op.__op === 'Add' ? 'add' : op.__op === 'AddUnique' ? 'addUnique' : 'remove';
      parsed.writes.push({ field, subPath, kind, values });
      return;
    }
    case 'Delete':
      if (existing?.type === 'Relation') throw incorrectType(`${field} is a Relation; use RemoveRelation.`);
      if (existing) parsed.writes.push({ field, subPath, kind: 'delete' });
      return;
    case 'AddRelation':
    case 'RemoveRelation':
      if (inObject) throw incorrectType(`${op.__op} cannot reach into ${name}.`);
      relationOp(field, op, schemaFields, parsed);
      return;
    case 'Batch': {
      if (inObject || !Array.isArray(op.ops) || op.ops.length === 0) {
        throw incorrectType(`Batch on ${name} needs a non-empty ops array.`);
      }
      for (const inner of op.ops) {
        if (!isObject(inner) || (inner.__op !== 'AddRelation' && inner.__op !== 'RemoveRelation')) {
          throw incorrectType(`Batch on ${name} may only hold AddRelation and RemoveRelation.`);
        }
        relationOp(field, inner, schemaFields, parsed);
      }
      return;
    }
    default:
      throw incorrectType(`Unknown operation ${JSON.stringify(op.__op)} on ${name}.`);
  }
}

function relationOp(
  field: string,
  op: Record<string, unknown>,
  schemaFields: Record<string, FieldDef>,
  parsed: ParsedWrite,
): void {
  const existing = schemaFields[field];
  if (!Array.isArray(op.objects) || op.objects.length === 0) {
    throw incorrectType(`${op.__op} on ${field} needs a non-empty objects array of pointers.`);
  }
  const pointers = op.objects.map(
    (o) => normaliseValue(o, field) as { __type?: string; className: string; objectId: string },
  );
  const target = pointers[0]!.className;
  for (const p of pointers) {
    if (p?.__type !== 'Pointer')
      throw new BdsError(ErrorCode.INVALID_POINTER, `${op.__op} on ${field} takes pointers only.`);
    if (p.className !== target)
      throw incorrectType(`${op.__op} on ${field}: all pointers must be to one class.`);
  }
  if (existing && existing.type !== 'Relation') {
    throw incorrectType(
      `schema mismatch for ${field}; expected ${existing.type} but got Relation<${target}>`,
    );
  }
  needType(parsed, schemaFields, field, { type: 'Relation', targetClass: target });
  let change: RelationChange | undefined;
  for (const c of parsed.relations) if (c.field === field) change = c;
  if (!change) {
    change = { field, add: [], remove: [] };
    parsed.relations.push(change);
  }
  for (const p of pointers) (op.__op === 'AddRelation' ? change.add : change.remove).push(p.objectId);
}

const PRINCIPAL = /^(\*|role:[0-9A-Za-z_\- ]+|[A-Za-z0-9]+)$/;

/** Validates an ACL and converts it to its stored form; `null` and `undefined` entries are absent. */
export function parseAcl(raw: unknown): StoredAcl {
  if (!isObject(raw))
    throw new BdsError(ErrorCode.INVALID_ACL, 'ACL must be an object of principal -> {read, write}.');
  const acl: StoredAcl = { read: [], write: [] };
  for (const [principal, perms] of Object.entries(raw)) {
    if (!PRINCIPAL.test(principal))
      throw new BdsError(ErrorCode.INVALID_ACL, `Invalid ACL principal: ${principal}.`);
    if (perms === null || perms === undefined) continue;
    if (!isObject(perms))
      throw new BdsError(ErrorCode.INVALID_ACL, `ACL entry for ${principal} must be an object.`);
    for (const [k, v] of Object.entries(perms)) {
      if (k !== 'read' && k !== 'write')
        throw new BdsError(ErrorCode.INVALID_ACL, `Invalid ACL permission ${k} for ${principal}.`);
      if (typeof v !== 'boolean')
        throw new BdsError(ErrorCode.INVALID_ACL, `ACL ${k} for ${principal} must be a boolean.`);
    }
    if (perms.read === true) acl.read.push(principal);
    if (perms.write === true) acl.write.push(principal);
  }
  return acl;
}

/** Values the store should write on create: operations reduce to the value they produce from nothing. */
export function initialValues(
  parsed: ParsedWrite,
  schemaFields: Record<string, FieldDef>,
): {
  values: Record<string, { value: unknown; type: FieldType }>;
  produced: Record<string, unknown>;
} {
  const values: Record<string, { value: unknown; type: FieldType }> = {};
  const produced: Record<string, unknown> = {};
  for (const w of parsed.writes) {
    const type = (schemaFields[w.field] ?? parsed.types.get(w.field))?.type ?? 'Object';
    switch (w.kind) {
      case 'set':
        values[w.field] = { value: w.value, type: w.type };
        if (parsed.defaulted?.includes(w.field)) produced[w.field] = w.value;
        break;
      case 'delete':
        delete values[w.field];
        break;
      case 'increment': {
        const before = (values[w.field]?.value as number | undefined) ?? 0;
        values[w.field] = { value: before + w.amount, type };
        produced[w.field] = before + w.amount;
        break;
      }
      case 'add':
      case 'addUnique':
      case 'remove': {
        let arr = [...((values[w.field]?.value as unknown[] | undefined) ?? [])];
        if (w.kind === 'add') arr.push(...w.values);
        else if (w.kind === 'addUnique') {
          for (const v of w.values)
            if (!arr.some((a) => JSON.stringify(a) === JSON.stringify(v))) arr.push(v);
        } else {
          const drop = new Set(w.values.map((v) => JSON.stringify(v)));
          arr = arr.filter((a) => !drop.has(JSON.stringify(a)));
        }
        values[w.field] = { value: arr, type };
        produced[w.field] = arr;
        break;
      }
    }
  }
  return { values, produced };
}
