/**
 * "View as": the viewpoint in the URL (`?as=anonymous`, `?as=user:<objectId>`,
 * `?as=roles:Editors,Viewers`) and what a viewpoint gets compared with another's.
 */
import type { Viewpoint } from '../../../lib/security-api.ts';

export type { Viewpoint };

/** The viewpoint of an `as` URL parameter; null (master) for none or anything malformed. */
export function parseViewpoint(text: string | null | undefined): Viewpoint | null {
  if (!text) return null;
  if (text === 'anonymous') return { kind: 'anonymous' };
  if (text.startsWith('user:') && text.length > 5) return { kind: 'user', userId: text.slice(5) };
  if (text.startsWith('roles:')) {
    const roles = text
      .slice(6)
      .split(',')
      .map((r) => r.trim())
      .filter(Boolean);
    return roles.length ? { kind: 'roles', roles } : null;
  }
  return null;
}

export function viewpointParam(vp: Viewpoint | null): string | null {
  if (!vp) return null;
  if (vp.kind === 'anonymous') return 'anonymous';
  if (vp.kind === 'user') return `user:${vp.userId}`;
  return `roles:${vp.roles.join(',')}`;
}

/** "ann", "anonymous (application keys only)", "roles Editors and Viewers". */
export function viewpointLabel(vp: Viewpoint | null, username?: string): string {
  if (!vp) return 'master';
  if (vp.kind === 'anonymous') return 'anonymous (application keys only)';
  if (vp.kind === 'user') return username ?? `user ${vp.userId}`;
  return `${vp.roles.length === 1 ? 'role' : 'roles'} ${vp.roles.join(', ')}`;
}

type Fields = Record<string, unknown>;

export interface RowDiff {
  objectId: string;
  /** Which side reads the row. */
  inLeft: boolean;
  inRight: boolean;
  /** Fields one side gets and the other does not (rows both sides read). */
  onlyLeft: string[];
  onlyRight: string[];
}

/**
 * Two viewpoints' results for the same query, row by row: rows only one side reads, and for the
 * rows both read, the fields only one side gets. In the order of the left results, then the
 * rows only the right side reads.
 */
export function diffResults(left: Fields[], right: Fields[]): RowDiff[] {
  const byId = (rows: Fields[]) => new Map(rows.map((r) => [String(r.objectId), r]));
  const l = byId(left);
  const r = byId(right);
  const ids = [...l.keys(), ...[...r.keys()].filter((id) => !l.has(id))];
  return ids.map((objectId) => {
    const a = l.get(objectId);
    const b = r.get(objectId);
    const ka = a ? Object.keys(a) : [];
    const kb = b ? Object.keys(b) : [];
    return {
      objectId,
      inLeft: !!a,
      inRight: !!b,
      onlyLeft: a && b ? ka.filter((k) => !(k in b)) : [],
      onlyRight: a && b ? kb.filter((k) => !(k in a)) : [],
    };
  });
}

export const differs = (d: RowDiff): boolean =>
  d.inLeft !== d.inRight || d.onlyLeft.length > 0 || d.onlyRight.length > 0;
