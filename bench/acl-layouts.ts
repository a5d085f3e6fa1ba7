/**
 * `npm run bench -- acl-layouts`: how the read ACL is best stored on SQLite, measured on issue 11's
 * data shape (20,000 rows, even rows public, odd rows readable by role:Readers and their owner,
 * the caller a user in Readers). Each layout answers the same three reads as the service does
 * (by id, an unindexed score window ordered by score, a count of the whole class), timed in one run
 * on one connection; the answers are compared so that a faster layout cannot be a wrong one.
 *
 * - `instr`: the list as JSON text, a principal found by `instr` on its quoted name (the service's);
 * - `json_each`: the same text, parsed per row with `json_each` (the service before issue 11);
 * - `side table`: one row per (row, principal) in an indexed table, probed per row or joined.
 *
 * Counts in the service do not read rows at all (`_ACL_COUNT`, one entry per distinct list); the
 * count here is the cost without it.
 */
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';

const ROWS = 20_000;
const OWNERS = 100;
const USER = 'bench-reader-id';
const PRINCIPALS = ['*', USER, 'role:Readers'];

function seed(db: Database.Database): void {
  db.exec(`
    CREATE TABLE item (objectId TEXT NOT NULL UNIQUE, score REAL, label TEXT, _rperm TEXT);
    CREATE TABLE acl_read (row INTEGER NOT NULL, principal TEXT NOT NULL, PRIMARY KEY (row, principal)) WITHOUT ROWID;
    CREATE INDEX acl_read_principal ON acl_read (principal, row);
  `);
  const insert = db.prepare('INSERT INTO item (objectId, score, label, _rperm) VALUES (?, ?, ?, ?)');
  const side = db.prepare('INSERT INTO acl_read (row, principal) VALUES (?, ?)');
  db.transaction(() => {
    for (let i = 0; i < ROWS; i++) {
      const readers = i % 2 === 0 ? ['*'] : ['role:Readers', `owner-${i % OWNERS}`];
      const { lastInsertRowid } = insert.run(
        `id${i}`,
        Math.random() * ROWS,
        `row ${i}`,
        JSON.stringify(readers),
      );
      for (const p of readers) side.run(lastInsertRowid, p);
    }
  })();
}

const layouts: Record<string, string> = {
  instr: `(_rperm IS NULL OR ${PRINCIPALS.map((p) => `instr(_rperm, '${JSON.stringify(p)}') > 0`).join(' OR ')})`,
  json_each: `(_rperm IS NULL OR EXISTS (SELECT 1 FROM json_each(_rperm) WHERE value IN (${PRINCIPALS.map((p) => `'${p}'`).join(', ')})))`,
  'side table (probe per row)': `EXISTS (SELECT 1 FROM acl_read a WHERE a.row = item.rowid AND a.principal IN (${PRINCIPALS.map((p) => `'${p}'`).join(', ')}))`,
  'side table (join)': `item.rowid IN (SELECT row FROM acl_read WHERE principal IN (${PRINCIPALS.map((p) => `'${p}'`).join(', ')}))`,
};

/** Microseconds per `run`, and `answer()` as text to compare the layouts by. */
function time(run: () => unknown, answer: () => unknown, budgetMs = 600): { micros: number; answer: string } {
  const text = JSON.stringify(answer());
  for (let i = 0; i < 20; i++) run();
  let n = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < budgetMs) {
    run();
    n++;
  }
  return { micros: ((performance.now() - t0) * 1000) / n, answer: text };
}

export function main(): void {
  const file = path.join(tmpdir(), `bds-acl-layouts-${process.pid}.sqlite`);
  const db = new Database(file);
  try {
    db.pragma('journal_mode = WAL');
    seed(db);
    const ids = Array.from({ length: 1000 }, (_, i) => `id${i * 17}`);
    const windows = Array.from({ length: 1000 }, () => Math.floor(Math.random() * (ROWS - 10)));
    console.log(
      `acl layouts: ${ROWS.toLocaleString('en-US')} rows, caller principals ${PRINCIPALS.join(', ')}; µs per query`,
    );
    console.log('');
    const header = ['layout', 'get by id', 'find (window, no index)', 'count (whole class)'];
    const rows: string[][] = [header];
    let reference: string[] | undefined;
    for (const [name, acl] of Object.entries(layouts)) {
      const get = db.prepare(`SELECT * FROM item WHERE objectId = ? AND ${acl} LIMIT 1`);
      const find = db.prepare(
        `SELECT * FROM item WHERE score >= ? AND score < ? AND ${acl} ORDER BY score DESC LIMIT 100`,
      );
      const count = db.prepare(`SELECT COUNT(*) AS n FROM item WHERE ${acl}`);
      let i = 0;
      const results = [
        time(
          () => get.get(ids[i++ % ids.length]),
          () => ids.map((id) => get.get(id)),
        ),
        time(
          () => {
            const from = windows[i++ % windows.length]!;
            return find.all(from, from + 10);
          },
          () => windows.slice(0, 20).map((from) => find.all(from, from + 10)),
        ),
        time(
          () => count.get(),
          () => count.get(),
        ),
      ];
      const answers = results.map((r) => r.answer);
      reference ??= answers;
      const same = answers.every((a, k) => a === reference![k]);
      rows.push([`${name}${same ? '' : ' (DIFFERENT ANSWERS)'}`, ...results.map((r) => r.micros.toFixed(1))]);
    }
    const widths = header.map((_, k) => Math.max(...rows.map((r) => r[k]!.length)));
    for (const r of rows)
      console.log(r.map((c, k) => (k === 0 ? c.padEnd(widths[k]!) : c.padStart(widths[k]!))).join('  '));
  } finally {
    db.close();
    rmSync(file, { force: true });
    rmSync(`${file}-wal`, { force: true });
    rmSync(`${file}-shm`, { force: true });
  }
}
