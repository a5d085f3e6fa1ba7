import {
  afterWrite,
  canRead,
  checkAddField,
  checkCreate,
  checkUpdate,
  guard,
  guardFind,
  hideProtected,
  needsTransaction,
  prepareCreateBody,
  readById,
  readIncluded,
  stripWriteResponse,
} from '../access/enforce.ts';
import { BdsError, ErrorCode, masterKeyRequired, notFound } from '../errors.ts';
import type { QueryNode } from '../query/ast.ts';
import { checkClassName } from '../schema/registry.ts';
import { type ClassSchema, MASTER_ONLY_CLASSES, SYSTEM_CLASS_FIELDS } from '../schema/types.ts';
import type { FieldWrite, Row } from '../storage/adapter.ts';
import { newObjectId } from '../util/ids.ts';
import { type Auth, principalsOf } from './auth.ts';
import type { Core } from './core.ts';
import { type ComplexityLimits, parseFindOptions, parseGetOptions } from './find-options.ts';
import { initialValues, parseWriteBody } from './write-body.ts';

type Operation = 'get' | 'find' | 'count' | 'create' | 'update' | 'delete';

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Built-in classes whose own rules (sign-up, sessions, roles) come with the users issue; until then only master writes them. */
const MANAGED_CLASSES = new Set(
  // _Role and _Installation follow their rules in access/ (CLP, role and installation rules).
  Object.keys(SYSTEM_CLASS_FIELDS).filter((c) => c !== '_Role' && c !== '_Installation'),
);

/** Classes whose writes (and, for _Session, reads) by non-master callers go through users/ only. */
const USER_MODULE_CLASSES = new Set(['_User', '_Session']);

/**
 * Passed by users/ (sign-up, sessions): marks the call as coming through its rules, and carries
 * what those rules add: a chosen objectId, internal columns (never returned), a row scope for finds.
 */
export interface InternalCall {
  objectId?: string;
  internal?: Record<string, string | number | null>;
  scope?: QueryNode;
}

/**
 * The one pipeline for record reads and writes. REST routes and batch both call it; nothing else
 * touches the store for records.
 */
export class Records {
  constructor(private readonly core: Core) {}

  limitsFor(auth: Auth): ComplexityLimits {
    return auth.isMaster ? {} : { ...this.core.options.requestComplexity, safeRegex: true };
  }

  private checkClassAccess(auth: Auth, className: string, op: Operation, internal?: InternalCall): void {
    checkClassName(className);
    if (auth.isMaster) return;
    if (MASTER_ONLY_CLASSES.has(className)) throw masterKeyRequired();
    if (internal && USER_MODULE_CLASSES.has(className)) {
      // users/ has applied the _User/_Session rules.
    } else if (
      className === '_Session' ||
      (MANAGED_CLASSES.has(className) && op !== 'get' && op !== 'find' && op !== 'count')
    ) {
      throw new BdsError(
        ErrorCode.OPERATION_FORBIDDEN,
        `Permission denied for action ${op} on class ${className}.`,
      );
    }
  }

  async create(
    auth: Auth,
    className: string,
    body: unknown,
    internal?: InternalCall,
  ): Promise<{ objectId: string; createdAt: string } & Row> {
    this.checkClassAccess(auth, className, 'create', internal);
    ({ auth } = await guard(this.core, auth, className, 'create'));
    body = prepareCreateBody(auth, className, body);
    const { schemas, store, options } = this.core;
    const schema = schemas.get(className);
    const parsed = parseWriteBody(body, 'create', schema?.fields ?? {});
    checkCreate(className, parsed);
    checkAddField(this.core, auth, schema, parsed);
    this.checkManagedFields(
      className,
      parsed.types,
      parsed.writes.map((w) => w.field),
    );
    const objectId = internal?.objectId ?? newObjectId();
    const createdAt = new Date().toISOString();
    const write = async () => {
      const target =
        schema && parsed.types.size === 0
          ? schema
          : await schemas.ensureFields(className, parsed.types, {
              createClass: auth.isMaster || options.allowClientClassCreation,
            });
      const { values, produced } = initialValues(parsed, target.fields);
      for (const [column, value] of Object.entries(internal?.internal ?? {}))
        values[column] = { value, type: 'String' };
      await store.insert(target, {
        objectId,
        createdAt,
        values,
        acl: parsed.acl ?? null,
        relations: parsed.relations,
      });
      return { objectId, createdAt, ...produced };
    };
    const created = await (schema && parsed.types.size === 0 && parsed.relations.length === 0
      ? write()
      : store.transaction(write));
    afterWrite(this.core, className);
    return stripWriteResponse(this.core, auth, className, created, parsed);
  }

