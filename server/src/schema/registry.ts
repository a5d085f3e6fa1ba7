import { isIndexName, isObject } from '@bds/client/protocol';
import { z } from 'zod';
import { BdsError, ErrorCode, incorrectType } from '../kernel/errors.ts';
import { classNameProblem, fieldNameProblem, isValidClassName } from '../kernel/names.ts';
import {
  CLP_OPERATIONS,
  type ClassSchema,
  DEFAULT_FIELDS,
  defaultClassLevelPermissions,
  type FieldDef,
  MASTER_ONLY_CLASSES,
  SCHEMA_FIELD_TYPES,
  SYSTEM_CLASS_FIELDS,
} from '../kernel/schema.ts';
import { parseInput } from '../kernel/validate.ts';
import type { SchemaChange, SchemaStorage, TransactionControl } from '../storage/adapter.ts';
import { describeType, normaliseValue, sameType, typeMismatch, typeOfValue } from './values.ts';

const CLP_OPERATION_KEYS = new Set<string>(CLP_OPERATIONS);
/** The CLP's lists of pointer fields that grant reads and writes (not operations). */
const USER_FIELD_KEYS = ['readUserFields', 'writeUserFields'] as const;
const CLP_KEYS = new Set<string>([...CLP_OPERATIONS, 'protectedFields', ...USER_FIELD_KEYS]);

export function classNotFound(className: string): BdsError {
  return new BdsError(ErrorCode.INVALID_CLASS_NAME, `Class ${className} does not exist.`);
}

/**
 * Whether GET /schemas lists a class: the app's classes and the built-in ones its SDKs use (`_User`,
 * `_Role`, `_Session`, `_Installation`) always; the service's own master-only classes (`_Hooks`,
 * `_Idempotency`, `_JobSchedule`, `_JobStatus`, `_PushStatus`, ...) only while they hold rows
 * (`holdsRows`, asked only for those), as the incumbent lists a class once something is stored in it.
 */
export async function listedClass(className: string, holdsRows: () => Promise<boolean>): Promise<boolean> {
  return !MASTER_ONLY_CLASSES.has(className) || (await holdsRows());
}

/** The order in which classes are listed (GET /schemas, the export). */
export const byClassName = (a: ClassSchema, b: ClassSchema): number => a.className.localeCompare(b.className);

export function checkClassName(className: string): void {
  const problem = classNameProblem(className);
  if (problem) {
    throw new BdsError(
      ErrorCode.INVALID_CLASS_NAME,
      `Invalid class name: ${JSON.stringify(className)}. ${problem}`,
    );
  }
}

/**
 * Class schemas: kept in memory and checked here; the write pipeline (data/) stores a change and
 * then records it with `set`/`remove`. Whenever the store rolls back (a failed write, a failed
 * batch transaction around a class creation), the memory copy is reloaded so it matches the store.
 */
export class SchemaRegistry {
  private cache = new Map<string, ClassSchema>();

  constructor(private readonly store: SchemaStorage & TransactionControl) {
    store.onRollback(() => this.reload());
  }

  private async reload(): Promise<void> {
    this.cache = new Map((await this.store.loadSchemas()).map((s) => [s.className, s]));
  }

  /** Reads the stored schemas (the store's migrations have created the built-in classes). */
  async load(): Promise<void> {
    await this.reload();
  }

  get(className: string): ClassSchema | undefined {
    return this.cache.get(className);
  }

  readonly lookup = (className: string): ClassSchema | undefined => this.cache.get(className);

  all(): ClassSchema[] {
    return [...this.cache.values()].sort(byClassName);
  }

  /** After the pipeline stored a class's schema: the cache holds it too. */
  set(schema: ClassSchema): void {
    this.cache.set(schema.className, schema);
  }

  /** After the pipeline dropped a class. */
  remove(className: string): void {
    this.cache.delete(className);
  }

