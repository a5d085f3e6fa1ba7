import { sameValue } from './values.ts';

export interface ConfigDoc {
  params: Record<string, unknown>;
  masterKeyOnly?: Record<string, boolean>;
}

export type ChangeKind = 'added' | 'removed' | 'changed' | 'unchanged';

export interface ConfigChange {
  name: string;
  kind: ChangeKind;
  before?: unknown;
  after?: unknown;
  /** masterKeyOnly before/after (only set when it changed). */
  flag?: { before: boolean; after: boolean };
}

/** What changed from `before` to `after`, by parameter name (value and/or masterKeyOnly flag). */
export function diffConfig(
  before: ConfigDoc | null | undefined,
  after: ConfigDoc | null | undefined,
): ConfigChange[] {
  const b = before?.params ?? {};
  const a = after?.params ?? {};
  const bf = before?.masterKeyOnly ?? {};
  const af = after?.masterKeyOnly ?? {};
  const names = [...new Set([...Object.keys(b), ...Object.keys(a)])].sort();
  const changes: ConfigChange[] = [];
  for (const name of names) {
    const inB = Object.hasOwn(b, name);
    const inA = Object.hasOwn(a, name);
    const flagB = Boolean(bf[name]);
    const flagA = inA && Boolean(af[name]);
    const flag = flagB !== flagA && inA ? { before: flagB, after: flagA } : undefined;
    if (!inB)
      changes.push({
        name,
        kind: 'added',
        after: a[name],
        ...(flagA ? { flag: { before: false, after: true } } : {}),
      });
    else if (!inA) changes.push({ name, kind: 'removed', before: b[name] });
    else if (!sameValue(b[name], a[name]))
      changes.push({ name, kind: 'changed', before: b[name], after: a[name], ...(flag ? { flag } : {}) });
    else if (flag) changes.push({ name, kind: 'unchanged', before: b[name], after: a[name], flag });
  }
  return changes;
}

/** The PUT /config body that turns `before` into `after` (deletes as `{__op: 'Delete'}`). */
export function buildUpdate(changes: ConfigChange[]): Required<ConfigDoc> {
  const params: Record<string, unknown> = {};
  const masterKeyOnly: Record<string, boolean> = {};
  for (const c of changes) {
    if (c.kind === 'removed') params[c.name] = { __op: 'Delete' };
    else if (c.kind !== 'unchanged') params[c.name] = c.after;
    if (c.flag) masterKeyOnly[c.name] = c.flag.after;
  }
  return { params, masterKeyOnly };
}
