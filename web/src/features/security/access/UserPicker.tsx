import { useState } from 'react';
import { Input } from '../../../components/ui/input.tsx';
import { type UserHit, useUserSearch } from '../api/security.ts';

/** Finds a user by the start of their username or email (or their exact id) and hands it back. */
export function UserPicker({
  appId,
  label,
  onPick,
  testId,
}: {
  appId: string;
  /** The search box's accessible name. */
  label: string;
  onPick: (user: UserHit) => void;
  testId: string;
}) {
  const [text, setText] = useState('');
  const hits = useUserSearch(appId, text);
  return (
    <div className="relative" data-testid={testId}>
      <Input
        aria-label={label}
        placeholder="Username or email…"
        value={text}
        onChange={(e) => setText(e.target.value)}
        className="w-56"
      />
      {text.trim() && (
        <ul className="absolute z-10 mt-1 w-72 rounded-md border border-slate-200 bg-white shadow-md dark:border-slate-700 dark:bg-slate-900">
          {hits.isPending ? (
            <li className="px-2 py-1 text-xs text-slate-500">Searching…</li>
          ) : hits.isError ? (
            <li className="px-2 py-1 text-xs text-red-600">{hits.error.message}</li>
          ) : hits.data.length === 0 ? (
            <li className="px-2 py-1 text-xs text-slate-500">No user matches.</li>
          ) : (
            hits.data.map((u) => (
              <li key={u.objectId}>
                <button
                  type="button"
                  className="w-full px-2 py-1 text-left text-sm hover:bg-slate-100 dark:hover:bg-slate-800"
                  onClick={() => {
                    onPick(u);
                    setText('');
                  }}
                >
                  {u.username ?? u.objectId}
                  {u.email && <span className="ml-2 text-xs text-slate-500">{u.email}</span>}
                </button>
              </li>
            ))
          )}
        </ul>
      )}
    </div>
  );
}
