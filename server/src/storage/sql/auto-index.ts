import type { AutoIndexOptions } from '../../config/performance-options.ts';
import type { Clock } from '../../kernel/clock.ts';
import { BdsError, ErrorCode } from '../../kernel/errors.ts';
import type { Logger } from '../../kernel/log.ts';
import type { ClassSchema } from '../../kernel/schema.ts';
import type { FindSpec } from '../adapter.ts';
import type { AutoIndexReport, IndexKey, QueryPerformance, ShapeReport } from '../performance.ts';
import type { SqlDriver } from './driver.ts';
import { indexName, tableName } from './names.ts';
import { indexKeysFor, type QueryShape, queryShape, shapeFields, shapeKey } from './query-shape.ts';

interface ShapeStats {
  key: string;
  shape: QueryShape;
  /** The schema the last find of the shape used. */
  schema: ClassSchema;
  count: number;
  totalMs: number;
  maxMs: number;
  /** Clock times of the last sightings (at most minSightings). */
  recent: number[];
  lastSeen: number;
  index: string | null;
  waiting?: string;
}

interface AutoIndex extends AutoIndexReport {
  builtAtMs: number;
  lastUsedMs: number;
  /** PostgreSQL: the index's scans when last looked at. */
  scans?: number;
  afterCount: number;
  afterMs: number;
}

/** Shapes kept in the report; the least recently seen goes when it is full. */
const MAX_SHAPES = 500;
const AUTO_MARK = ':auto:';

const keyText = (keys: IndexKey[]) => keys.map((k) => (k.descending ? `-${k.field}` : k.field)).join('+');

/**
 * Records the shapes of finds, and builds (and drops) the indexes that serve the ones that scan
 * (docs/protocol.md#performance). Automatic indexes are not in the class's schema: the schema
 * lists what a master declared, and the where compiler's SQL for a Date range depends on it
 * (storage/sql/where-operands.ts), which an index the service adds on its own must not change.
 */
export class AutoIndexes implements QueryPerformance {
  private readonly shapes = new Map<string, ShapeStats>();
  private readonly indexes = new Map<string, AutoIndex>();
  private timer: unknown;
  private running: Promise<void> | undefined;
  private readonly postgres: boolean;

  constructor(
    private readonly driver: SqlDriver,
    private readonly options: AutoIndexOptions,
    private readonly clock: Clock,
    private readonly log?: Logger,
  ) {
    this.postgres = driver.dialect.name === 'postgres';
  }

  /** Finds the automatic indexes already in the store, and starts the rounds of decisions. */
  async start(): Promise<void> {
    const sql = this.postgres
      ? `SELECT indexname AS name, tablename AS tbl FROM pg_indexes WHERE schemaname = current_schema() AND indexname LIKE '%${AUTO_MARK}%'`
      : `SELECT name, tbl_name AS tbl FROM sqlite_master WHERE type = 'index' AND name LIKE '%${AUTO_MARK}%'`;
    const now = this.clock.now();
    for (const row of await this.driver.all(sql, [])) {
      const name = String(row.name);
      const at = name.indexOf(AUTO_MARK);
      const className = name.slice(0, at);
      const keys = name
        .slice(at + AUTO_MARK.length)
        .split('+')
        .map((k) => ({ field: k.replace(/^-/, ''), descending: k.startsWith('-') }));
      this.indexes.set(name, {
        name,
        className,
        keys: /^[\w+-]+$/.test(name.slice(at + AUTO_MARK.length)) ? keys : [],
        origin: 'automatic',
        builtAtMs: now,
        lastUsedMs: now,
        afterCount: 0,
        afterMs: 0,
      });
    }
    this.schedule();
  }

  private schedule(): void {
    this.timer = this.clock.setTimeout(() => {
      this.tick()
        .catch((err: unknown) => this.log?.warn({ err: String(err) }, 'automatic indexes: a round failed'))
        .finally(() => {
          if (this.timer !== undefined) this.schedule();
        });
    }, this.options.checkIntervalMs);
  }

