import { BdsError, ErrorCode, incorrectType } from '../errors.ts';
import type { SchemaChange, StorageAdapter } from '../storage/adapter.ts';
import {
  CLASS_NAME_PATTERN,
  CLP_OPERATIONS,
  type ClassSchema,
  DEFAULT_FIELDS,
  defaultClassLevelPermissions,
  FIELD_NAME_PATTERN,
  type FieldDef,
  isValidClassName,
  SYSTEM_CLASS_FIELDS,
  UNIQUE_SYSTEM_FIELDS,
} from './types.ts';
import { SCHEMA_FIELD_TYPES, sameType, typeMismatch } from './values.ts';

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const CLP_KEYS = new Set<string>([...CLP_OPERATIONS, 'protectedFields', 'readUserFields', 'writeUserFields']);

export function classNotFound(className: string): BdsError {
  return new BdsError(ErrorCode.INVALID_CLASS_NAME, `Class ${className} does not exist.`);
}

export function checkClassName(className: string): void {
  if (!isValidClassName(className)) {
    throw new BdsError(
      ErrorCode.INVALID_CLASS_NAME,
      `Invalid class name: ${JSON.stringify(className)}. Class names start with a letter and hold only letters, digits and _.`,
    );
  }
}

/**
 * Class schemas: kept in memory, written through to the store, and the only place that changes them.
 * Every change runs in a store transaction. Whenever the store rolls back (a failed write, a failed
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

  async load(): Promise<void> {
    await this.reload();
    for (const [className, fields] of Object.entries(SYSTEM_CLASS_FIELDS)) {
      if (this.cache.has(className)) continue;
      const schema: ClassSchema = {
        className,
        fields: { ...DEFAULT_FIELDS, ...fields },
        classLevelPermissions: defaultClassLevelPermissions(className),
        indexes: {},
      };
      await this.store.createClass(schema);
      this.cache.set(className, schema);
    }
    for (const [className, field] of UNIQUE_SYSTEM_FIELDS) {
      await this.store.ensureUniqueIndex(className, field);
    }
  }

  get(className: string): ClassSchema | undefined {
    return this.cache.get(className);
  }

  readonly lookup = (className: string): ClassSchema | undefined => this.cache.get(className);

  all(): ClassSchema[] {
    return [...this.cache.values()].sort((a, b) => a.className.localeCompare(b.className));
  }

  /**
   * Makes sure `className` exists with the given fields, creating what is missing. A field that
   * exists with another type is a 111. Must run inside the write's transaction.
   */
  async ensureFields(
    className: string,
    wanted: Map<string, FieldDef>,
    permission: { createClass: boolean },
  ): Promise<ClassSchema> {
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
      const schema: ClassSchema = {
        className,
        fields,
        classLevelPermissions: defaultClassLevelPermissions(),
        indexes: {},
      };
      await this.store.createClass(schema);
      this.cache.set(className, schema);
      return schema;
    }
    const added: Array<[string, FieldDef]> = [];
    for (const [name, def] of wanted) {
      const current = existing.fields[name];
      if (!current) added.push([name, def]);
      else if (!sameType(current, def)) throw typeMismatch(className, name, current, def);
    }
    if (added.length === 0) return existing;
    const schema: ClassSchema = { ...existing, fields: { ...existing.fields, ...Object.fromEntries(added) } };
    await this.store.changeSchema(schema, {
      addFields: added,
      deleteFields: [],
      addIndexes: [],
      dropIndexes: [],
    });
    this.cache.set(className, schema);
    return schema;
  }

  /** POST /schemas/<C> */
  async createFromDocument(className: string, doc: Record<string, unknown>): Promise<ClassSchema> {
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
    await this.store.createClass(schema);
    this.cache.set(className, schema);
    return schema;
  }

  /** PUT /schemas/<C> */
  async updateFromDocument(className: string, doc: Record<string, unknown>): Promise<ClassSchema> {
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
    await this.store.changeSchema(schema, change);
    this.cache.set(className, schema);
    return schema;
  }

  /** DELETE /schemas/<C>: only an empty, non-built-in class. */
  async deleteClass(className: string, rowCount: number): Promise<void> {
    const schema = this.cache.get(className);
    if (!schema) return;
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
    await this.store.deleteClass(schema);
    this.cache.delete(className);
  }
}

/** The schema document as the API shows it. */
export function schemaDocument(schema: ClassSchema): Record<string, unknown> {
  const fields: Record<string, FieldDef> = {};
  for (const [name, def] of Object.entries(schema.fields)) {
    fields[name] = def.targetClass ? { type: def.type, targetClass: def.targetClass } : { type: def.type };
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
    if (!FIELD_NAME_PATTERN.test(name))
      throw new BdsError(ErrorCode.INVALID_KEY_NAME, `Invalid field name: ${name}.`);
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
    if (!SCHEMA_FIELD_TYPES.includes(type)) throw incorrectType(`Invalid field type: ${spec.type}.`);
    if (type === 'Pointer' || type === 'Relation') {
      const target = spec.targetClass;
      if (typeof target !== 'string' || !isValidClassName(target)) {
        throw incorrectType(`Field ${name} of type ${type} needs a targetClass that is a valid class name.`);
      }
      add.push([name, { type, targetClass: target }]);
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

export { CLASS_NAME_PATTERN };