  /**
   * What a write needs of the schema: `className` with the given fields. Answers the schema to
   * write with and what to change in the store (`create` for a new class, `null` when nothing
   * is missing). A field that exists with another type is a 111.
   */
  planFields(
    className: string,
    wanted: Map<string, FieldDef>,
    permission: { createClass: boolean },
  ): { schema: ClassSchema; change: SchemaChange | 'create' | null } {
    const existing = this.cache.get(className);
    if (!existing) {
      if (!permission.createClass) {
        throw new BdsError(
          ErrorCode.OPERATION_FORBIDDEN,
          `This user is not allowed to access non-existent class: ${className}`,
        );
      }
      checkClassName(className);
      const fields: Record<string, FieldDef> = { ...DEFAULT_FIELDS };
      for (const [name, def] of wanted) fields[name] = def;
      return {
        schema: { className, fields, classLevelPermissions: defaultClassLevelPermissions(), indexes: {} },
        change: 'create',
      };
    }
    const added: Array<[string, FieldDef]> = [];
    for (const [name, def] of wanted) {
      const current = existing.fields[name];
      if (!current) added.push([name, def]);
      else if (!sameType(current, def)) throw typeMismatch(className, name, current, def);
    }
    if (added.length === 0) return { schema: existing, change: null };
    return {
      schema: { ...existing, fields: { ...existing.fields, ...Object.fromEntries(added) } },
      change: { addFields: added, deleteFields: [], addIndexes: [], dropIndexes: [] },
    };
  }

  /** POST /schemas/<C>: the new class's schema. */
  planCreate(className: string, doc: Record<string, unknown>): ClassSchema {
    checkClassName(className);
    checkDocumentClassName(className, doc);
    if (this.cache.has(className)) {
      throw new BdsError(ErrorCode.INVALID_CLASS_NAME, `Class ${className} already exists.`);
    }
    const fields: Record<string, FieldDef> = { ...DEFAULT_FIELDS };
    const requested = parseFieldChanges(className, doc.fields, false);
    for (const [name, def] of requested.add) fields[name] = def;
    const clp =
      doc.classLevelPermissions === undefined
        ? defaultClassLevelPermissions()
        : parseClp(className, doc.classLevelPermissions);
    const schema: ClassSchema = { className, fields, classLevelPermissions: clp, indexes: {} };
    const indexes = parseIndexChanges(doc.indexes, schema, new Set());
    schema.indexes = Object.fromEntries(indexes.add);
    return schema;
  }

  /** PUT /schemas/<C>: the changed schema and what to change in the store. */
  planUpdate(className: string, doc: Record<string, unknown>): { schema: ClassSchema; change: SchemaChange } {
    checkDocumentClassName(className, doc);
    const existing = this.cache.get(className);
    if (!existing) throw classNotFound(className);
    const requested = parseFieldChanges(className, doc.fields, true);
    const fields = { ...existing.fields };
    const change: SchemaChange = { addFields: [], deleteFields: [], addIndexes: [], dropIndexes: [] };
    for (const name of requested.remove) {
      const def = fields[name];
      if (!def)
        throw new BdsError(
          ErrorCode.INVALID_SCHEMA_OPERATION,
          `Field ${name} does not exist, cannot delete.`,
        );
      if (SYSTEM_CLASS_FIELDS[className]?.[name]) {
        throw new BdsError(
          ErrorCode.INVALID_SCHEMA_OPERATION,
          `Field ${name} is built in and cannot be deleted.`,
        );
      }
      change.deleteFields.push([name, def]);
      delete fields[name];
    }
    for (const [name, def] of requested.add) {
      if (fields[name])
        throw new BdsError(ErrorCode.INVALID_SCHEMA_OPERATION, `Field ${name} exists, cannot update.`);
      change.addFields.push([name, def]);
      fields[name] = def;
    }
    const clp =
      doc.classLevelPermissions === undefined
        ? existing.classLevelPermissions
        : parseClp(className, doc.classLevelPermissions);
    const schema: ClassSchema = {
      ...existing,
      fields,
      classLevelPermissions: clp,
      indexes: { ...existing.indexes },
    };
    // Indexes on deleted fields go with them.
    for (const [name, keys] of Object.entries(schema.indexes)) {
      if (Object.keys(keys).some((f) => !fields[f])) {
        change.dropIndexes.push(name);
        delete schema.indexes[name];
      }
    }
    const indexes = parseIndexChanges(doc.indexes, schema, new Set(Object.keys(schema.indexes)));
    for (const name of indexes.remove) {
      change.dropIndexes.push(name);
      delete schema.indexes[name];
    }
    for (const [name, keys] of indexes.add) {
      change.addIndexes.push([name, keys]);
      schema.indexes[name] = keys;
    }
    return { schema, change };
  }

