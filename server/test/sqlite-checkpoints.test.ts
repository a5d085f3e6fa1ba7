import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKSTOP_PAGES } from '../src/storage/sqlite/checkpoints.ts';
import { SqliteDriver } from '../src/storage/sqlite/driver.ts';

/**
 * The WAL is copied back into the database file by the checkpoint worker, never by a commit on the
 * writer connection (whose own threshold is only a backstop): storage/sqlite/checkpoints.ts.
 */
describe('SQLite checkpoints in a worker thread', () => {
  let dir: string;
  let file: string;
  let driver: SqliteDriver;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'bds-checkpoints-'));
    file = path.join(dir, 'data.sqlite');
    driver = new SqliteDriver(file);
    await driver.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)');
  });
  afterAll(async () => {
    await driver?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("the writer's own threshold is the backstop; the worker copies the WAL into the file while the writer goes on", async () => {
    expect(await driver.get('PRAGMA wal_autocheckpoint', [])).toEqual({ wal_autocheckpoint: BACKSTOP_PAGES });
    const fileBefore = statSync(file).size;
    // About 2 MB in 200 grouped commits: far below the backstop (64 MB), so only the worker copies.
    const body = 'x'.repeat(10_000);
    for (let i = 0; i < 200; i++) await driver.run('INSERT INTO t (body) VALUES (?)', [body]);
    // Generous bound: the worker looks every 100 ms.
    await expect
      .poll(() => statSync(file).size, { timeout: 20_000, interval: 50 })
      .toBeGreaterThan(fileBefore + 2_000_000);
    // The worker's message about it may arrive after the file grew.
    await expect.poll(() => driver.checkpointer!.runs, { timeout: 20_000 }).toBeGreaterThan(0);
    expect(await driver.get('SELECT COUNT(*) AS n FROM t', [])).toEqual({ n: 200 });
  });

  it('close stops the worker: the file is left checkpointed and whole, and opens again', async () => {
    await driver.close();
    expect(statSync(`${file}-wal`, { throwIfNoEntry: false })?.size ?? 0).toBe(0);
    const again = new Database(file, { readonly: true });
    try {
      expect(again.prepare('SELECT COUNT(*) AS n FROM t').get()).toEqual({ n: 200 });
      expect(again.pragma('integrity_check', { simple: true })).toBe('ok');
    } finally {
      again.close();
    }
  });

  it("close finishes in a process with nothing else to do: the worker's end keeps it alive until then", () => {
    const other = path.join(dir, 'other.sqlite');
    const script = fileURLToPath(new URL('./fixtures/sqlite-close-exit.ts', import.meta.url));
    const child = spawnSync(process.execPath, ['--import', 'tsx', script, other], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect({ status: child.status, stderr: child.stderr }).toEqual({ status: 4, stderr: '' });
    expect(statSync(`${other}-wal`, { throwIfNoEntry: false })?.size ?? 0).toBe(0);
  });

  it('the in-memory store has no worker', async () => {
    const memory = new SqliteDriver(':memory:');
    try {
      expect(memory.checkpointer).toBeUndefined();
    } finally {
      await memory.close();
    }
  });
});
