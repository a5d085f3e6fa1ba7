import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import { useNavigate } from 'react-router';
import { logout } from '../../features/auth/api/session.ts';
import { api } from '../../lib/api.ts';
import type { ConsoleUser } from '../../lib/session.ts';
import { sessionKey } from '../../lib/session.ts';
import { toast } from '../../lib/toast.ts';

export function UserMenu({ user, onShowShortcuts }: { user: ConsoleUser; onShowShortcuts: () => void }) {
  const [open, setOpen] = useState(false);
  const ref = useRef<HTMLDivElement>(null);
  const queryClient = useQueryClient();
  const navigate = useNavigate();

  useEffect(() => {
    if (!open) return;
    const close = (e: MouseEvent) => {
      if (!ref.current?.contains(e.target as Node)) setOpen(false);
    };
    document.addEventListener('mousedown', close);
    return () => document.removeEventListener('mousedown', close);
  }, [open]);

  /** Plain logout ends this browser's session; "everywhere" ends every session of this user. */
  const doLogout = async (everywhere = false) => {
    setOpen(false);
    try {
      if (everywhere) await api.post<{ ok: true; ended: number }>('/logout-everywhere');
      else await logout();
    } catch (err) {
      toast.error(err, 'Logout failed');
      return;
    }
    queryClient.clear();
    queryClient.setQueryData(sessionKey, null);
    navigate('/login', { replace: true });
    toast.info(everywhere ? 'Signed out everywhere' : 'Logged out');
  };

  const item = 'block w-full px-3 py-1.5 text-left text-sm hover:bg-slate-100 dark:hover:bg-slate-700';
  return (
    <div ref={ref} className="relative">
      <button
        type="button"
        aria-haspopup="menu"
        aria-expanded={open}
        data-testid="user-menu"
        onClick={() => setOpen((o) => !o)}
        className="flex items-center gap-2 rounded-md px-2 py-1 text-sm hover:bg-slate-100 dark:hover:bg-slate-800"
      >
        <span className="flex size-6 items-center justify-center rounded-full bg-indigo-600 text-xs font-semibold text-white uppercase">
          {user.username.slice(0, 1)}
        </span>
        <span className="hidden sm:inline">{user.username}</span>
      </button>
      {open && (
        <div
          role="menu"
          className="absolute right-0 z-40 mt-1 w-52 rounded-md border border-slate-200 bg-white py-1 shadow-lg dark:border-slate-700 dark:bg-slate-800"
        >
          <p className="px-3 py-1.5 text-xs text-slate-500 dark:text-slate-400">
            {user.username} · {user.role === 'admin' ? 'admin' : 'read-only'}
          </p>
          <button
            type="button"
            role="menuitem"
            className={item}
            onClick={() => {
              setOpen(false);
              onShowShortcuts();
            }}
          >
            Keyboard shortcuts <span className="float-right text-slate-400">?</span>
          </button>
          <button type="button" role="menuitem" className={item} onClick={() => doLogout()}>
            Log out
          </button>
          {user.role === 'admin' && (
            <button
              type="button"
              role="menuitem"
              className={item}
              title="End your console sessions in every browser"
              onClick={() => doLogout(true)}
            >
              Sign out everywhere
            </button>
          )}
        </div>
      )}
    </div>
  );
}