  /** DELETE /schemas/<C>: only an empty, non-built-in class; answers the schema to drop (if any). */
  planDelete(className: string, rowCount: number): ClassSchema | undefined {
    const schema = this.cache.get(className);
    if (!schema) return undefined;
    if (SYSTEM_CLASS_FIELDS[className]) {
      throw new BdsError(
        ErrorCode.INVALID_SCHEMA_OPERATION,
        `Class ${className} is built in and cannot be deleted.`,
      );
    }
    if (rowCount > 0) {
      throw new BdsError(
        ErrorCode.INVALID_SCHEMA_OPERATION,
        `Class ${className} is not empty, contains ${rowCount} objects, cannot drop schema.`,
      );
    }
    return schema;
  }
}

/** The schema document as the API shows it. */
export function schemaDocument(schema: ClassSchema): Record<string, unknown> {
  const fields: Record<string, FieldDef> = {};
  for (const [name, def] of Object.entries(schema.fields)) {
    const doc: FieldDef = def.targetClass
      ? { type: def.type, targetClass: def.targetClass }
      : def.dimension
        ? { type: def.type, dimension: def.dimension }
        : { type: def.type };
    if (def.required) doc.required = true;
    if (def.defaultValue !== undefined) doc.defaultValue = def.defaultValue;
    fields[name] = doc;
  }
  return {
    className: schema.className,
    fields,
    classLevelPermissions: schema.classLevelPermissions,
    indexes: { _id_: { _id: 1 }, ...schema.indexes },
  };
}

function checkDocumentClassName(className: string, doc: Record<string, unknown>): void {
  if (doc.className !== undefined && doc.className !== className) {
    throw new BdsError(
      ErrorCode.INVALID_CLASS_NAME,
      `Class name mismatch between ${String(doc.className)} and ${className}.`,
    );
  }
}

/** Shapes of the schema document (POST/PUT /schemas), checked with zod; names and what exists are checked in code. */
const fieldsDocument = z.record(z.string(), z.unknown(), {
  error: 'fields must be an object of name -> {type}.',
});
const indexesDocument = z.record(z.string(), z.unknown(), {
  error: 'indexes must be an object of name -> {field: 1}.',
});
const clpDocument = z.record(z.string(), z.unknown(), { error: 'classLevelPermissions must be an object.' });

const isDeleteOp = (spec: unknown): boolean => isObject(spec) && spec.__op === 'Delete';

/** A field's definition names a type (answered with 107 when it does not). */
const fieldTyped = (name: string) => {
  const error = `Field ${name} needs {"type": <type>}.`;
  return z.looseObject({ type: z.string({ error }) }, { error });
};

const POINTER_TYPES = ['Pointer', 'Relation'] as const;
const PLAIN_TYPES = SCHEMA_FIELD_TYPES.filter(
  (t) => t !== 'Vector' && !(POINTER_TYPES as readonly string[]).includes(t),
) as [FieldDef['type'], ...FieldDef['type'][]];

/** What each type needs beside its name (answered with 111): the definition as stored. */
const fieldDefinition = (name: string): z.ZodType<FieldDef> => {
  // `required` and `defaultValue` (checked against the type by fieldOptions) on every type but Relation.
  const options = {
    required: z.optional(z.boolean({ error: `Field ${name}: required must be true or false.` })),
    defaultValue: z.optional(z.unknown()),
  };
  const target = (type: (typeof POINTER_TYPES)[number]) => {
    const error = `Field ${name} of type ${type} needs a targetClass that is a valid class name.`;
    return z.string({ error }).refine(isValidClassName, { error });
  };
  const error = `Field ${name} of type Vector needs a dimension between 1 and 4096.`;
  return z.discriminatedUnion(
    'type',
    [
      z.object({ type: z.literal('Pointer'), targetClass: target('Pointer'), ...options }),
      z.object({ type: z.literal('Relation'), targetClass: target('Relation') }),
      z.object({
        type: z.literal('Vector'),
        dimension: z.int({ error }).min(1, { error }).max(4096, { error }),
      }),
      z.object({ type: z.enum(PLAIN_TYPES), ...options }),
    ],
    { error: (iss) => `Invalid field type: ${String((iss.input as { type?: unknown } | undefined)?.type)}.` },
  );
};

