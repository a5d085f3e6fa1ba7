import type { Row } from '../../kernel/records.ts';
import type {
  HistoryStorage,
  StoredVersion,
  VersionCallerKind,
  VersionFilter,
  VersionOp,
  VersionSource,
  VersionStamp,
} from '../adapter.ts';
import type { SqlRow, Statement } from './driver.ts';
import { SqlStorePart, wholeNumber } from './store-part.ts';

/**
 * The row history: one row per version, never a class (no class may take its name: kernel/names.ts),
 * so no class route, query or export reaches it.
 */
export const HISTORY_TABLE = '_History';

const COLUMNS = [
  'className',
  'objectId',
  'op',
  'time',
  'before',
  'after',
  'fields',
  'callerKind',
  'userId',
  'callerName',
  'source',
  'eventId',
  'requestId',
  'revertOf',
] as const;

/** Rows one prune statement deletes at most: each holds the write lock briefly. */
const PRUNE_BATCH = 1000;

/** The fields a version is not about: every version has them. */
const BOOKKEEPING = new Set(['objectId', 'createdAt', 'updatedAt']);

/**
 * The names of the fields a write changed, as the `fields` column keeps them (`,a,b,`: a field
 * filter looks for `,name,`). A create names the fields it set, a delete those the row had.
 */
function fieldList(names: string[]): string {
  return names.length ? `,${names.join(',')},` : '';
}

/** The fields of a row a version is about: all but the bookkeeping ones. */
const fieldsOf = (row: Row): string[] => Object.keys(row).filter((key) => !BOOKKEEPING.has(key));

/** The fields whose values differ between two states of a row (bookkeeping left out). */
function changedBetween(before: Row, after: Row): string[] {
  const names: string[] = [];
  for (const key in before) {
    if (!BOOKKEEPING.has(key) && JSON.stringify(before[key]) !== JSON.stringify(after[key])) names.push(key);
  }
  for (const key in after) if (!(key in before) && !BOOKKEEPING.has(key)) names.push(key);
  return names;
}

/**
 * What an update's version keeps of the row before it: the values of the fields it changed, and
 * updatedAt. The rest is the row after; `wholeBefore` puts the row back together when it is read.
 * Half of what an Increment's version wrote was the unchanged row a second time.
 */
function changedPart(before: Row, changed: string[]): Row {
  const part: Row = {};
  if ('updatedAt' in before) part.updatedAt = before.updatedAt;
  for (const key of changed) if (key in before) part[key] = before[key];
  return part;
}

/** The row before an update, from its version: the row after, with the changed fields as they were. */
function wholeBefore(part: Row, after: Row, fields: string): Row {
  const whole: Row = {};
  for (const key in after) if (key !== 'updatedAt' && !fields.includes(`,${key},`)) whole[key] = after[key];
  return { ...whole, ...part };
}

/** The versions of rows: written by the row writes (row-writes.ts) in their own unit, read and pruned here. */
export class SqlHistory extends SqlStorePart implements HistoryStorage {
  /** The table and its indexes, made when missing (every start). */
  async init(): Promise<void> {
    const q = (n: string) => this.q(n);
    const t = q(HISTORY_TABLE);
    await this.driver.exec(
      `CREATE TABLE IF NOT EXISTS ${t} (${q('id')} ${this.dialect.serialPrimaryKey}, ` +
        `${q('className')} TEXT NOT NULL, ${q('objectId')} TEXT NOT NULL, ${q('op')} TEXT NOT NULL, ` +
        `${q('time')} TEXT NOT NULL, ${q('before')} TEXT, ${q('after')} TEXT, ${q('fields')} TEXT NOT NULL, ` +
        `${q('callerKind')} TEXT NOT NULL, ${q('userId')} TEXT, ${q('callerName')} TEXT, ` +
        `${q('source')} TEXT NOT NULL, ${q('eventId')} TEXT, ${q('requestId')} TEXT, ${q('revertOf')} TEXT);` +
        `CREATE INDEX IF NOT EXISTS ${q('_History_row')} ON ${t} (${q('className')}, ${q('objectId')}, ${q('time')});` +
        `CREATE INDEX IF NOT EXISTS ${q('_History_class')} ON ${t} (${q('className')}, ${q('time')});`,
    );
  }

