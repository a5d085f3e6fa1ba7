import { createHash } from 'node:crypto';

/** PostgreSQL's limit on identifier length (NAMEDATALEN - 1); SQLite has none, but one rule serves both. */
export const MAX_IDENTIFIER_BYTES = 63;

/**
 * The SQL name of a table, index or join table: the name itself when it fits in 63 bytes, else
 * its first 54 bytes and 8 hex digits of its SHA-256 (stable, and distinct for names that share
 * a long prefix). Class and field names are ASCII, so bytes are characters.
 */
export function sqlIdentifier(name: string): string {
  if (Buffer.byteLength(name) <= MAX_IDENTIFIER_BYTES) return name;
  const digest = createHash('sha256').update(name).digest('hex').slice(0, 8);
  return `${name.slice(0, MAX_IDENTIFIER_BYTES - 9)}_${digest}`;
}

export const tableName = (className: string): string => sqlIdentifier(className);

/** The table of a relation field: one row per (owning row, related row). */
export const joinTableName = (className: string, field: string): string =>
  sqlIdentifier(`_Join:${field}:${className}`);

export const indexName = (className: string, name: string): string => sqlIdentifier(`${className}:${name}`);
