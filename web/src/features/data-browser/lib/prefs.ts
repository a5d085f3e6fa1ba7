/** Per-class column layout kept in localStorage (saved filters live in the bff, shared by the team). */

export interface ColumnPrefs {
  order: string[];
  hidden: string[];
  pinned: string[];
  widths: Record<string, number>;
}

export const emptyPrefs = (): ColumnPrefs => ({ order: [], hidden: [], pinned: [], widths: {} });

const key = (kind: string, appId: string, cls: string) => `bds.data-browser.${kind}.${appId}.${cls}`;

function read<T>(k: string, fallback: T): T {
  try {
    const text = globalThis.localStorage?.getItem(k);
    return text ? (JSON.parse(text) as T) : fallback;
  } catch {
    return fallback;
  }
}

function write(k: string, value: unknown): void {
  try {
    globalThis.localStorage?.setItem(k, JSON.stringify(value));
  } catch {
    // storage full or disabled: preferences are a convenience
  }
}

export const loadColumnPrefs = (appId: string, cls: string): ColumnPrefs => ({
  ...emptyPrefs(),
  ...read<Partial<ColumnPrefs>>(key('columns', appId, cls), {}),
});
export const saveColumnPrefs = (appId: string, cls: string, p: ColumnPrefs) =>
  write(key('columns', appId, cls), p);

/** Columns in display order: pinned first, then the saved order, then new columns; hidden removed. */
export function arrangeColumns(all: string[], prefs: ColumnPrefs): { pinned: string[]; rest: string[] } {
  const known = new Set(all);
  const ordered = [
    ...prefs.order.filter((c) => known.has(c)),
    ...all.filter((c) => !prefs.order.includes(c)),
  ];
  const visible = ordered.filter((c) => !prefs.hidden.includes(c));
  return {
    pinned: visible.filter((c) => prefs.pinned.includes(c)),
    rest: visible.filter((c) => !prefs.pinned.includes(c)),
  };
}

/** Moves column `from` before column `to` in the order (a drag and drop). */
export function moveColumn(order: string[], from: string, to: string): string[] {
  if (from === to) return order;
  const out = order.filter((c) => c !== from);
  const idx = out.indexOf(to);
  out.splice(idx < 0 ? out.length : idx, 0, from);
  return out;
}
