import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteDriver } from '../src/storage/sqlite/driver.ts';

/** The SQLite driver reads rows as arrays and names them itself: the names must be the statement's. */
describe('SQLite driver rows', () => {
  let dir: string;
  let file: string;
  let driver: SqliteDriver;

  beforeEach(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'bds-rows-'));
    file = path.join(dir, 'data.sqlite');
    driver = new SqliteDriver(file);
    await driver.exec('CREATE TABLE t (id TEXT PRIMARY KEY, a INTEGER, b TEXT, c TEXT)');
    await driver.exec('CREATE TABLE u (id TEXT PRIMARY KEY, a INTEGER)');
    await driver.run('INSERT INTO t VALUES (?, ?, ?, ?), (?, ?, ?, ?)', [
      'x',
      1,
      'one',
      null,
      'y',
      2,
      'two',
      '{}',
    ]);
    await driver.run('INSERT INTO u VALUES (?, ?)', ['x', 10]);
  });

  afterEach(async () => {
    await driver.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** What better-sqlite3 itself answers as object rows, on a connection of its own. */
  function bindingRows(sql: string, params: unknown[] = []): unknown[] {
    const db = new Database(file, { readonly: true });
    try {
      return db.prepare(sql).all(...params);
    } finally {
      db.close();
    }
  }

  it.each([
    ['SELECT * FROM t ORDER BY id', []],
    ['SELECT * FROM t WHERE a > ? ORDER BY id', [1]],
    ['SELECT id, b FROM t ORDER BY id', []],
    ['SELECT t.*, u.a FROM t LEFT JOIN u ON u.id = t.id ORDER BY t.id', []],
    ['SELECT * FROM t LEFT JOIN u ON u.id = t.id ORDER BY t.id', []],
    ['SELECT t.a, u.a FROM t JOIN u ON u.id = t.id', []],
    ['SELECT COUNT(*) AS n FROM t', []],
    ['SELECT * FROM t WHERE id = ?', ['none']],
  ])('%s answers what the binding answers', async (sql, params) => {
    expect(await driver.all(sql, params)).toEqual(bindingRows(sql, params));
    expect(await driver.get(sql, params)).toEqual(bindingRows(sql, params)[0]);
  });

  it('a column of the same name: the later one wins, as in the binding', async () => {
    expect(await driver.all('SELECT t.a, u.a FROM t JOIN u ON u.id = t.id', [])).toEqual([{ a: 10 }]);
  });

  it('SELECT * follows a schema change made by another connection, whatever its column count', async () => {
    const sql = 'SELECT * FROM t WHERE id = ?';
    expect(await driver.get(sql, ['y'])).toEqual({ id: 'y', a: 2, b: 'two', c: '{}' });
    // Another process: one column dropped and one added, so the count stays the same.
    const other = new Database(file);
    other.exec("ALTER TABLE t DROP COLUMN b; ALTER TABLE t ADD COLUMN d TEXT DEFAULT 'new'");
    expect(await driver.get(sql, ['y'])).toEqual({ id: 'y', a: 2, c: '{}', d: 'new' });
    expect(await driver.all(sql, ['y'])).toEqual([{ id: 'y', a: 2, c: '{}', d: 'new' }]);
    other.exec('ALTER TABLE t ADD COLUMN e INTEGER DEFAULT 5');
    other.close();
    expect(await driver.all(sql, ['y'])).toEqual([{ id: 'y', a: 2, c: '{}', d: 'new', e: 5 }]);
  });
});
