import type { GroupStage, VectorSearch } from '../kernel/aggregate.ts';
import type { QueryNode } from '../kernel/query.ts';
import type { FieldWrite, OrderKey, RelationChange, Row, StoredAcl } from '../kernel/records.ts';
import type { ClassSchema, FieldType } from '../kernel/schema.ts';
import type { QueryPerformance } from './performance.ts';

/**
 * The store knows nothing of callers or access: every access rule reaches it as part of the
 * query AST (`acl` nodes, pointer-permission conditions), compiled to SQL like any other condition.
 */
export interface FindSpec {
  where: QueryNode;
  order: OrderKey[];
  limit: number;
  skip: number;
}

export type SchemaLookup = (className: string) => ClassSchema | undefined;

/** Values of internal columns (not schema fields: password hashes, one-time tokens); `null` clears. */
export type InternalValues = Record<string, string | null>;

export interface InsertSpec {
  objectId: string;
  /** The version the write leaves in the row history, written with it (absent: none). */
  history?: VersionStamp;
  createdAt: string;
  /** Defaults to createdAt; a restored row (transfer/) keeps its own. */
  updatedAt?: string;
  /** Field values in wire form (ops already reduced to values). */
  values: Record<string, { value: unknown; type: FieldType }>;
  acl: StoredAcl | null;
  relations: RelationChange[];
  internal?: InternalValues;
}

export interface UpdateSpec {
  objectId: string;
  /** The version the write leaves in the row history, written with it (absent: none). */
  history?: VersionStamp;
  /** `null` leaves updatedAt as it is (a write of internal columns only). */
  updatedAt: string | null;
  writes: FieldWrite[];
  /** `undefined` leaves the ACL alone, `null` makes the row public. */
  acl?: StoredAcl | null;
  relations: RelationChange[];
  /** The row must also meet this condition (its ACL write grant, pointer permissions...). */
  condition?: QueryNode;
  internal?: InternalValues;
  /** Compare-and-set: only when these internal columns still hold these values (`null`: empty). */
  expectInternal?: InternalValues;
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

/** A role a user holds, and the role through which it holds it (`null`: a direct member). */
export interface HeldRole {
  name: string;
  via: string | null;
}

/** One member of a Relation field: the owning row and the related row. */
export interface RelationMember {
  owningId: string;
  relatedId: string;
}

/** What is kept of an uploaded file besides its bytes. */
export interface StoredFile {
  name: string;
  contentType: string;
  size: number;
  /** A strong validator: a hash of the bytes, quoted. */
  etag: string;
  createdAt: string;
  /** What the uploader described the file with (`@bds/client/protocol` fileDataProblem); `{}` when nothing. */
  metadata: Record<string, string>;
  tags: Record<string, string>;
}

/** The classes' tables and schema documents. */
export interface SchemaStorage {
  loadSchemas(): Promise<ClassSchema[]>;
  /** Another instance changed a class's table: what was prepared against the old one is dropped. */
  tablesChangedElsewhere(): void;
  createClass(schema: ClassSchema): Promise<void>;
  /** Applies column and index changes and stores the new schema document, atomically. */
  changeSchema(schema: ClassSchema, change: SchemaChange): Promise<void>;
  deleteClass(schema: ClassSchema): Promise<void>;
  /**
   * Brings the store's own bookkeeping for a class made by an earlier version up to date (its
   * ACL counts, its native geometry columns); a no-op for a current class. Part of the start-up
   * migrations.
   */
  upgradeClass(schema: ClassSchema): Promise<void>;
  /** Creates a unique index on one column when it does not exist yet. */
  ensureUniqueIndex(className: string, field: string): Promise<void>;
}

/** Reads of a class's rows: the query AST compiled to SQL. */
export interface RowReads {
  find(schema: ClassSchema, spec: FindSpec, lookup: SchemaLookup): Promise<Row[]>;
  count(schema: ClassSchema, spec: Pick<FindSpec, 'where'>, lookup: SchemaLookup): Promise<number>;
  /** About how many rows the class holds, without counting them (cheap on any size). */
  estimateCount(schema: ClassSchema): Promise<number>;