  close(): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Runs a find and records its shape and time (the one hook in the read path: SqlStore.find). */
  async observe<T>(schema: ClassSchema, spec: FindSpec, find: () => Promise<T>): Promise<T> {
    // Built-in classes have the indexes their rules need; a read by id is the primary key's.
    if (schema.className.startsWith('_')) return find();
    const shape = queryShape(schema, spec.where, spec.order);
    if (!shape) return find();
    const started = performance.now();
    const result = await find();
    this.record(schema, shape, performance.now() - started);
    return result;
  }

  private record(schema: ClassSchema, shape: QueryShape, ms: number): void {
    const key = shapeKey(shape);
    let stats = this.shapes.get(key);
    const now = this.clock.now();
    if (!stats) {
      if (this.shapes.size >= MAX_SHAPES) this.evictOldest();
      stats = { key, shape, schema, count: 0, totalMs: 0, maxMs: 0, recent: [], lastSeen: now, index: null };
      this.shapes.set(key, stats);
    }
    stats.schema = schema;
    stats.count += 1;
    stats.totalMs += ms;
    stats.maxMs = Math.max(stats.maxMs, ms);
    stats.lastSeen = now;
    stats.recent.push(now);
    if (stats.recent.length > this.options.minSightings) stats.recent.shift();
    stats.index = this.servingIndex(schema, shape);
    const auto = stats.index ? this.indexes.get(stats.index) : undefined;
    if (auto) {
      // The embedded store has no statistics of index use: a find of a shape it serves is one.
      if (!this.postgres) auto.lastUsedMs = now;
      if (auto.shape === key) {
        auto.afterCount += 1;
        auto.afterMs += ms;
      }
    }
  }

  private evictOldest(): void {
    let oldest: ShapeStats | undefined;
    for (const s of this.shapes.values()) if (!oldest || s.lastSeen < oldest.lastSeen) oldest = s;
    if (oldest) this.shapes.delete(oldest.key);
  }

  /** The index whose leading keys serve the most of the shape, or null when none serves any. */
  private servingIndex(schema: ClassSchema, shape: QueryShape): string | null {
    const candidates: Array<[string, IndexKey[]]> = [
      [indexName(schema.className, 'createdAt'), [{ field: 'createdAt', descending: false }]],
      [indexName(schema.className, 'updatedAt'), [{ field: 'updatedAt', descending: false }]],
    ];
    for (const [name, keys] of Object.entries(schema.indexes))
      candidates.push([
        indexName(schema.className, name),
        Object.entries(keys).map(([field, dir]) => ({ field, descending: dir === -1 })),
      ]);
    for (const index of this.indexes.values())
      if (index.className === schema.className) candidates.push([index.name, index.keys]);
    let best: string | null = null;
    let bestScore = 0;
    for (const [name, keys] of candidates) {
      const score = servedKeys(shape, keys);
      if (score > bestScore) {
        best = name;
        bestScore = score;
      }
    }
    return best;
  }

  report(): { shapes: ShapeReport[]; indexes: AutoIndexReport[] } {
    const shapes = [...this.shapes.values()]
      .sort((a, b) => b.totalMs - a.totalMs)
      .map(
        (s): ShapeReport => ({
          shape: s.key,
          className: s.shape.className,
          equality: s.shape.equality,
          range: s.shape.range,
          sort: s.shape.sort,
          count: s.count,
          totalMs: roundMs(s.totalMs),
          meanMs: roundMs(s.totalMs / s.count),
          maxMs: roundMs(s.maxMs),
          lastSeenAt: new Date(s.lastSeen).toISOString(),
          index: s.index,
          ...(s.index === null && s.waiting ? { waiting: s.waiting } : {}),
        }),
      );
    const indexes = [...this.indexes.values()].map((i) => this.indexReport(i));
    return { shapes, indexes };
  }

  private indexReport(i: AutoIndex): AutoIndexReport {
    const { builtAtMs: _b, lastUsedMs, scans: _s, afterCount, afterMs, effect, ...rest } = i;
    return {
      ...rest,
      lastUsedAt: new Date(lastUsedMs).toISOString(),
      ...(effect
        ? {
            effect: {
              ...effect,
              afterCount,
              ...(afterCount ? { afterMs: roundMs(afterMs / afterCount) } : {}),
            },
          }
        : {}),
    };
  }

