import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteDriver } from '../src/storage/sqlite/driver.ts';
import { startService, type TestService } from './helpers/service.ts';

/**
 * Reads outside a transaction go to the writer connection when no transaction is open on it, and
 * to the reader while one is: a read never sees another request's uncommitted rows.
 */
describe('SQLite reads, open transactions and grouped commits', () => {
  let dir: string;
  let driver: SqliteDriver;
  const names = async () => (await driver.all('SELECT name FROM t ORDER BY name', [])).map((r) => r.name);

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'bds-reads-'));
    driver = new SqliteDriver(path.join(dir, 'data.sqlite'));
    await driver.exec('CREATE TABLE t (name TEXT)');
    await driver.run('INSERT INTO t (name) VALUES (?)', ['committed']);
  });
  afterAll(async () => {
    await driver?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a read while another transaction is open sees only committed rows; after its commit, its rows', async () => {
    expect(await names()).toEqual(['committed']);
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let inside: unknown[] = [];
    const tx = driver.transaction(async () => {
      await driver.run('INSERT INTO t (name) VALUES (?)', ['pending']);
      inside = await names();
      await held;
    });
    await new Promise((r) => setTimeout(r, 10));
    expect(inside).toEqual(['committed', 'pending']);
    expect(await names()).toEqual(['committed']);
    expect(await driver.get('SELECT COUNT(*) AS n FROM t', [])).toEqual({ n: 1 });
    release();
    await tx;
    expect(await names()).toEqual(['committed', 'pending']);
  });

  it('a rolled-back transaction leaves nothing for later reads', async () => {
    await expect(
      driver.transaction(async () => {
        await driver.run('INSERT INTO t (name) VALUES (?)', ['rolled back']);
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect(await names()).toEqual(['committed', 'pending']);
  });

  it('writes outside a transaction commit in groups: none is acknowledged before its group commits', async () => {
    await driver.exec('CREATE TABLE g (name TEXT UNIQUE)');
    const writes = ['a', 'b', 'c'].map((name) => driver.run('INSERT INTO g (name) VALUES (?)', [name]));
    // Until the group commits (next turn of the loop), a read outside sees none of them.
    expect(await driver.all('SELECT name FROM g', [])).toEqual([]);
    expect(await Promise.all(writes)).toEqual([{ changes: 1 }, { changes: 1 }, { changes: 1 }]);
    expect((await driver.all('SELECT name FROM g ORDER BY name', [])).map((r) => r.name)).toEqual([
      'a',
      'b',
      'c',
    ]);
  });

  it('a write that fails alone in a group fails alone; the others commit', async () => {
    const results = await Promise.allSettled([
      driver.run('INSERT INTO g (name) VALUES (?)', ['d']),
      driver.run('INSERT INTO g (name) VALUES (?)', ['a']),
      driver.run('INSERT INTO g (name) VALUES (?)', ['e']),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(String((results[1] as PromiseRejectedResult).reason)).toMatch(/UNIQUE constraint failed: g.name/);
    expect((await driver.all('SELECT name FROM g ORDER BY name', [])).map((r) => r.name)).toEqual([
      'a',
      'b',
      'c',
      'd',
      'e',
    ]);
  });

  it('a group whose commit fails fails every write in it, and none is stored', async () => {
    await driver.exec('PRAGMA foreign_keys = ON');
    await driver.exec('CREATE TABLE parent (id TEXT PRIMARY KEY)');
    await driver.exec(
      'CREATE TABLE child (name TEXT, parent TEXT REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)',
    );
    // The orphan passes its statement; the deferred check fails the COMMIT of the whole group.
    const results = await Promise.allSettled([
      driver.run('INSERT INTO g (name) VALUES (?)', ['f']),
      driver.run('INSERT INTO child (name, parent) VALUES (?, ?)', ['orphan', 'missing']),
    ]);
    await driver.exec('PRAGMA foreign_keys = OFF');
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(String((results[0] as PromiseRejectedResult).reason)).toMatch(/FOREIGN KEY constraint failed/);
    expect(await driver.all('SELECT name FROM g WHERE name = ?', ['f'])).toEqual([]);
    expect(await driver.all('SELECT name FROM child', [])).toEqual([]);
    // The next write opens a new group and commits.
    await driver.run('INSERT INTO g (name) VALUES (?)', ['g']);
    expect(await driver.all('SELECT name FROM g WHERE name = ?', ['g'])).toEqual([{ name: 'g' }]);
  });

  it("the versions a group's writes call for are written with them, at the group's end; a refused one fails the group", async () => {
    await driver.exec("CREATE TABLE v (name TEXT NOT NULL CHECK (name <> 'bad'))");
    const write = (name: string, version: string) =>
      driver.run('INSERT INTO g (name) VALUES (?)', [name], () => ({
        sql: 'INSERT INTO v (name) VALUES (?)',
        params: [version],
      }));
    expect(await Promise.all([write('h', 'h1'), write('i', 'i1'), write('j', 'j1')])).toEqual([
      { changes: 1 },
      { changes: 1 },
      { changes: 1 },
    ]);
    expect((await driver.all('SELECT name FROM v ORDER BY name', [])).map((r) => r.name)).toEqual([
      'h1',
      'i1',
      'j1',
    ]);
    // A write that fails alone calls for nothing; a version refused fails every write of the group,
    // and none of them is stored: no write is answered as done that did not commit.
    const results = await Promise.allSettled([write('k', 'k1'), write('a', 'a1'), write('l', 'bad')]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(String((results[0] as PromiseRejectedResult).reason)).toBe(
      "SqliteError: CHECK constraint failed: name <> 'bad'",
    );
    expect(String((results[1] as PromiseRejectedResult).reason)).toMatch(/UNIQUE constraint failed: g.name/);
    expect(await driver.all("SELECT name FROM g WHERE name IN ('k', 'l')", [])).toEqual([]);
    expect((await driver.all('SELECT name FROM v ORDER BY name', [])).map((r) => r.name)).toEqual([
      'h1',
      'i1',
      'j1',
    ]);
    // A version that cannot even be made fails the group too: its write ran in it.
    const unmade = await Promise.allSettled([
      write('o', 'o1'),
      driver.run('INSERT INTO g (name) VALUES (?)', ['p'], () => {
        throw new Error('no version');
      }),
    ]);
    expect(unmade.map((r) => (r.status === 'rejected' ? String(r.reason) : r.status))).toEqual([
      'Error: no version',
      'Error: no version',
    ]);
    expect(await driver.all("SELECT name FROM g WHERE name IN ('o', 'p')", [])).toEqual([]);
    // In a transaction the version is written at once, under a savepoint: refused, it undoes its write only.
    await driver.transaction(async () => {
      await expect(write('m', 'bad')).rejects.toThrow("CHECK constraint failed: name <> 'bad'");
      await write('n', 'n1');
    });
    expect(await driver.all("SELECT name FROM g WHERE name IN ('m', 'n')", [])).toEqual([{ name: 'n' }]);
  });
});

describe('the memory map of the SQLite file (option sqliteMmapMB)', () => {
  const mmapOf = (t: TestService) => {
    const driver = (
      t.service.core.store as unknown as {
        driver: { writer: Database.Database; reader: Database.Database };
      }
    ).driver;
    return [driver.writer, driver.reader].map((db) => db.pragma('mmap_size', { simple: true }));
  };

  it('maps nothing by default; the option maps that much of the file on both connections', async () => {
    const byDefault = await startService();
    const mapped = await startService({ sqliteMmapMB: 256 });
    try {
      expect(mmapOf(byDefault)).toEqual([0, 0]);
      expect(mmapOf(mapped)).toEqual([256 * 1024 * 1024, 256 * 1024 * 1024]);
    } finally {
      await byDefault.close();
      await mapped.close();
    }
  });
});
