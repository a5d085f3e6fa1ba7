import type { AutoIndexOptions } from '../../config/performance-options.ts';
import type { GroupStage, VectorSearch } from '../../kernel/aggregate.ts';
import type { Clock } from '../../kernel/clock.ts';
import type { Logger } from '../../kernel/log.ts';
import type { QueryNode } from '../../kernel/query.ts';
import type { Row } from '../../kernel/records.ts';
import type { ClassSchema } from '../../kernel/schema.ts';
import type {
  FindSpec,
  HeldRole,
  InsertSpec,
  RelationMember,
  SchemaChange,
  SchemaLookup,
  StorageAdapter,
  StoredConfig,
  StoredFile,
  StoredVersion,
  UpdateSpec,
  VersionFilter,
  VersionStamp,
} from '../adapter.ts';
import { SqlAggregates } from './aggregate.ts';
import { AutoIndexes } from './auto-index.ts';
import { SqlConfigTable } from './config-table.ts';
import type { SqlDriver } from './driver.ts';
import { SqlFileBlobs } from './files.ts';
import { SqlHistory } from './history.ts';
import { SqlInternalRows } from './internal-rows.ts';
import { SqlRelations } from './relations.ts';
import { type CacheableDriver, type ChangeFeed, RowCache } from './row-cache.ts';
import { SqlRowReads } from './row-reads.ts';
import { SqlRowWrites } from './row-writes.ts';
import { SqlSchemaTables } from './schema-tables.ts';
import { VectorIndexes } from './vector-index.ts';

/**
 * The storage adapter for SQL engines: one part per role of StorageAdapter (schema-tables.ts,
 * row-reads.ts, row-writes.ts, internal-rows.ts, relations.ts, config-table.ts, files.ts,
 * aggregate.ts), all building their SQL on store-part.ts; engine differences live in the dialect.
 */
export class SqlStore implements StorageAdapter {
  readonly kind: string;

  private readonly schemas: SqlSchemaTables;
  private readonly reads: SqlRowReads;
  private readonly writes: SqlRowWrites;
  private readonly internal: SqlInternalRows;
  private readonly relations: SqlRelations;
  private readonly config: SqlConfigTable;
  private readonly blobs: SqlFileBlobs;
  private readonly aggregates: SqlAggregates;
  private readonly history: SqlHistory;
  /** Query shapes and the indexes the service builds itself (storage/sql/auto-index.ts). */
  readonly performance: AutoIndexes | undefined;

  /**
   * `rowCacheBytes`: memory for rows read by id, on a driver that can keep such a cache exact (0: none).
   * `autoIndex`: the bounds of automatic indexes, with the clock of their windows.
   */
  constructor(
    private readonly driver: SqlDriver,
    options: { rowCacheBytes?: number; autoIndex?: AutoIndexOptions; clock?: Clock; log?: Logger } = {},
  ) {
    this.kind = driver.dialect.name;
    const cacheable = driver as Partial<CacheableDriver> & { rowChanges?: ChangeFeed };
    // Rows read by id, kept in memory (see RowCache): exact on the embedded store by its driver's
    // checks, on a shared store by its feed of committed changes.
    let rowCache: RowCache | undefined;
    if (options.rowCacheBytes && cacheable.hasUncommittedWrites && cacheable.changedElsewhere)
      rowCache = new RowCache(driver as SqlDriver & CacheableDriver, options.rowCacheBytes);
    else if (options.rowCacheBytes && cacheable.rowChanges)
      rowCache = new RowCache(cacheable.rowChanges.localChecks, options.rowCacheBytes, cacheable.rowChanges);
    const vectors = new VectorIndexes();
    this.schemas = new SqlSchemaTables(driver, vectors, rowCache);
    this.reads = new SqlRowReads(driver, rowCache);
    this.history = new SqlHistory(driver);
    this.writes = new SqlRowWrites(driver, vectors, rowCache, this.history);
    this.internal = new SqlInternalRows(driver);
    this.relations = new SqlRelations(driver);
    this.config = new SqlConfigTable(driver);
    this.blobs = new SqlFileBlobs(driver);
    this.aggregates = new SqlAggregates(driver, vectors);
    this.performance =
      options.autoIndex && options.clock
        ? new AutoIndexes(driver, options.autoIndex, options.clock, options.log)
        : undefined;
    // What a rolled-back write did to the vector indexes is unknown: they reload on the next search.
    driver.onRollback(async () => vectors.drop());
  }

  /** Creates the store's own tables (schemas, config, ACL counts, row history) when they do not exist yet. */
  async init(): Promise<void> {
    await this.schemas.init();
    await this.history.init();
  }

  upgradeClass(schema: ClassSchema): Promise<void> {
    return this.schemas.upgradeClass(schema);
  }

  tablesChangedElsewhere(): void {
    this.schemas.tablesChangedElsewhere();
  }

  loadSchemas(): Promise<ClassSchema[]> {
    return this.schemas.loadSchemas();
  }

  createClass(schema: ClassSchema): Promise<void> {
    return this.schemas.createClass(schema);
  }

  async changeSchema(schema: ClassSchema, change: SchemaChange): Promise<void> {
    if (change.deleteFields.length)
      await this.performance?.fieldsDeleted(
        schema.className,
        change.deleteFields.map(([name]) => name),
      );
    return this.schemas.changeSchema(schema, change);
  }