  /**
   * `$group` as one SQL GROUP BY over the rows matching `where` (keys: field paths; accumulators:
   * sum, avg, min, max, count). Answers `{objectId: <key>, ...accumulators}` rows.
   */
  group(schema: ClassSchema, where: QueryNode, group: GroupStage, lookup: SchemaLookup): Promise<Row[]>;
  /**
   * Exact top-k by similarity of `search.path` to `search.vector` over the rows matching
   * `search.filter`, best first. An engine with a vector index (pgvector) may use it.
   */
  vectorSearch(
    schema: ClassSchema,
    search: VectorSearch,
    lookup: SchemaLookup,
  ): Promise<Array<{ objectId: string; score: number }>>;
}

/**
 * Writes of a class's rows. Only the write pipeline (server/src/data) calls them; the store's own
 * start-up migrations aside.
 */
export interface RowWrites {
  /** Answers the row as stored. */
  insert(schema: ClassSchema, spec: InsertSpec): Promise<Row>;
  /** The row before and after, or `null` when it does not exist or fails the condition. */
  update(schema: ClassSchema, spec: UpdateSpec): Promise<{ before: Row; after: Row } | null>;
  /**
   * The deleted row, or `null` when it does not exist or fails the condition (it stays then).
   * `history`: the version the delete leaves in the row history, written with it.
   */
  delete(
    schema: ClassSchema,
    objectId: string,
    condition?: QueryNode,
    history?: VersionStamp,
  ): Promise<Row | null>;
  purge(schema: ClassSchema): Promise<void>;
}

/**
 * Internal columns of a built-in class (password hashes, one-time tokens, session internals): not
 * schema fields, so reads of rows never return them.
 */
export interface InternalRowStorage {
  /** Adds the missing columns and unique indexes; safe on every start. */
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

