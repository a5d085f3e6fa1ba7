import { chmodSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { scrub } from '@bds/client/protocol';
import Database from 'better-sqlite3';
import type { AuditEntry, AuditLog } from '../context.ts';

/**
 * The console's audit log: an append-only table in its own SQLite file
 * (`<dataDir>/console-audit.sqlite`, WAL). There is no update or delete API, and triggers abort
 * any UPDATE or DELETE that reaches the table by other means.
 */

export const AUDIT_FILE = 'console-audit.sqlite';
export const AUDIT_DEFAULT_LIMIT = 100;
export const AUDIT_MAX_LIMIT = 1000;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS audit (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at TEXT NOT NULL,
  user TEXT NOT NULL,
  app TEXT NOT NULL,
  action TEXT NOT NULL,
  target TEXT NOT NULL,
  before TEXT,
  after TEXT
);
CREATE INDEX IF NOT EXISTS audit_app ON audit (app, id);
CREATE INDEX IF NOT EXISTS audit_user ON audit (user, id);
CREATE INDEX IF NOT EXISTS audit_at ON audit (at);
CREATE TRIGGER IF NOT EXISTS audit_no_update BEFORE UPDATE ON audit
BEGIN SELECT RAISE(ABORT, 'the console audit log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_no_delete BEFORE DELETE ON audit
BEGIN SELECT RAISE(ABORT, 'the console audit log is append-only'); END;
`;

interface Row {
  id: number;
  at: string;
  user: string;
  app: string;
  action: string;
  target: string;
  before: string | null;
  after: string | null;
}

export type AuditFilter = Parameters<AuditLog['list']>[0];

const encode = (value: unknown): string | null =>
  value === undefined ? null : JSON.stringify(scrub(value) ?? null);
const decode = (text: string | null): unknown => (text === null ? null : JSON.parse(text));
/** `LIKE` with `\` as the escape character. */
const likeEscape = (s: string): string => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * The action names a filter word stands for. A word without a dot also stands for its plural or
 * singular, so `row` finds `rows.import` and the bulk entries as well as `row.update`.
 */
function actionForms(action: string): string[] {
  if (action.includes('.')) return [action];
  return [action, action.endsWith('s') ? action.slice(0, -1) : `${action}s`];
}

export function openAuditLog(dataDir: string): AuditLog {
  mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, AUDIT_FILE);
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(SCHEMA);
  try {
    chmodSync(file, 0o600);
  } catch {
    // best effort (e.g. a file system without modes)
  }
  const insert = db.prepare(
    'INSERT INTO audit (at, user, app, action, target, before, after) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );

  return {
    record(entry) {
      insert.run(
        new Date().toISOString(),
        entry.user,
        entry.app,
        entry.action,
        entry.target,
        encode(entry.before),
        encode(entry.after),
      );
    },
    list(filter = {}) {
      const clauses: string[] = [];
      const args: unknown[] = [];
      if (filter.app !== undefined) {
        clauses.push('app = ?');
        args.push(filter.app);
      }
      if (filter.user !== undefined) {
        clauses.push('user = ?');
        args.push(filter.user);
      }
      if (filter.action !== undefined) {
        // `row` matches `row` and `row.create`, `row.update`, ... (and `rows`, `rows.import`, ...)
        const forms = actionForms(filter.action);
        clauses.push(`(${forms.map(() => "action = ? OR action LIKE ? ESCAPE '\\'").join(' OR ')})`);
        for (const form of forms) args.push(form, `${likeEscape(form)}.%`);
      }
      if (filter.target !== undefined) {
        // `GameScore` matches `GameScore`, `GameScore/<objectId>` and `GameScore.<field or index>`
        clauses.push("(target = ? OR target LIKE ? ESCAPE '\\' OR target LIKE ? ESCAPE '\\')");
        args.push(filter.target, `${likeEscape(filter.target)}/%`, `${likeEscape(filter.target)}.%`);
      }
      if (filter.since !== undefined) {
        clauses.push('at >= ?');
        args.push(filter.since);
      }
      if (filter.until !== undefined) {
        clauses.push('at <= ?');
        args.push(filter.until);
      }
      if (filter.before !== undefined) {
        clauses.push('id < ?');
        args.push(filter.before);
      }
      const limit = Math.min(Math.max(1, Math.trunc(filter.limit ?? AUDIT_DEFAULT_LIMIT)), AUDIT_MAX_LIMIT);
      const where = clauses.length ? `WHERE ${clauses.join(' AND ')}` : '';
      const rows = db
        .prepare(`SELECT * FROM audit ${where} ORDER BY id DESC LIMIT ?`)
        .all(...args, limit) as Row[];
      return rows.map(
        (r): AuditEntry => ({
          id: r.id,
          at: r.at,
          user: r.user,
          app: r.app,
          action: r.action,
          target: r.target,
          before: decode(r.before),
          after: decode(r.after),
        }),
      );
    },
    close() {
      if (db.open) db.close();
    },
  };
}