/**
 * `required` and `defaultValue` as the schema keeps them: a default in the wire form of the field's
 * type (a Date may be given as its ISO text), 111 otherwise, in the incumbent's words; neither on a
 * Relation (or a Vector). `required: false` is not kept.
 */
function fieldOptions(className: string, name: string, spec: unknown, def: FieldDef): FieldDef {
  const given = spec as { required?: unknown; defaultValue?: unknown };
  const out: FieldDef = { ...def };
  delete out.required;
  delete out.defaultValue;
  const shown = describeType(def);
  if (def.type === 'Relation' || def.type === 'Vector') {
    if (given.defaultValue !== undefined) {
      throw incorrectType(`The 'default value' option is not applicable for ${shown}`);
    }
    if (given.required !== undefined)
      throw incorrectType(`The 'required' option is not applicable for ${shown}`);
    return out;
  }
  if (def.required) out.required = true;
  if (def.defaultValue === undefined || def.defaultValue === null) return out;
  let value = def.defaultValue;
  if (def.type === 'Date' && typeof value === 'string') value = { __type: 'Date', iso: value };
  const normalised = normaliseValue(value, name);
  const got = typeOfValue(normalised, name);
  if (!sameType(def, got)) {
    throw incorrectType(
      `schema mismatch for ${className}.${name} default value; expected ${shown} but got ${describeType(got)}`,
    );
  }
  out.defaultValue = normalised;
  return out;
}

function parseFieldChanges(
  className: string,
  raw: unknown,
  allowDelete: boolean,
): { add: Array<[string, FieldDef]>; remove: string[] } {
  const add: Array<[string, FieldDef]> = [];
  const remove: string[] = [];
  if (raw === undefined) return { add, remove };
  parseInput(fieldsDocument, raw, ErrorCode.INVALID_JSON);
  for (const [name, spec] of Object.entries(raw as Record<string, unknown>)) {
    const problem = fieldNameProblem(name);
    if (problem) throw new BdsError(ErrorCode.INVALID_KEY_NAME, `Invalid field name: ${name} (${problem}).`);
    if (name in DEFAULT_FIELDS) {
      throw new BdsError(ErrorCode.INVALID_KEY_NAME, `Field ${name} is built in and cannot be changed.`);
    }
    if (isDeleteOp(spec)) {
      if (!allowDelete)
        throw new BdsError(ErrorCode.INVALID_JSON, `Field ${name} cannot be deleted from a new class.`);
      remove.push(name);
      continue;
    }
    parseInput(fieldTyped(name), spec, ErrorCode.INVALID_JSON);
    add.push([
      name,
      fieldOptions(className, name, spec, parseInput(fieldDefinition(name), spec, ErrorCode.INCORRECT_TYPE)),
    ]);
  }
  return { add, remove };
}

/** An index's keys: fields of the class that can be indexed, each 1 or -1, at least one. */
const indexKeys = (name: string, schema: ClassSchema) => {
  const error = `Index ${name} needs {field: 1 or -1}.`;
  return z
    .record(
      z.string().refine(
        (field) => {
          const def = schema.fields[field];
          return def !== undefined && def.type !== 'Relation' && def.type !== 'ACL';
        },
        { error: (iss) => `Field ${String(iss.input)} does not exist, cannot add index ${name}.` },
      ),
      z.literal([1, -1], {
        error: (iss) => `Index ${name}: direction of ${String(iss.path?.[0])} must be 1 or -1.`,
      }),
      { error },
    )
    .refine((keys) => Object.keys(keys).length > 0, { error });
};