  tick(): Promise<void> {
    // One round at a time: the timer's and a test's (or the API's) never overlap.
    const round = (this.running ?? Promise.resolve()).then(() => this.round());
    this.running = round.catch(() => undefined);
    return round;
  }

  private async round(): Promise<void> {
    await this.dropUnused();
    if (!this.options.enabled) return;
    const now = this.clock.now();
    for (const stats of this.shapes.values()) {
      if (stats.index !== null) continue;
      const recent = stats.recent.filter((t) => now - t <= this.options.windowMs).length;
      if (recent < this.options.minSightings) {
        stats.waiting = `seen ${recent} of ${this.options.minSightings} times within ${this.options.windowMs} ms`;
        continue;
      }
      const refused = this.refusal(stats) ?? (await this.tooFewRows(stats));
      if (refused) {
        stats.waiting = refused;
        continue;
      }
      try {
        await this.buildFor(stats, 'automatic');
      } catch (err) {
        stats.waiting = `building failed: ${err instanceof Error ? err.message : String(err)}`;
        this.log?.warn({ shape: stats.key, err: stats.waiting }, 'automatic index not built');
      }
    }
  }

  /** Why the shape's fields or class may not get an index, else undefined (the per-class bound too). */
  private refusal(stats: ShapeStats): string | undefined {
    const { schema, shape } = stats;
    // Never a field some caller may not query: a protected field (for any viewer) of the class.
    const hidden = new Set(Object.values(schema.classLevelPermissions.protectedFields ?? {}).flat());
    const bad = shapeFields(shape).find((f) => hidden.has(f));
    if (bad) return `${bad} is a protected field`;
    const count = [...this.indexes.values()].filter((i) => i.className === shape.className).length;
    if (count >= this.options.maxPerClass)
      return `${shape.className} has ${count} automatic indexes (maxPerClass ${this.options.maxPerClass})`;
    return undefined;
  }

  private async tooFewRows(stats: ShapeStats): Promise<string | undefined> {
    const table = tableName(stats.shape.className);
    const row = await this.driver.get(this.driver.dialect.estimatedRowCount(table), []);
    const rows = Number(row?.n ?? 0);
    return rows < this.options.minRows
      ? `${rows} rows, fewer than minRows ${this.options.minRows}`
      : undefined;
  }

  async build(shape: string): Promise<AutoIndexReport> {
    const stats = this.shapes.get(shape);
    if (!stats) throw new BdsError(ErrorCode.OBJECT_NOT_FOUND, `No query shape ${shape} was seen.`);
    if (stats.index !== null)
      throw new BdsError(ErrorCode.INVALID_QUERY, `The query shape ${shape} is served by ${stats.index}.`);
    const refused = this.refusal(stats);
    if (refused) throw new BdsError(ErrorCode.OPERATION_FORBIDDEN, `No index for ${shape}: ${refused}.`);
    return this.indexReport(await this.buildFor(stats, 'requested'));
  }

  private async buildFor(stats: ShapeStats, origin: AutoIndex['origin']): Promise<AutoIndex> {
    const keys = indexKeysFor(stats.shape);
    const { className } = stats.shape;
    const name = indexName(className, `auto:${keyText(keys)}`);
    const columns = keys.map((k) => `${this.q(k.field)} ${k.descending ? 'DESC' : 'ASC'}`).join(', ');
    const table = this.q(tableName(className));
    const started = performance.now();
    if (this.postgres) {
      // CONCURRENTLY: writes go on while it builds; it must run outside a transaction, and a
      // failed build leaves an invalid index behind, dropped here.
      try {
        await this.driver.exec(
          `CREATE INDEX CONCURRENTLY IF NOT EXISTS ${this.q(name)} ON ${table} (${columns})`,
        );
      } catch (err) {
        await this.driver.exec(`DROP INDEX CONCURRENTLY IF EXISTS ${this.q(name)}`).catch(() => undefined);
        throw err;
      }
    } else {
      // SQLite builds under the write lock: writes wait for it (measured in docs/protocol.md#performance).
      await this.driver.exec(`CREATE INDEX IF NOT EXISTS ${this.q(name)} ON ${table} (${columns})`);
    }
    const now = this.clock.now();
    const index: AutoIndex = {
      name,
      className,
      keys,
      origin,
      shape: stats.key,
      builtAt: new Date(now).toISOString(),
      buildMs: roundMs(performance.now() - started),
      builtAtMs: now,
      lastUsedMs: now,
      effect: { beforeMs: roundMs(stats.totalMs / stats.count), beforeCount: stats.count, afterCount: 0 },
      afterCount: 0,
      afterMs: 0,
    };
    this.indexes.set(name, index);
    stats.index = name;
    stats.waiting = undefined;
    this.log?.info({ index: name, buildMs: index.buildMs }, 'automatic index built');
    return index;
  }