  async deleteClass(schema: ClassSchema): Promise<void> {
    await this.schemas.deleteClass(schema);
    this.performance?.classDeleted(schema.className);
  }

  ensureUniqueIndex(className: string, field: string): Promise<void> {
    return this.schemas.ensureUniqueIndex(className, field);
  }

  insert(schema: ClassSchema, spec: InsertSpec): Promise<Row> {
    return this.writes.insert(schema, spec);
  }

  update(schema: ClassSchema, spec: UpdateSpec): Promise<{ before: Row; after: Row } | null> {
    return this.writes.update(schema, spec);
  }

  delete(
    schema: ClassSchema,
    objectId: string,
    condition?: QueryNode,
    history?: VersionStamp,
  ): Promise<Row | null> {
    return this.writes.delete(schema, objectId, condition, history);
  }

  versions(filter: VersionFilter): Promise<StoredVersion[]> {
    return this.history.versions(filter);
  }

  version(id: string): Promise<StoredVersion | undefined> {
    return this.history.version(id);
  }

  versionAt(className: string, objectId: string, time: string): Promise<StoredVersion | undefined> {
    return this.history.versionAt(className, objectId, time);
  }

  pruneHistory(bounds: { olderThan?: string; keepPerRow?: number }): Promise<number> {
    return this.history.pruneHistory(bounds);
  }

  purge(schema: ClassSchema): Promise<void> {
    return this.writes.purge(schema);
  }

  find(schema: ClassSchema, spec: FindSpec, lookup: SchemaLookup): Promise<Row[]> {
    if (!this.performance) return this.reads.find(schema, spec, lookup);
    return this.performance.observe(schema, spec, () => this.reads.find(schema, spec, lookup));
  }

  count(schema: ClassSchema, spec: Pick<FindSpec, 'where'>, lookup: SchemaLookup): Promise<number> {
    return this.reads.count(schema, spec, lookup);
  }

  estimateCount(schema: ClassSchema): Promise<number> {
    return this.reads.estimateCount(schema);
  }

  group(schema: ClassSchema, where: QueryNode, group: GroupStage, lookup: SchemaLookup): Promise<Row[]> {
    return this.aggregates.group(schema, where, group, lookup);
  }

  vectorSearch(schema: ClassSchema, search: VectorSearch, lookup: SchemaLookup) {
    return this.aggregates.vectorSearch(schema, search, lookup);
  }

  fileBegin(file: Omit<StoredFile, 'size' | 'etag'>): Promise<void> {
    return this.blobs.begin(file);
  }

  fileAppend(name: string, seq: number, bytes: Uint8Array): Promise<void> {
    return this.blobs.append(name, seq, bytes);
  }

  fileCommit(name: string, size: number, etag: string): Promise<void> {
    return this.blobs.commit(name, size, etag);
  }

  fileInfo(name: string): Promise<StoredFile | undefined> {
    return this.blobs.info(name);
  }

  fileChunk(name: string, seq: number): Promise<Uint8Array | undefined> {
    return this.blobs.chunk(name, seq);
  }

  fileDelete(name: string): Promise<boolean> {
    return this.blobs.delete(name);
  }

  fileList(after: string, limit: number): Promise<StoredFile[]> {
    return this.blobs.list(after, limit);
  }

  fileUpgrade(): Promise<void> {
    return this.blobs.upgrade();
  }

  ensureInternalColumns(
    className: string,
    columns: string[],
    uniqueIndexes: Record<string, string[]>,
  ): Promise<void> {
    return this.internal.ensureInternalColumns(className, columns, uniqueIndexes);
  }

  findInternal(
    className: string,
    column: string,
    value: unknown,
    columns: string[],
  ): Promise<Array<Record<string, unknown>>> {
    return this.internal.findInternal(className, column, value, columns);
  }

  findInternalByIds(
    className: string,
    objectIds: readonly string[],
    columns: string[],
  ): Promise<Array<Record<string, unknown>>> {
    return this.internal.findInternalByIds(className, objectIds, columns);
  }

  rolesOf(userId: string): Promise<HeldRole[]> {
    return this.relations.rolesOf(userId);
  }

  rolesContain(roleIds: string[], targetRoleId: string): Promise<boolean> {
    return this.relations.rolesContain(roleIds, targetRoleId);
  }

  relationMembers(
    className: string,
    field: string,
    after: RelationMember | null,
    limit: number,
  ): Promise<RelationMember[]> {
    return this.relations.relationMembers(className, field, after, limit);
  }

  getConfig(): Promise<StoredConfig> {
    return this.config.getConfig();
  }

  setConfig(config: StoredConfig): Promise<void> {
    return this.config.setConfig(config);
  }

  transaction<T>(fn: () => Promise<T>): Promise<T> {
    return this.driver.transaction(fn);
  }

  snapshot<T>(fn: () => Promise<T>): Promise<T> {
    return this.driver.snapshot(fn);
  }

  afterCommit(fn: () => void): void {
    this.driver.afterCommit(fn);
  }

  inTransaction(): boolean {
    return this.driver.inTransaction();
  }

  onRollback(listener: () => Promise<void>): void {
    this.driver.onRollback(listener);
  }

  close(): Promise<void> {
    this.performance?.close();
    return this.driver.close();
  }
}