function parseIndexChanges(
  raw: unknown,
  schema: ClassSchema,
  existing: Set<string>,
): { add: Array<[string, Record<string, 1 | -1>]>; remove: string[] } {
  const add: Array<[string, Record<string, 1 | -1>]> = [];
  const remove: string[] = [];
  if (raw === undefined) return { add, remove };
  parseInput(indexesDocument, raw, ErrorCode.INVALID_JSON);
  for (const [name, spec] of Object.entries(raw as Record<string, unknown>)) {
    if (!isIndexName(name)) {
      throw new BdsError(ErrorCode.INVALID_SCHEMA_OPERATION, `Invalid index name: ${name}.`);
    }
    if (isDeleteOp(spec)) {
      if (!existing.has(name)) {
        throw new BdsError(
          ErrorCode.INVALID_SCHEMA_OPERATION,
          `Index ${name} does not exist, cannot delete.`,
        );
      }
      remove.push(name);
      continue;
    }
    if (existing.has(name))
      throw new BdsError(ErrorCode.INVALID_SCHEMA_OPERATION, `Index ${name} exists, cannot update.`);
    add.push([name, parseInput(indexKeys(name, schema), spec, ErrorCode.INVALID_SCHEMA_OPERATION)]);
  }
  return { add, remove };
}

const fieldList = (error: z.core.$ZodErrorMap | string) => z.array(z.string({ error }), { error });

/** What each key of classLevelPermissions holds (its name is checked first). */
const clpEntry = (key: string) => {
  if (key === 'readUserFields' || key === 'writeUserFields') {
    return fieldList(`${key} must be an array of field names.`);
  }
  const error = `classLevelPermissions.${key} must be an object.`;
  if (key === 'protectedFields') {
    return z.record(
      z.string(),
      fieldList((iss) => `protectedFields.${String(iss.path?.[0])} must be an array of field names.`),
      { error },
    );
  }
  return z.record(z.string(), z.unknown(), { error });
};

/** What a principal of an operation's entry holds: `true`, or for pointerFields a list of fields. */
const principalEntry = (key: string, principal: string) =>
  principal === 'pointerFields'
    ? fieldList(`${key}.pointerFields must be an array of field names.`)
    : z.literal(true, { error: `${key}.${principal} must be true.` });

const isPrincipal = (principal: string): boolean =>
  principal === 'requiresAuthentication' ||
  principal === 'pointerFields' ||
  principal === '*' ||
  principal.startsWith('role:') ||
  /^[A-Za-z0-9]+$/.test(principal);

/**
 * classLevelPermissions as a save stores them: every path that sets them plans through here (POST
 * and PUT /schemas, the console through the bff, an import, an impact draft). The shape is checked,
 * then the document is made whole, failing closed as the incumbent reads a stored CLP: an operation
 * it does not name is stored `{}` (master key only), and a missing protectedFields protects what the
 * class's default protects (`_User` email, `_Installation` deviceToken), for any other class nothing
 * (`{}`). What each entry means is enforced by access/.
 */
export function parseClp(className: string, raw: unknown): Record<string, unknown> {
  const given = checkClp(raw);
  const clp: Record<string, unknown> = {};
  for (const op of CLP_OPERATIONS) clp[op] = given[op] ?? {};
  clp.protectedFields = given.protectedFields ?? defaultProtectedFields(className);
  for (const key of USER_FIELD_KEYS) if (given[key] !== undefined) clp[key] = given[key];
  return clp;
}

/** The protectedFields groups of a class's default CLP, when they protect any field; `{}` otherwise. */
function defaultProtectedFields(className: string): Record<string, unknown> {
  const groups = defaultClassLevelPermissions(className).protectedFields as Record<string, string[]>;
  return Object.values(groups).some((fields) => fields.length > 0) ? groups : {};
}

/** Shape check of classLevelPermissions: the keys it names and what each holds. */
function checkClp(raw: unknown): Record<string, unknown> {
  parseInput(clpDocument, raw, ErrorCode.INVALID_JSON);
  const clp: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw as Record<string, unknown>)) {
    if (!CLP_KEYS.has(key)) {
      throw new BdsError(
        ErrorCode.INVALID_JSON,
        `${key} is not a valid operation for class level permissions.`,
      );
    }
    parseInput(clpEntry(key), value, ErrorCode.INVALID_JSON);
    if (CLP_OPERATION_KEYS.has(key)) {
      for (const [principal, v] of Object.entries(value as Record<string, unknown>)) {
        if (!isPrincipal(principal))
          throw new BdsError(ErrorCode.INVALID_JSON, `${principal} is not a valid principal in ${key}.`);
        parseInput(principalEntry(key, principal), v, ErrorCode.INVALID_JSON);
      }
    }
    clp[key] = value;
  }
  return clp;
}
