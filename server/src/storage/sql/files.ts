import type { StoredFile } from '../adapter.ts';
import { SqlStorePart } from './store-part.ts';

const FILES = '_FileBlob';
const CHUNKS = '_FileChunk';
/** Columns of the file table added after its first layout: JSON text, NULL when there is nothing. */
const LATER_COLUMNS = ['metadata', 'tags'] as const;

/** File bytes in the database (the `database` file adapter): one table of files, one of chunks. */
export class SqlFileBlobs extends SqlStorePart {
  private ready: Promise<void> | undefined;

  private tables(): Promise<void> {
    const q = (n: string) => this.q(n);
    this.ready ??= this.driver.exec(
      `CREATE TABLE IF NOT EXISTS ${q(FILES)} (${q('name')} TEXT PRIMARY KEY NOT NULL, ${q('contentType')} TEXT NOT NULL, ` +
        `${q('size')} INTEGER, ${q('etag')} TEXT, ${q('createdAt')} TEXT NOT NULL, ${q('complete')} INTEGER NOT NULL, ` +
        `${LATER_COLUMNS.map((c) => `${q(c)} TEXT`).join(', ')});` +
        `CREATE TABLE IF NOT EXISTS ${q(CHUNKS)} (${q('name')} TEXT NOT NULL, ${q('seq')} INTEGER NOT NULL, ` +
        `${q('data')} ${this.dialect.binaryType} NOT NULL, PRIMARY KEY (${q('name')}, ${q('seq')}));`,
    );
    return this.ready;
  }

  /** Adds the columns a file table of an earlier layout lacks; nothing when there is no file table yet. */
  async upgrade(): Promise<void> {
    const p = this.params();
    const rows = await this.driver.all(this.dialect.tableColumns(p.add(FILES)), p.values);
    if (rows.length === 0) return;
    const have = new Set(rows.map((r) => String(r.name)));
    const missing = LATER_COLUMNS.filter((c) => !have.has(c));
    if (missing.length === 0) return;
    await this.driver.exec(missing.map((c) => this.addColumn(this.q(FILES), `${this.q(c)} TEXT`)).join(''));
  }

  async begin(file: Omit<StoredFile, 'size' | 'etag'>): Promise<void> {
    await this.tables();
    const p = this.params();
    const cols = ['name', 'contentType', 'createdAt', 'metadata', 'tags', 'complete']
      .map((c) => this.q(c))
      .join(', ');
    await this.driver.run(
      `INSERT INTO ${this.q(FILES)} (${cols}) VALUES (${p.add(file.name)}, ${p.add(file.contentType)}, ${p.add(file.createdAt)}, ` +
        `${p.add(jsonOrNull(file.metadata))}, ${p.add(jsonOrNull(file.tags))}, 0)`,
      p.values,
    );
  }

  async append(name: string, seq: number, bytes: Uint8Array): Promise<void> {
    const p = this.params();
    await this.driver.run(
      `INSERT INTO ${this.q(CHUNKS)} (${this.q('name')}, ${this.q('seq')}, ${this.q('data')}) VALUES (${p.add(name)}, ${p.add(seq)}, ${p.add(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength))})`,
      p.values,
    );
  }

  async commit(name: string, size: number, etag: string): Promise<void> {
    const p = this.params();
    await this.driver.run(
      `UPDATE ${this.q(FILES)} SET ${this.q('size')} = ${p.add(size)}, ${this.q('etag')} = ${p.add(etag)}, ${this.q('complete')} = 1 WHERE ${this.q('name')} = ${p.add(name)}`,
      p.values,
    );
  }

  async info(name: string): Promise<StoredFile | undefined> {
    await this.tables();
    const p = this.params();
    const row = await this.driver.get(
      `SELECT * FROM ${this.q(FILES)} WHERE ${this.q('name')} = ${p.add(name)} AND ${this.q('complete')} = 1`,
      p.values,
    );
    return row ? toFile(row) : undefined;
  }

  async chunk(name: string, seq: number): Promise<Uint8Array | undefined> {
    const p = this.params();
    const row = await this.driver.get(
      `SELECT ${this.q('data')} FROM ${this.q(CHUNKS)} WHERE ${this.q('name')} = ${p.add(name)} AND ${this.q('seq')} = ${p.add(seq)}`,
      p.values,
    );
    return row ? (row.data as Uint8Array) : undefined;
  }

  async delete(name: string): Promise<boolean> {
    await this.tables();
    return this.driver.transaction(async () => {
      const p = this.params();
      const removed = await this.driver.run(
        `DELETE FROM ${this.q(FILES)} WHERE ${this.q('name')} = ${p.add(name)} AND ${this.q('complete')} = 1`,
        p.values,
      );
      const pending = this.params();
      await this.driver.run(
        `DELETE FROM ${this.q(FILES)} WHERE ${this.q('name')} = ${pending.add(name)}`,
        pending.values,
      );
      const c = this.params();
      await this.driver.run(
        `DELETE FROM ${this.q(CHUNKS)} WHERE ${this.q('name')} = ${c.add(name)}`,
        c.values,
      );
      return removed.changes > 0;
    });
  }

  async list(after: string, limit: number): Promise<StoredFile[]> {
    await this.tables();
    const p = this.params();
    const rows = await this.driver.all(
      `SELECT * FROM ${this.q(FILES)} WHERE ${this.q('complete')} = 1 AND ${this.q('name')} > ${p.add(after)} ORDER BY ${this.q('name')} LIMIT ${Math.max(1, Math.floor(limit))}`,
      p.values,
    );
    return rows.map(toFile);
  }
}

function toFile(row: Record<string, unknown>): StoredFile {
  return {
    name: String(row.name),
    contentType: String(row.contentType),
    size: Number(row.size),
    etag: String(row.etag),
    createdAt: String(row.createdAt),
    metadata: strings(row.metadata),
    tags: strings(row.tags),
  };
}

/** A map of strings as stored: JSON text, NULL when empty (and in rows stored before the column). */
function jsonOrNull(map: Record<string, string>): string | null {
  return Object.keys(map).length === 0 ? null : JSON.stringify(map);
}

function strings(stored: unknown): Record<string, string> {
  return typeof stored === 'string' ? (JSON.parse(stored) as Record<string, string>) : {};
}