  async update(
    auth: Auth,
    className: string,
    objectId: string,
    body: unknown,
    internal?: InternalCall,
  ): Promise<{ updatedAt: string } & Row> {
    this.checkClassAccess(auth, className, 'update', internal);
    const access = await guard(this.core, auth, className, 'update');
    auth = access.auth;
    const { schemas, store } = this.core;
    const schema = schemas.get(className);
    if (!schema) throw notFound();
    const parsed = parseWriteBody(body, 'update', schema.fields);
    checkAddField(this.core, auth, schema, parsed);
    this.checkManagedFields(
      className,
      parsed.types,
      parsed.writes.map((w) => w.field),
    );
    const updatedAt = new Date().toISOString();
    const returning = [
      ...new Set(
        parsed.writes
          .filter((w) => w.kind !== 'set' && w.kind !== 'delete' && w.subPath.length === 0)
          .map((w) => w.field),
      ),
    ];
    const write = async () => {
      await checkUpdate(this.core, className, objectId, parsed, body, access.condition);
      const target =
        parsed.types.size === 0
          ? schema
          : await schemas.ensureFields(className, parsed.types, { createClass: false });
      const result = await store.update(target, {
        objectId,
        updatedAt,
        writes: [...parsed.writes, ...internalWrites(internal)],
        acl: parsed.acl,
        relations: parsed.relations,
        writers: principalsOf(auth),
        returning,
        condition: access.condition,
      });
      if (!result) throw notFound();
      if (returning.length > 0 && !(await canRead(this.core, auth, target, objectId))) {
        for (const field of returning) delete result[field];
      }
      return { updatedAt, ...result };
    };
    const updated = await (parsed.types.size === 0 && !needsTransaction(className)
      ? write()
      : store.transaction(write));
    afterWrite(this.core, className);
    return stripWriteResponse(this.core, auth, className, updated);
  }

  async delete(auth: Auth, className: string, objectId: string, internal?: InternalCall): Promise<void> {
    this.checkClassAccess(auth, className, 'delete', internal);
    const access = await guard(this.core, auth, className, 'delete');
    const schema = this.core.schemas.get(className);
    if (!schema) throw notFound();
    const deleted = await this.core.store.delete(
      schema,
      objectId,
      principalsOf(access.auth),
      access.condition,
    );
    if (!deleted) throw notFound();
    afterWrite(this.core, className);
  }

  async find(
    auth: Auth,
    className: string,
    params: Record<string, unknown>,
    internal?: InternalCall,
  ): Promise<{ results: Row[]; count?: number }> {
    this.checkClassAccess(auth, className, 'find', internal);
    const { schemas, store, options } = this.core;
    const opts = parseFindOptions(params, this.limitsFor(auth), options.maxLimit);
    auth = await guardFind(this.core, auth, className, opts);
    if (internal?.scope) opts.where = { type: 'and', children: [opts.where, internal.scope] };
    const schema = schemas.get(className);
    if (!schema) return opts.count ? { results: [], count: 0 } : { results: [] };
    const readers = principalsOf(auth);
    const spec = { where: opts.where, order: opts.order, limit: opts.limit, skip: opts.skip, readers };
    const rows = opts.limit === 0 ? [] : await store.find(schema, spec, schemas.lookup);
    const results = await this.present(auth, schema, rows, opts);
    if (!opts.count) return { results };
    return { results, count: await store.count(schema, spec, schemas.lookup) };
  }

  async get(
    auth: Auth,
    className: string,
    objectId: string,
    params: Record<string, unknown>,
    internal?: InternalCall,
  ): Promise<Row> {
    this.checkClassAccess(auth, className, 'get', internal);
    const opts = parseGetOptions(params, this.limitsFor(auth));
    const access = await guard(this.core, auth, className, 'get');
    auth = access.auth;
    const schema = this.core.schemas.get(className);
    if (!schema) throw notFound();
    const rows = await readById(this.core, auth, schema, objectId, access.condition);
    if (rows.length === 0) throw notFound();
    return (await this.present(auth, schema, rows, opts))[0]!;
  }

  /** Until the users issue lands, passwords and session tokens cannot be written through the record API. */
  private checkManagedFields(className: string, _types: Map<string, unknown>, fields: string[]): void {
    if (className === '_User' && fields.some((f) => f === 'password' || f === 'sessionToken')) {
      throw new BdsError(ErrorCode.INVALID_KEY_NAME, 'password cannot be written through /classes/_User.');
    }
  }

  /** Includes, then projection (keys / excludeKeys). */
  private async present(
    auth: Auth,
    schema: ClassSchema,
    rows: Row[],
    opts: { keys: string[] | undefined; excludeKeys: string[]; include: string[] },
  ): Promise<Row[]> {
    let include = opts.include;
    if (include.includes('*')) {
      const pointers = Object.entries(schema.fields)
        .filter(([, def]) => def.type === 'Pointer')
        .map(([name]) => name);
      include = [...new Set([...include.filter((i) => i !== '*'), ...pointers])];
    }
    stripSecrets(auth, schema.className, rows);
    hideProtected(this.core, auth, schema, rows);
    if (include.length) await this.includePaths(auth, schema, rows, buildTree(include), opts.keys);
    return rows.map((row) => project(row, opts.keys, opts.excludeKeys));
  }