  async drop(name: string): Promise<void> {
    if (!this.indexes.has(name))
      throw new BdsError(ErrorCode.OBJECT_NOT_FOUND, `No automatic index is named ${name}.`);
    await this.dropIndex(name);
  }

  private async dropIndex(name: string): Promise<void> {
    await this.driver.exec(`DROP INDEX ${this.postgres ? 'CONCURRENTLY ' : ''}IF EXISTS ${this.q(name)}`);
    this.forget(name);
  }

  private forget(name: string): void {
    this.indexes.delete(name);
    // The sightings before the drop do not count again: the shape must be seen anew to get it back.
    for (const s of this.shapes.values())
      if (s.index === name) {
        s.index = null;
        s.recent = [];
      }
  }

  /** Drops the automatic indexes no find used for dropUnusedAfterMs. */
  private async dropUnused(): Promise<void> {
    if (this.indexes.size === 0) return;
    const now = this.clock.now();
    if (this.postgres) {
      const rows = await this.driver.all(
        `SELECT indexrelname AS name, idx_scan AS n FROM pg_stat_user_indexes WHERE schemaname = current_schema() AND indexrelname LIKE '%${AUTO_MARK}%'`,
        [],
      );
      for (const row of rows) {
        const index = this.indexes.get(String(row.name));
        const scans = Number(row.n ?? 0);
        if (!index) continue;
        if (index.scans !== undefined && scans > index.scans) index.lastUsedMs = now;
        index.scans = scans;
      }
    }
    if (this.options.dropUnusedAfterMs === 0) return;
    for (const index of [...this.indexes.values()]) {
      if (now - index.lastUsedMs < this.options.dropUnusedAfterMs) continue;
      await this.dropIndex(index.name);
      this.log?.info({ index: index.name }, 'unused automatic index dropped');
    }
  }

  /**
   * Before fields are deleted: SQLite refuses to drop a column an index covers, so the automatic
   * indexes on them go first (PostgreSQL drops them with the column). A deleted class takes its
   * indexes with it.
   */
  async fieldsDeleted(className: string, fields: string[]): Promise<void> {
    for (const index of [...this.indexes.values()]) {
      if (index.className !== className || !index.keys.some((k) => fields.includes(k.field))) continue;
      if (this.postgres) this.forget(index.name);
      else await this.dropIndex(index.name);
    }
  }

  classDeleted(className: string): void {
    for (const index of [...this.indexes.values()])
      if (index.className === className) this.forget(index.name);
    for (const s of [...this.shapes.values()]) if (s.shape.className === className) this.shapes.delete(s.key);
  }

  private q(name: string): string {
    return this.driver.dialect.quote(name);
  }
}

/** How many leading keys of an index serve the shape (0: it does not; the find scans). */
function servedKeys(shape: QueryShape, keys: IndexKey[]): number {
  // An index that does not lead with what narrows the rows most (an equality, else a range) is
  // walked whole: the engine filters every row.
  const lead = keys[0]?.field ?? '';
  if (shape.equality.length > 0 && !shape.equality.includes(lead)) return 0;
  if (shape.equality.length === 0 && shape.range.length > 0 && !shape.range.includes(lead)) return 0;
  let i = 0;
  while (i < keys.length && shape.equality.includes(keys[i]!.field)) i++;
  if (i < keys.length && shape.range.includes(keys[i]!.field)) return i + 1;
  if (shape.range.length === 0) {
    let j = 0;
    while (i < keys.length && j < shape.sort.length && keys[i]!.field === shape.sort[j]!.field) {
      i++;
      j++;
    }
  }
  return i;
}

const roundMs = (ms: number) => Math.round(ms * 1000) / 1000;
