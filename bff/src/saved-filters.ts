import { chmodSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { SavedFilter, SavedFilterStore } from './context.ts';

/**
 * Saved data-browser filters, kept by the bff (`<dataDir>/console-filters.sqlite`) so a console
 * user finds them from any browser. Each filter belongs to the console user who saved it and is
 * theirs alone until they share it: a shared filter is listed to every console user of the app.
 * Saving again under the same name replaces the condition (and keeps the sharing); only the owner
 * shares, stops sharing or deletes it. Filters saved before filters were per user were every
 * user's: they are kept shared.
 */
export const FILTERS_FILE = 'console-filters.sqlite';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS saved_filter (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  app TEXT NOT NULL,
  class TEXT NOT NULL,
  owner TEXT NOT NULL,
  name TEXT NOT NULL,
  where_json TEXT NOT NULL,
  saved_at TEXT NOT NULL,
  UNIQUE (app, class, owner, name)
);
`;

/** `shared` came with per-user filters; the filters already there were everyone's, so shared. */
const ADD_SHARED = 'ALTER TABLE saved_filter ADD COLUMN shared INTEGER NOT NULL DEFAULT 1';

interface Row {
  id: number;
  app: string;
  class: string;
  owner: string;
  name: string;
  where_json: string;
  saved_at: string;
  shared: number;
}

const toFilter = (r: Row): SavedFilter => ({
  id: r.id,
  className: r.class,
  owner: r.owner,
  name: r.name,
  where: JSON.parse(r.where_json) as Record<string, unknown>,
  savedAt: r.saved_at,
  shared: r.shared === 1,
});

export function openSavedFilters(dataDir: string): SavedFilterStore {
  mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, FILTERS_FILE);
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.exec(SCHEMA);
  const columns = db.prepare('PRAGMA table_info(saved_filter)').all() as Array<{ name: string }>;
  if (!columns.some((c) => c.name === 'shared')) db.exec(ADD_SHARED);
  try {
    chmodSync(file, 0o600);
  } catch {
    // best effort (e.g. a file system without modes)
  }
  const list = db.prepare(
    `SELECT * FROM saved_filter WHERE app = ? AND class = ? AND (owner = ? OR shared = 1)
     ORDER BY name, owner`,
  );
  // A new filter is its owner's alone; saving again under its name keeps its sharing.
  const upsert = db.prepare(
    `INSERT INTO saved_filter (app, class, owner, name, where_json, saved_at, shared) VALUES (?, ?, ?, ?, ?, ?, 0)
     ON CONFLICT (app, class, owner, name) DO UPDATE SET where_json = excluded.where_json, saved_at = excluded.saved_at`,
  );
  const byKey = db.prepare(
    'SELECT * FROM saved_filter WHERE app = ? AND class = ? AND owner = ? AND name = ?',
  );
  const byId = db.prepare('SELECT * FROM saved_filter WHERE app = ? AND id = ?');
  const share = db.prepare('UPDATE saved_filter SET shared = ? WHERE id = ?');
  const remove = db.prepare('DELETE FROM saved_filter WHERE id = ?');
  return {
    list: (app, className, viewer) => (list.all(app, className, viewer) as Row[]).map(toFilter),
    save(app, className, owner, name, where) {
      upsert.run(app, className, owner, name, JSON.stringify(where), new Date().toISOString());
      return toFilter(byKey.get(app, className, owner, name) as Row);
    },
    get(app, id) {
      const row = byId.get(app, id) as Row | undefined;
      return row ? toFilter(row) : null;
    },
    setShared(app, id, shared) {
      share.run(shared ? 1 : 0, id);
      return this.get(app, id)!;
    },
    delete(id) {
      remove.run(id);
    },
    close() {
      if (db.open) db.close();
    },
  };
}