  private async includePaths(
    auth: Auth,
    schema: ClassSchema,
    rows: Row[],
    tree: IncludeTree,
    keys: string[] | undefined,
  ): Promise<void> {
    for (const [field, children] of tree) {
      const def = schema.fields[field];
      if (!def || (def.type !== 'Pointer' && def.type !== 'Array')) continue;
      const byClass = new Map<string, Set<string>>();
      for (const row of rows) {
        for (const p of pointersIn(row[field])) {
          let ids = byClass.get(p.className);
          if (!ids) {
            ids = new Set();
            byClass.set(p.className, ids);
          }
          ids.add(p.objectId);
        }
      }
      const subKeys = keys?.filter((k) => k.startsWith(`${field}.`)).map((k) => k.slice(field.length + 1));
      const found = new Map<string, Row>();
      for (const [className, ids] of byClass) {
        const target = this.core.schemas.get(className);
        if (!target || (!auth.isMaster && (MASTER_ONLY_CLASSES.has(className) || className === '_Session')))
          continue;
        // An included pointer is ACL-checked on its own: rows the caller may not read stay bare pointers.
        const objects = await readIncluded(this.core, auth, target, [...ids]);
        stripSecrets(auth, className, objects);
        hideProtected(this.core, auth, target, objects);
        if (children.size) await this.includePaths(auth, target, objects, children, subKeys);
        for (const obj of objects) {
          found.set(`${className}/${obj.objectId}`, {
            __type: 'Object',
            className,
            ...project(obj, subKeys?.length ? subKeys : undefined, []),
          });
        }
      }
      for (const row of rows) {
        const value = row[field];
        const swap = (v: unknown) =>
          isPointerValue(v) ? (found.get(`${v.className}/${v.objectId}`) ?? v) : v;
        if (Array.isArray(value)) row[field] = value.map(swap);
        else if (value !== undefined) row[field] = swap(value);
      }
    }
  }
}

function internalWrites(internal: InternalCall | undefined): FieldWrite[] {
  return Object.entries(internal?.internal ?? {}).map(([field, value]) =>
    value === null
      ? { field, subPath: [], kind: 'delete' }
      : { field, subPath: [], kind: 'set', value, type: 'String' },
  );
}

/** `password` is never readable; `authData` only by master. */
function stripSecrets(auth: Auth, className: string, rows: Row[]): void {
  if (className !== '_User') return;
  for (const row of rows) {
    delete row.password;
    if (!auth.isMaster) delete row.authData;
  }
}

type IncludeTree = Map<string, IncludeTree>;

function buildTree(paths: string[]): IncludeTree {
  const root: IncludeTree = new Map();
  for (const path of paths) {
    let node = root;
    for (const part of path.split('.')) {
      let next = node.get(part);
      if (!next) {
        next = new Map();
        node.set(part, next);
      }
      node = next;
    }
  }
  return root;
}

function isPointerValue(v: unknown): v is { className: string; objectId: string } {
  return (
    isObject(v) && v.__type === 'Pointer' && typeof v.className === 'string' && typeof v.objectId === 'string'
  );
}

function pointersIn(value: unknown): Array<{ className: string; objectId: string }> {
  if (isPointerValue(value)) return [value];
  if (Array.isArray(value)) return value.filter(isPointerValue);
  return [];
}

const ALWAYS_RETURNED = ['objectId', 'createdAt', 'updatedAt', 'ACL'];

/** keys / excludeKeys, with dotted keys reaching into Object fields and included objects. */
export function project(row: Row, keys: string[] | undefined, excludeKeys: string[]): Row {
  let out: Row = row;
  if (keys) {
    out = {};
    for (const k of ALWAYS_RETURNED) if (row[k] !== undefined) out[k] = row[k];
    if (row.__type !== undefined) {
      out.__type = row.__type;
      out.className = row.className;
    }
    for (const key of keys) {
      const [top, ...rest] = key.split('.') as [string, ...string[]];
      const value = row[top];
      if (value === undefined) continue;
      if (rest.length === 0) {
        out[top] = value;
      } else if (isObject(value) && value.__type === undefined) {
        out[top] = mergePick(out[top] as Row | undefined, value, rest);
      } else {
        // Included objects were already narrowed to their sub-keys; bare pointers pass as they are.
        out[top] = value;
      }
    }
  }
  if (excludeKeys.length) {
    out = { ...out };
    for (const key of excludeKeys) out = withoutPath(out, key.split('.'));
  }
  return out;
}

/** A copy of `row` without the value at `path`; objects along the way are copied, not changed. */
function withoutPath(row: Row, path: string[]): Row {
  const [head, ...rest] = path as [string, ...string[]];
  if (!(head in row)) return row;
  const out: Row = { ...row };
  if (rest.length === 0) delete out[head];
  else if (isObject(row[head])) out[head] = withoutPath(row[head] as Row, rest);
  return out;
}

function mergePick(target: Row | undefined, source: Record<string, unknown>, path: string[]): Row {
  const out: Row = target ?? {};
  const [head, ...rest] = path as [string, ...string[]];
  if (!(head in source)) return out;
  const value = source[head];
  if (rest.length === 0 || !isObject(value)) out[head] = value;
  else out[head] = mergePick(out[head] as Row | undefined, value, rest);
  return out;
}