  /** The INSERT of a version of `className`/`objectId` between `before` and `after` (rows as the write event carries them). */
  versionStatement(
    className: string,
    objectId: string,
    before: Row | null,
    after: Row | null,
    stamp: VersionStamp,
  ): Statement {
    const kept = (row: Row | null) => (row && stamp.withhold ? stamp.withhold(row) : row);
    let b = kept(before);
    const a = kept(after);
    const changed = b && a ? changedBetween(b, a) : fieldsOf(b ?? a ?? {});
    if (b && a) b = changedPart(b, changed);
    return {
      sql: this.insertText(),
      // In the order of COLUMNS.
      params: [
        className,
        objectId,
        stamp.op,
        stamp.time,
        b ? JSON.stringify(b) : null,
        a ? JSON.stringify(a) : null,
        fieldList(changed),
        stamp.callerKind,
        stamp.userId,
        stamp.name,
        stamp.source,
        stamp.eventId,
        stamp.requestId,
        stamp.revertOf,
      ],
    };
  }

  private insertSql: string | undefined;

  /**
   * The INSERT of a version, built once: every value it binds is a string or null, so its
   * placeholders never depend on the values (PostgreSQL types only numbers and booleans).
   */
  private insertText(): string {
    if (this.insertSql === undefined) {
      const p = this.params();
      const values = COLUMNS.map(() => p.add(''));
      this.insertSql = `INSERT INTO ${this.q(HISTORY_TABLE)} (${COLUMNS.map((c) => this.q(c)).join(', ')}) VALUES (${values.join(', ')})`;
    }
    return this.insertSql;
  }

  async versions(filter: VersionFilter): Promise<StoredVersion[]> {
    const q = (n: string) => this.q(n);
    const p = this.params();
    const where = [`${q('className')} = ${p.add(filter.className)}`];
    if (filter.objectId !== undefined) where.push(`${q('objectId')} = ${p.add(filter.objectId)}`);
    if (filter.before !== undefined) {
      const cursor = await this.version(filter.before);
      if (!cursor) return [];
      const time = p.add(cursor.time);
      const same = p.add(cursor.time);
      where.push(`(${q('time')} < ${time} OR (${q('time')} = ${same} AND ${q('id')} < ${p.add(cursor.id)}))`);
    }
    if (filter.user !== undefined) {
      where.push(`(${q('userId')} = ${p.add(filter.user)} OR ${q('callerName')} = ${p.add(filter.user)})`);
    }
    if (filter.field !== undefined)
      where.push(this.dialect.textContains(q('fields'), p.add(`,${filter.field},`)));
    if (filter.op !== undefined) where.push(`${q('op')} = ${p.add(filter.op)}`);
    if (filter.since !== undefined) where.push(`${q('time')} >= ${p.add(filter.since)}`);
    if (filter.until !== undefined) where.push(`${q('time')} <= ${p.add(filter.until)}`);
    const rows = await this.driver.all(
      `SELECT * FROM ${q(HISTORY_TABLE)} WHERE ${where.join(' AND ')} ORDER BY ${q('time')} DESC, ${q('id')} DESC LIMIT ${wholeNumber(filter.limit)}`,
      p.values,
    );
    return rows.map(toVersion);
  }

  async version(id: string): Promise<StoredVersion | undefined> {
    if (!/^[1-9][0-9]{0,17}$/.test(id)) return undefined;
    const p = this.params();
    const row = await this.driver.get(
      `SELECT * FROM ${this.q(HISTORY_TABLE)} WHERE ${this.q('id')} = ${p.add(id)}`,
      p.values,
    );
    return row ? toVersion(row) : undefined;
  }

