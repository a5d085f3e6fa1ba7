/**
 * The console's one user picker: every section that asks for a user (View as, the viewpoint
 * comparison, Why?, ACL and CLP editors, protected fields, role members, the API console, the
 * realtime inspector, Cloud's "run as") uses it, so each finds users the same way, works the same
 * from the keyboard and says the same when it finds nothing or cannot search.
 *
 * Search: the start of a username or of an email (both are stored lowercased), or an exact
 * objectId; ten users at most, by username. Keyboard: ↓ from the box goes to the matches, ↑ ↓
 * move between them, Enter picks (in the box: the first match), Escape clears the search.
 */
import { useQuery } from '@tanstack/react-query';
import { useEffect, useId, useRef, useState } from 'react';
import { api, seg } from '../lib/api.ts';

export interface UserHit {
  objectId: string;
  username?: string;
  email?: string;
}

/** How long typing must pause before the picker asks. */
export const SEARCH_DELAY_MS = 200;
export const MAX_MATCHES = 10;

const escapeRegex = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The users whose username or email starts with `text`, or whose objectId is `text`. */
export function userSearchWhere(text: string): Record<string, unknown> {
  const prefix = `^${escapeRegex(text.toLowerCase())}`;
  return { $or: [{ username: { $regex: prefix } }, { email: { $regex: prefix } }, { objectId: text }] };
}

function useUserMatches(appId: string, text: string) {
  return useQuery({
    queryKey: ['apps', appId, 'user-picker', text],
    enabled: text.length > 0,
    queryFn: ({ signal }) =>
      api
        .get<{ results: UserHit[] }>(
          `/apps/${seg(appId)}/users`,
          {
            where: JSON.stringify(userSearchWhere(text)),
            limit: MAX_MATCHES,
            keys: 'username,email',
            order: 'username',
          },
          signal,
        )
        .then((r) => r.results),
    staleTime: 10_000,
    retry: false,
  });
}

/** How a user is named in the console: username, else the objectId. */
export const userName = (u: UserHit): string => u.username ?? u.objectId;

export interface UserPickerProps {
  appId: string;
  /** The search box's accessible name. */
  label: string;
  onPick(user: UserHit): void;
  /** The accessible name of a match's button, when picking does something to name ("Add ann to Staff"). */
  optionLabel?(user: UserHit): string;
  /** A reason a match cannot be picked ("already a member"); shown instead of picking. */
  unavailable?(user: UserHit): string | undefined;
  placeholder?: string;
  testId?: string;
  /** Width of the search box (a Tailwind class). */
  width?: string;
}

export function UserPicker({
  appId,
  label,
  onPick,
  optionLabel,
  unavailable,
  placeholder = 'username or email',
  testId,
  width = 'w-56',
}: UserPickerProps) {
  const [text, setText] = useState('');
  const [asked, setAsked] = useState('');
  const box = useRef<HTMLInputElement>(null);
  const list = useRef<HTMLUListElement>(null);
  const listId = useId();
  useEffect(() => {
    const timer = setTimeout(() => setAsked(text.trim()), SEARCH_DELAY_MS);
    return () => clearTimeout(timer);
  }, [text]);
  const term = text.trim();
  const matches = useUserMatches(appId, asked);
  const settled = asked === term && !matches.isPending;
  const options = () => [...(list.current?.querySelectorAll<HTMLButtonElement>('button:enabled') ?? [])];

  const pick = (u: UserHit) => {
    setText('');
    setAsked('');
    onPick(u);
    box.current?.focus();
  };
  const clear = (e: React.KeyboardEvent) => {
    if (!text) return;
    // Only the search is cleared: a dialog around the picker stays open.
    e.preventDefault();
    e.stopPropagation();
    setText('');
    box.current?.focus();
  };
  const onBoxKey = (e: React.KeyboardEvent<HTMLInputElement>) => {
    if (e.key === 'Escape') return clear(e);
    if (e.key === 'ArrowDown') {
      e.preventDefault();
      options()[0]?.focus();
    }
    if (e.key === 'Enter' && term) {
      // Never submits a form around the picker: Enter picks the first match, or waits for one.
      e.preventDefault();
      if (settled) options()[0]?.click();
    }
  };
  const onListKey = (e: React.KeyboardEvent<HTMLUListElement>) => {
    if (e.key === 'Escape') return clear(e);
    if (e.key !== 'ArrowDown' && e.key !== 'ArrowUp') return;
    e.preventDefault();
    const all = options();
    const at = all.indexOf(document.activeElement as HTMLButtonElement);
    const next = e.key === 'ArrowDown' ? at + 1 : at - 1;
    if (next < 0) box.current?.focus();
    else all[Math.min(next, all.length - 1)]?.focus();
  };

  return (
    <span className="relative inline-block" data-testid={testId}>
      <input
        ref={box}
        aria-label={label}
        aria-controls={term ? listId : undefined}
        autoComplete="off"
        placeholder={placeholder}
        value={text}
        onChange={(e) => setText(e.target.value)}
        onKeyDown={onBoxKey}
        className={`${width} rounded-md border border-slate-300 bg-white px-2 py-1 text-sm dark:border-slate-600 dark:bg-slate-800`}
      />
      {term && (
        <ul
          ref={list}
          id={listId}
          aria-label={`${label}: matches`}
          onKeyDown={onListKey}
          data-testid="user-picker-matches"
          className="absolute left-0 top-full z-40 mt-1 max-h-60 w-72 overflow-auto rounded-md border border-slate-200 bg-white text-sm shadow-md dark:border-slate-700 dark:bg-slate-900"
        >
          {!settled ? (
            <li className="px-2 py-1 text-xs text-slate-500">Searching…</li>
          ) : matches.isError ? (
            <li role="alert" className="px-2 py-1 text-xs text-red-600">
              Could not search users: {matches.error.message}
            </li>
          ) : matches.data?.length === 0 ? (
            <li className="px-2 py-1 text-xs text-slate-500" data-testid="user-picker-none">
              No user matches “{term}”.
            </li>
          ) : (
            matches.data?.map((u) => {
              const reason = unavailable?.(u);
              return (
                <li key={u.objectId} className="flex items-center">
                  <button
                    type="button"
                    disabled={reason !== undefined}
                    aria-label={optionLabel?.(u)}
                    className="w-full px-2 py-1 text-left hover:bg-slate-100 focus:bg-indigo-100 focus:outline-none disabled:cursor-default disabled:opacity-60 dark:hover:bg-slate-800 dark:focus:bg-indigo-900"
                    onClick={() => pick(u)}
                  >
                    {userName(u)}
                    {u.email ? <span className="text-xs text-slate-500"> {u.email}</span> : null}
                    {reason ? <span className="ml-2 text-xs text-slate-500">{reason}</span> : null}
                  </button>
                </li>
              );
            })
          )}
        </ul>
      )}
    </span>
  );
}
