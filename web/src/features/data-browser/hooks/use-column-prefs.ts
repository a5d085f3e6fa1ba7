/** The grid's column layout for one class (order, hidden, pinned, widths), kept in this browser. */
import { useState } from 'react';
import { type ColumnPrefs, loadColumnPrefs, saveColumnPrefs } from '../lib/prefs.ts';

export function useColumnPrefs(appId: string, cls: string): [ColumnPrefs, (prefs: ColumnPrefs) => void] {
  const [prefs, setPrefsState] = useState<ColumnPrefs>(() => loadColumnPrefs(appId, cls));
  const setPrefs = (p: ColumnPrefs) => {
    setPrefsState(p);
    saveColumnPrefs(appId, cls, p);
  };
  return [prefs, setPrefs];
}
