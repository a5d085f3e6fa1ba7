import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteDriver } from '../src/storage/sqlite/driver.ts';

/**
 * Reads outside a transaction go to the writer connection when no transaction is open on it, and
 * to the reader while one is: a read never sees another request's uncommitted rows.
 */
describe('SQLite reads and open transactions', () => {
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
});
