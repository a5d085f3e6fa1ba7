import type { Path, QueryNode } from '../query/ast.ts';
import type { ClassSchema, FieldType } from '../schema/types.ts';

/** A row as the service sees it: wire-form values keyed by field name. */
export type Row = Record<string, unknown>;

/** Principals a caller acts as (`*`, its user id, `role:<name>`); `null` means master (no ACL check). */
export type Principals = readonly string[] | null;

export interface OrderKey {
  path: Path;
  descending: boolean;
}

export interface FindSpec {
  where: QueryNode;
  order: OrderKey[];
  limit: number;
  skip: number;
  /** Who reads: rows whose ACL grants none of these principals are not returned. */
  readers: Principals;
}

export type SchemaLookup = (className: string) => ClassSchema | undefined;

/** One change to a field in an update; values are in wire form and already validated. */
export type FieldWrite =
  | { field: string; subPath: string[]; kind: 'set'; value: unknown; type: FieldType }
  | { field: string; subPath: string[]; kind: 'delete' }
  | { field: string; subPath: string[]; kind: 'increment'; amount: number }
  | { field: string; subPath: string[]; kind: 'add' | 'addUnique' | 'remove'; values: unknown[] };

export interface RelationChange {
  field: string;
  add: string[];
  remove: string[];
}

/** Access control list in stored form: principals allowed to read and to write. */
export interface StoredAcl {
  read: string[];
  write: string[];
}

export interface InsertSpec {
  objectId: string;
  createdAt: string;
  /** Field values in wire form (ops already reduced to values). */
  values: Record<string, { value: unknown; type: FieldType }>;
  acl: StoredAcl | null;
  relations: RelationChange[];
}

export interface UpdateSpec {
  objectId: string;
  updatedAt: string;
  writes: FieldWrite[];
  /** `undefined` leaves the ACL alone, `null` makes the row public. */
  acl?: StoredAcl | null;
  relations: RelationChange[];
  /** Who writes: the row must grant one of these principals write access. */
  writers: Principals;
  /** Fields whose new values the caller gets back (those changed by an operation). */
  returning: string[];
  /** Extra row condition the row must meet (pointer permissions, installation id); none when absent. */
  condition?: QueryNode;
}

export interface SchemaChange {
  addFields: Array<[string, { type: FieldType; targetClass?: string }]>;
  deleteFields: Array<[string, { type: FieldType; targetClass?: string }]>;
  addIndexes: Array<[string, Record<string, 1 | -1>]>;
  dropIndexes: string[];
}

export interface StoredConfig {
  params: Record<string, unknown>;
  masterKeyOnly: Record<string, boolean>;
}

/**
 * What the service needs from a store. The SQL stores share one implementation of it
 * (storage/sql/store.ts) and differ only by driver and dialect.
 */
export interface StorageAdapter {
  readonly kind: string;
  loadSchemas(): Promise<ClassSchema[]>;
  createClass(schema: ClassSchema): Promise<void>;
  /** Applies column and index changes and stores the new schema document, atomically. */
  changeSchema(schema: ClassSchema, change: SchemaChange): Promise<void>;
  deleteClass(schema: ClassSchema): Promise<void>;

  insert(schema: ClassSchema, spec: InsertSpec): Promise<void>;
  /** Returns the `returning` values, or `null` when the row does not exist or may not be written. */
  update(schema: ClassSchema, spec: UpdateSpec): Promise<Row | null>;
  /** `condition`: an extra row condition (pointer permissions); the row stays when it fails. */
  delete(schema: ClassSchema, objectId: string, writers: Principals, condition?: QueryNode): Promise<boolean>;
  purge(schema: ClassSchema): Promise<void>;

  find(schema: ClassSchema, spec: FindSpec, lookup: SchemaLookup): Promise<Row[]>;
  count(
    schema: ClassSchema,
    spec: Omit<FindSpec, 'order' | 'limit' | 'skip'>,
    lookup: SchemaLookup,
  ): Promise<number>;
  /** About how many rows the class holds, without counting them (cheap on any size); no ACL. */
  estimateCount(schema: ClassSchema): Promise<number>;
  /** Rows by id, for include; ACL-filtered like find. */
  getMany(schema: ClassSchema, ids: string[], readers: Principals): Promise<Row[]>;

  /**
   * Internal columns of a built-in class (password hashes, one-time tokens): not schema fields, so
   * reads never return them. Adds the missing columns and unique indexes; safe on every start.
   */
  ensureInternalColumns(
    className: string,
    columns: string[],
    uniqueIndexes: Record<string, string[]>,
  ): Promise<void>;
  /** `objectId` plus the raw values of `columns` for the rows whose `column` equals `value`. */
  findInternal(
    className: string,
    column: string,
    value: unknown,
    columns: string[],
  ): Promise<Array<Record<string, unknown>>>;
  /**
   * Sets columns of one row without touching updatedAt. With `expect`, only when those columns
   * still hold the given values (a compare-and-set, for single-use tokens). Answers whether it did.
   */
  writeInternal(
    className: string,
    objectId: string,
    values: Record<string, unknown>,
    expect?: Record<string, unknown>,
  ): Promise<boolean>;

  /** Names of the roles a user holds, directly or through roles held in other roles' `roles` (one recursive query). */
  roleNamesOf(userId: string): Promise<string[]>;
  /** True when `targetRoleId` is one of `roleIds` or is held, transitively, in their `roles` relations. */
  rolesContain(roleIds: string[], targetRoleId: string): Promise<boolean>;
  /** Creates a unique index on one column when it does not exist yet. */
  ensureUniqueIndex(className: string, field: string): Promise<void>;

  getConfig(): Promise<StoredConfig>;
  setConfig(config: StoredConfig): Promise<void>;

  /** Runs `fn` all-or-nothing; calls inside `fn` join the transaction (nesting uses savepoints). */
  transaction<T>(fn: () => Promise<T>): Promise<T>;
  /** Called (and awaited) after a transaction or savepoint rolls back. */
  onRollback(listener: () => Promise<void>): void;
  close(): Promise<void>;
}