  /** Like findInternal, for the rows with any of `objectIds` (one query for a page of rows). */
  findInternalByIds(
    className: string,
    objectIds: readonly string[],
    columns: string[],
  ): Promise<Array<Record<string, unknown>>>;
}

/** Reads of Relation fields' members: roles held through roles, and relations page by page. */
export interface RelationStorage {
  /** The roles a user holds, directly or through roles held in other roles' `roles` (one recursive query). */
  rolesOf(userId: string): Promise<HeldRole[]>;
  /** True when `targetRoleId` is one of `roleIds` or is held, transitively, in their `roles` relations. */
  rolesContain(roleIds: string[], targetRoleId: string): Promise<boolean>;
  /**
   * Members of a class's Relation field in (owningId, relatedId) order, the page after the pair
   * `after` (`null`: from the start). The export (transfer/) streams relations with it.
   */
  relationMembers(
    className: string,
    field: string,
    after: RelationMember | null,
    limit: number,
  ): Promise<RelationMember[]>;
}

/** What a version of a row records besides the row itself (docs/protocol.md#row-history). */
export type VersionOp = 'create' | 'update' | 'delete' | 'revert' | 'restore';
export type VersionSource = 'rest' | 'batch' | 'console' | 'import' | 'cloud' | 'hook' | 'account' | 'system';
export type VersionCallerKind = 'master' | 'user' | 'anonymous' | 'console' | 'cloud' | 'hook' | 'system';

/**
 * Who made a write and how, as the row history keeps it; the store adds the row before and after
 * (as the write event carries them, less the `withheld` fields) and which fields changed.
 */
export interface VersionStamp {
  op: VersionOp;
  /** ISO 8601, UTC. */
  time: string;
  callerKind: VersionCallerKind;
  userId: string | null;
  /** The console user's name (console writes). */
  name: string | null;
  source: VersionSource;
  eventId: string | null;
  requestId: string | null;
  /** `revert`: the version reverted to. */
  revertOf: string | null;
  /** Fields never kept in a version (secrets), and how a kept field is reduced first. */
  withhold?: (row: Row) => Row;
}

/** A version as the store answers it. */
export interface StoredVersion {
  id: string;
  className: string;
  objectId: string;
  op: VersionOp;
  time: string;
  before: Row | null;
  after: Row | null;
  callerKind: VersionCallerKind;
  userId: string | null;
  name: string | null;
  source: VersionSource;
  eventId: string | null;
  requestId: string | null;
  revertOf: string | null;
}

/** Which versions of a class a listing answers, newest first. */
export interface VersionFilter {
  className: string;
  objectId?: string;
  /** Versions older than this one (a page's last id). */
  before?: string;
  /** The caller's user id or console name. */
  user?: string;
  /** Versions that changed this field. */
  field?: string;
  op?: VersionOp;
  /** ISO 8601 bounds, both included. */
  since?: string;
  until?: string;
  limit: number;
}

/** The versions of rows (docs/protocol.md#row-history): written by the row writes, read and pruned here. */
export interface HistoryStorage {
  versions(filter: VersionFilter): Promise<StoredVersion[]>;
  version(id: string): Promise<StoredVersion | undefined>;
  /** The newest version of the row at `time` or before it (ISO 8601). */
  versionAt(className: string, objectId: string, time: string): Promise<StoredVersion | undefined>;
  /**
   * Deletes the versions older than `olderThan` (ISO 8601) and, of each row, all but the newest
   * `keepPerRow`; a bound left out removes nothing. Answers how many it deleted.
   */
  pruneHistory(bounds: { olderThan?: string; keepPerRow?: number }): Promise<number>;
}

/** The app's stored config parameters. */
export interface ConfigStorage {
  getConfig(): Promise<StoredConfig>;
  setConfig(config: StoredConfig): Promise<void>;
}

/**
 * File bytes for the database file adapter: chunks in a table of their own, not rows of a class.
 * Only `data/files.ts` calls these. A file is invisible to `fileInfo`/`fileList` until committed.
 */
export interface FileStorage {
  fileBegin(file: Omit<StoredFile, 'size' | 'etag'>): Promise<void>;
  fileAppend(name: string, seq: number, bytes: Uint8Array): Promise<void>;
  fileCommit(name: string, size: number, etag: string): Promise<void>;
  fileInfo(name: string): Promise<StoredFile | undefined>;
  fileChunk(name: string, seq: number): Promise<Uint8Array | undefined>;
  /** Removes a file and its chunks, committed or not; whether a committed file was there. */
  fileDelete(name: string): Promise<boolean>;
  /** Committed files after `after` in name order. */
  fileList(after: string, limit: number): Promise<StoredFile[]>;
  /**
   * Brings a file table made by an earlier version up to date (its metadata and tags columns);
   * a no-op when the store has no file table yet or it is current. Part of the start-up migrations.
   */
  fileUpgrade(): Promise<void>;
}

/** Transactions, read snapshots and what runs when they end. */
export interface TransactionControl {
  /** Runs `fn` all-or-nothing; calls inside `fn` join the transaction (nesting uses savepoints). */
  transaction<T>(fn: () => Promise<T>): Promise<T>;
  /**
   * Runs `fn` with all its reads (same async context) on one consistent snapshot of the database,
   * as committed when it is called, without blocking writers (the export reads a whole app in it).
   * Writes inside `fn` are refused with SnapshotWriteError (storage/sql/driver.ts); a nested call
   * runs in the same snapshot; a call inside a transaction is refused.
   */
  snapshot<T>(fn: () => Promise<T>): Promise<T>;
  /** Runs `fn` after the current transaction commits (never if it rolls back); at once outside one. */
  afterCommit(fn: () => void): void;
  /** True while the calling async context runs inside a transaction (afterCommit would wait). */
  inTransaction(): boolean;
  /** Called (and awaited) after a transaction or savepoint rolls back. */
  onRollback(listener: () => Promise<void>): void;
}

/**
 * What the service needs from a store: every role above. The SQL stores share one implementation
 * of it (storage/sql/store.ts, with a file per role) and differ only by driver and dialect. A
 * caller that uses one role may take that role's interface instead.
 */
export interface StorageAdapter
  extends SchemaStorage,
    RowReads,
    RowWrites,
    InternalRowStorage,
    RelationStorage,
    ConfigStorage,
    FileStorage,
    HistoryStorage,
    TransactionControl {
  readonly kind: string;
  /** Query shapes and automatic indexes, for the Performance API (absent: the store records none). */
  readonly performance?: QueryPerformance;
  close(): Promise<void>;
}
