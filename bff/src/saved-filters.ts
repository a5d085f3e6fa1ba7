import { chmodSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { SavedFilter, SavedFilterStore } from './context.ts';

/**
 * Saved data-browser filters, kept by the bff (`<dataDir>/console-filters.sqlite`) so every
 * console user of an app sees the team's filters from any browser. Each filter belongs to the
 * console user who saved it: saving again under the same name replaces it, and only its owner
 * deletes it.
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

interface Row {
  id: number;
  app: string;
  class: string;
  owner: string;
  name: string;
  where_json: string;
  saved_at: string;
}

const toFilter = (r: Row): SavedFilter => ({
  id: r.id,
  className: r.class,
  owner: r.owner,
  name: r.name,
  where: JSON.parse(r.where_json) as Record<string, unknown>,
  savedAt: r.saved_at,
});

export function openSavedFilters(dataDir: string): SavedFilterStore {
  mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, FILTERS_FILE);
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.exec(SCHEMA);
  try {
    chmodSync(file, 0o600);
  } catch {
    // best effort (e.g. a file system without modes)
  }
  const list = db.prepare('SELECT * FROM saved_filter WHERE app = ? AND class = ? ORDER BY name, owner');
  const upsert = db.prepare(
    `INSERT INTO saved_filter (app, class, owner, name, where_json, saved_at) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (app, class, owner, name) DO UPDATE SET where_json = excluded.where_json, saved_at = excluded.saved_at`,
  );
  const byKey = db.prepare(
    'SELECT * FROM saved_filter WHERE app = ? AND class = ? AND owner = ? AND name = ?',
  );
  const byId = db.prepare('SELECT * FROM saved_filter WHERE app = ? AND id = ?');
  const remove = db.prepare('DELETE FROM saved_filter WHERE id = ?');
  return {
    list: (app, className) => (list.all(app, className) as Row[]).map(toFilter),
    save(app, className, owner, name, where) {
      upsert.run(app, className, owner, name, JSON.stringify(where), new Date().toISOString());
      return toFilter(byKey.get(app, className, owner, name) as Row);
    },
    get(app, id) {
      const row = byId.get(app, id) as Row | undefined;
      return row ? toFilter(row) : null;
    },
    delete(id) {
      remove.run(id);
    },
    close() {
      if (db.open) db.close();
    },
  };
}
