import { isObject } from '@bds/client/protocol';
import { BdsError, ErrorCode, incorrectType } from '../kernel/errors.ts';
import { classNameProblem, fieldNameProblem, isValidClassName } from '../kernel/names.ts';
import {
  CLP_OPERATIONS,
  type ClassSchema,
  DEFAULT_FIELDS,
  defaultClassLevelPermissions,
  type FieldDef,
  SCHEMA_FIELD_TYPES,
  SYSTEM_CLASS_FIELDS,
} from '../kernel/schema.ts';
import type { SchemaChange, StorageAdapter } from '../storage/adapter.ts';
import { sameType, typeMismatch } from './values.ts';

const CLP_KEYS = new Set<string>([...CLP_OPERATIONS, 'protectedFields', 'readUserFields', 'writeUserFields']);

export function classNotFound(className: string): BdsError {
  return new BdsError(ErrorCode.INVALID_CLASS_NAME, `Class ${className} does not exist.`);
}

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

  constructor(private readonly store: StorageAdapter) {
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
    return [...this.cache.values()].sort((a, b) => a.className.localeCompare(b.className));
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
    const requested = parseFieldChanges(doc.fields, false);
    for (const [name, def] of requested.add) fields[name] = def;
    const clp =
      doc.classLevelPermissions === undefined
        ? defaultClassLevelPermissions()
        : parseClp(doc.classLevelPermissions);
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
    const requested = parseFieldChanges(doc.fields, true);
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
        : parseClp(doc.classLevelPermissions);
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
    fields[name] = def.targetClass
      ? { type: def.type, targetClass: def.targetClass }
      : def.dimension
        ? { type: def.type, dimension: def.dimension }
        : { type: def.type };
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

function parseFieldChanges(
  raw: unknown,
  allowDelete: boolean,
): { add: Array<[string, FieldDef]>; remove: string[] } {
  const add: Array<[string, FieldDef]> = [];
  const remove: string[] = [];
  if (raw === undefined) return { add, remove };
  if (!isObject(raw))
    throw new BdsError(ErrorCode.INVALID_JSON, 'fields must be an object of name -> {type}.');
  for (const [name, spec] of Object.entries(raw)) {
    const problem = fieldNameProblem(name);
    if (problem) throw new BdsError(ErrorCode.INVALID_KEY_NAME, `Invalid field name: ${name} (${problem}).`);
    if (name in DEFAULT_FIELDS) {
      throw new BdsError(ErrorCode.INVALID_KEY_NAME, `Field ${name} is built in and cannot be changed.`);
    }
    if (isObject(spec) && spec.__op === 'Delete') {
      if (!allowDelete)
        throw new BdsError(ErrorCode.INVALID_JSON, `Field ${name} cannot be deleted from a new class.`);
      remove.push(name);
      continue;
    }
    if (!isObject(spec) || typeof spec.type !== 'string') {
      throw new BdsError(ErrorCode.INVALID_JSON, `Field ${name} needs {"type": <type>}.`);
    }
    const type = spec.type as FieldDef['type'];
    if (!(SCHEMA_FIELD_TYPES as readonly string[]).includes(type))
      throw incorrectType(`Invalid field type: ${spec.type}.`);
    if (type === 'Pointer' || type === 'Relation') {
      const target = spec.targetClass;
      if (typeof target !== 'string' || !isValidClassName(target)) {
        throw incorrectType(`Field ${name} of type ${type} needs a targetClass that is a valid class name.`);
      }
      add.push([name, { type, targetClass: target }]);
    } else if (type === 'Vector') {
      const dimension = spec.dimension;
      if (
        typeof dimension !== 'number' ||
        !Number.isInteger(dimension) ||
        dimension < 1 ||
        dimension > 4096
      ) {
        throw incorrectType(`Field ${name} of type Vector needs a dimension between 1 and 4096.`);
      }
      add.push([name, { type, dimension }]);
    } else {
      add.push([name, { type }]);
    }
  }
  return { add, remove };
}

function parseIndexChanges(
  raw: unknown,
  schema: ClassSchema,
  existing: Set<string>,
): { add: Array<[string, Record<string, 1 | -1>]>; remove: string[] } {
  const add: Array<[string, Record<string, 1 | -1>]> = [];
  const remove: string[] = [];
  if (raw === undefined) return { add, remove };
  if (!isObject(raw))
    throw new BdsError(ErrorCode.INVALID_JSON, 'indexes must be an object of name -> {field: 1}.');
  for (const [name, spec] of Object.entries(raw)) {
    if (!/^[A-Za-z0-9_]+$/.test(name) || name === '_id_') {
      throw new BdsError(ErrorCode.INVALID_SCHEMA_OPERATION, `Invalid index name: ${name}.`);
    }
    if (isObject(spec) && spec.__op === 'Delete') {
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
    if (!isObject(spec) || Object.keys(spec).length === 0) {
      throw new BdsError(ErrorCode.INVALID_SCHEMA_OPERATION, `Index ${name} needs {field: 1 or -1}.`);
    }
    const keys: Record<string, 1 | -1> = {};
    for (const [field, dir] of Object.entries(spec)) {
      const def = schema.fields[field];
      if (!def || def.type === 'Relation' || def.type === 'ACL') {
        throw new BdsError(
          ErrorCode.INVALID_SCHEMA_OPERATION,
          `Field ${field} does not exist, cannot add index ${name}.`,
        );
      }
      if (dir !== 1 && dir !== -1) {
        throw new BdsError(
          ErrorCode.INVALID_SCHEMA_OPERATION,
          `Index ${name}: direction of ${field} must be 1 or -1.`,
        );
      }
      keys[field] = dir;
    }
    add.push([name, keys]);
  }
  return { add, remove };
}

/** Shape check of classLevelPermissions; what each entry means is enforced by access/. */
export function parseClp(raw: unknown): Record<string, unknown> {
  if (!isObject(raw)) throw new BdsError(ErrorCode.INVALID_JSON, 'classLevelPermissions must be an object.');
  const clp: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) {
    if (!CLP_KEYS.has(key)) {
      throw new BdsError(
        ErrorCode.INVALID_JSON,
        `${key} is not a valid operation for class level permissions.`,
      );
    }
    if (key === 'readUserFields' || key === 'writeUserFields') {
      if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) {
        throw new BdsError(ErrorCode.INVALID_JSON, `${key} must be an array of field names.`);
      }
    } else if (!isObject(value)) {
      throw new BdsError(ErrorCode.INVALID_JSON, `classLevelPermissions.${key} must be an object.`);
    } else if (key === 'protectedFields') {
      for (const [pattern, fields] of Object.entries(value)) {
        if (!Array.isArray(fields) || !fields.every((f) => typeof f === 'string')) {
          throw new BdsError(
            ErrorCode.INVALID_JSON,
            `protectedFields.${pattern} must be an array of field names.`,
          );
        }
      }
    } else {
      for (const [principal, v] of Object.entries(value)) {
        const ok =
          principal === 'requiresAuthentication' ||
          principal === 'pointerFields' ||
          principal === '*' ||
          principal.startsWith('role:') ||
          /^[A-Za-z0-9]+$/.test(principal);
        if (!ok)
          throw new BdsError(ErrorCode.INVALID_JSON, `${principal} is not a valid principal in ${key}.`);
        if (principal === 'pointerFields') {
          if (!Array.isArray(v) || !v.every((f) => typeof f === 'string')) {
            throw new BdsError(
              ErrorCode.INVALID_JSON,
              `${key}.pointerFields must be an array of field names.`,
            );
          }
        } else if (v !== true) {
          throw new BdsError(ErrorCode.INVALID_JSON, `${key}.${principal} must be true.`);
        }
      }
    }
    clp[key] = value;
  }
  return clp;
}