  async versionAt(className: string, objectId: string, time: string): Promise<StoredVersion | undefined> {
    const q = (n: string) => this.q(n);
    const p = this.params();
    const row = await this.driver.get(
      `SELECT * FROM ${q(HISTORY_TABLE)} WHERE ${q('className')} = ${p.add(className)} AND ${q('objectId')} = ${p.add(objectId)} ` +
        `AND ${q('time')} <= ${p.add(time)} ORDER BY ${q('time')} DESC, ${q('id')} DESC LIMIT 1`,
      p.values,
    );
    return row ? toVersion(row) : undefined;
  }

  async pruneHistory(bounds: { olderThan?: string; keepPerRow?: number }): Promise<number> {
    const q = (n: string) => this.q(n);
    const t = q(HISTORY_TABLE);
    let deleted = 0;
    // A batch at a time, so no statement holds the write lock long.
    const drain = async (statement: () => Statement) => {
      for (;;) {
        const { sql, params } = statement();
        const { changes } = await this.driver.run(sql, params);
        deleted += changes;
        if (changes < PRUNE_BATCH) return;
      }
    };
    if (bounds.olderThan !== undefined) {
      const olderThan = bounds.olderThan;
      // Class by class, each through the (className, time) index.
      const classes = await this.driver.all(`SELECT DISTINCT ${q('className')} AS c FROM ${t}`, []);
      for (const { c } of classes) {
        await drain(() => {
          const p = this.params();
          return {
            sql: `DELETE FROM ${t} WHERE ${q('id')} IN (SELECT ${q('id')} FROM ${t} WHERE ${q('className')} = ${p.add(c)} AND ${q('time')} < ${p.add(olderThan)} LIMIT ${PRUNE_BATCH})`,
            params: p.values,
          };
        });
      }
    }
    if (bounds.keepPerRow !== undefined) {
      const keep = wholeNumber(bounds.keepPerRow);
      const crowded = await this.driver.all(
        `SELECT ${q('className')} AS c, ${q('objectId')} AS o FROM ${t} GROUP BY ${q('className')}, ${q('objectId')} HAVING COUNT(*) > ${keep}`,
        [],
      );
      for (const { c, o } of crowded) {
        await drain(() => {
          const p = this.params();
          // Placeholders are positional: added in the order they appear in the text.
          const row = () => `${q('className')} = ${p.add(c)} AND ${q('objectId')} = ${p.add(o)}`;
          const outer = row();
          const kept = `SELECT ${q('id')} FROM ${t} WHERE ${row()} ORDER BY ${q('time')} DESC, ${q('id')} DESC LIMIT ${keep}`;
          return {
            sql: `DELETE FROM ${t} WHERE ${q('id')} IN (SELECT ${q('id')} FROM ${t} WHERE ${outer} AND ${q('id')} NOT IN (${kept}) LIMIT ${PRUNE_BATCH})`,
            params: p.values,
          };
        });
      }
    }
    return deleted;
  }
}

function parsed(text: unknown): Row | null {
  return typeof text === 'string' ? (JSON.parse(text) as Row) : null;
}

const textOrNull = (value: unknown): string | null => (value == null ? null : String(value));

function toVersion(row: SqlRow): StoredVersion {
  const after = parsed(row.after);
  const kept = parsed(row.before);
  return {
    id: String(row.id),
    className: String(row.className),
    objectId: String(row.objectId),
    op: row.op as VersionOp,
    time: String(row.time),
    before: kept && after ? wholeBefore(kept, after, String(row.fields)) : kept,
    after,
    callerKind: row.callerKind as VersionCallerKind,
    userId: textOrNull(row.userId),
    name: textOrNull(row.callerName),
    source: row.source as VersionSource,
    eventId: textOrNull(row.eventId),
    requestId: textOrNull(row.requestId),
    revertOf: textOrNull(row.revertOf),
  };
}
