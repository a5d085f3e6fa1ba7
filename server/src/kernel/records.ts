import type { Path } from './query.ts';
import type { FieldType } from './schema.ts';

/** A row as the service sees it: wire-form values keyed by field name. */
export type Row = Record<string, unknown>;

/** Access control list in stored form: principals allowed to read and to write. */
export interface StoredAcl {
  read: string[];
  write: string[];
}

/** A row's ACL on the wire: principal -> {read?, write?}. */
export type WireAcl = Record<string, { read?: boolean; write?: boolean }>;

export interface OrderKey {
  path: Path;
  descending: boolean;
}

/** One change to a field in an update; values are in wire form and already validated. */
export type FieldWrite =
  | { field: string; subPath: string[]; kind: 'set'; value: unknown; type: FieldType }
  | { field: string; subPath: string[]; kind: 'delete' }
  | { field: string; subPath: string[]; kind: 'increment'; amount: number }
  | { field: string; subPath: string[]; kind: 'add' | 'addUnique' | 'remove'; values: unknown[] };

export interface RelationChange {
  field: string;
  add: string[];
  remove: string[];
}

/** Wire ACL -> stored form (`null` keeps "no ACL": a public row). */
export function storedAcl(acl: WireAcl | undefined | null): StoredAcl | null {
  if (!acl) return null;
  const out: StoredAcl = { read: [], write: [] };
  for (const [principal, perms] of Object.entries(acl)) {
    if (perms?.read === true) out.read.push(principal);
    if (perms?.write === true) out.write.push(principal);
  }
  return out;
}
