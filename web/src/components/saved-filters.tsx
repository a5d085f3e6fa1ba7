/**
 * The class's saved filters as chips: the console user's own (which they may share with the
 * app's other console users, stop sharing, or delete) and those other users shared.
 */
import type { SavedFilter, Where } from '../lib/filter.ts';

export function SavedFilterList({
  saved,
  me,
  canSave,
  onApply,
  onDelete,
  onShare,
}: {
  saved: SavedFilter[];
  me: string;
  /** Saving, sharing and deleting are writes: not for read-only console users. */
  canSave: boolean;
  onApply(where: Where): void;
  onDelete(filter: SavedFilter): void;
  /** Without it, no sharing control (a read-only filter list). */
  onShare?(filter: SavedFilter, shared: boolean): void;
}) {
  return (
    <>
      {saved.map((s) => {
        const mine = s.owner === me;
        return (
          <span
            key={s.id}
            className="rounded bg-gray-100 px-1 dark:bg-gray-800"
            data-testid="saved-filter"
            data-shared={s.shared}
          >
            <button
              type="button"
              className="underline"
              onClick={() => onApply(s.where)}
              title={`${JSON.stringify(s.where)} — saved by ${s.owner}${s.shared ? ', shared' : ', yours only'}`}
            >
              {s.name}
            </button>
            {!mine && <span className="ml-1 text-xs text-gray-500">({s.owner})</span>}
            {mine && canSave && (
              <>
                {onShare && (
                  <button
                    type="button"
                    className="ml-1 text-xs text-blue-700 underline dark:text-blue-300"
                    aria-label={
                      s.shared ? `stop sharing saved filter ${s.name}` : `share saved filter ${s.name}`
                    }
                    title={
                      s.shared
                        ? 'Shared with every console user of this app: click to keep it yours only'
                        : 'Only you see it: click to share it with every console user of this app'
                    }
                    onClick={() => onShare(s, !s.shared)}
                  >
                    {s.shared ? 'shared' : 'share'}
                  </button>
                )}
                <button
                  type="button"
                  className="ml-1 text-xs"
                  aria-label={`delete saved filter ${s.name}`}
                  onClick={() => onDelete(s)}
                >
                  ✕
                </button>
              </>
            )}
          </span>
        );
      })}
    </>
  );
}
