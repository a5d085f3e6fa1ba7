/** The columns panel: which columns the grid shows, and a reset of the whole layout. */
import { type ColumnPrefs, emptyPrefs } from '../lib/prefs.ts';

export function ColumnChooser({
  columns,
  prefs,
  setPrefs,
}: {
  columns: string[];
  prefs: ColumnPrefs;
  setPrefs(prefs: ColumnPrefs): void;
}) {
  return (
    <div className="flex flex-wrap gap-3 border-b p-2 text-sm">
      {columns.map((c) => (
        <label key={c} className="flex items-center gap-1">
          <input
            type="checkbox"
            checked={!prefs.hidden.includes(c)}
            onChange={(e) =>
              setPrefs({
                ...prefs,
                hidden: e.target.checked ? prefs.hidden.filter((x) => x !== c) : [...prefs.hidden, c],
              })
            }
          />
          {c}
        </label>
      ))}
      <button type="button" className="underline" onClick={() => setPrefs(emptyPrefs())}>
        reset layout
      </button>
    </div>
  );
}
