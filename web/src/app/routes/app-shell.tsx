import { Suspense, useEffect, useState } from 'react';
import { NavLink, Outlet, useLocation, useNavigate, useParams } from 'react-router';
import { Spinner } from '../../components/ui/spinner.tsx';
import { useApps } from '../../features/apps/api/apps.ts';
import { useSession } from '../../lib/session.ts';
import { useShortcut, useShortcutListener } from '../../lib/shortcuts.ts';
import { cycleTheme } from '../../lib/theme.ts';
import { AppSwitcher } from '../components/app-switcher.tsx';
import { ShortcutsHelp } from '../components/shortcuts-help.tsx';
import { ThemeToggle } from '../components/theme-toggle.tsx';
import { UserMenu } from '../components/user-menu.tsx';
import { SECTIONS } from '../sections.ts';

function SectionShortcut({
  appId,
  slug,
  label,
  keyName,
}: {
  appId: string;
  slug: string;
  label: string;
  keyName: string;
}) {
  const navigate = useNavigate();
  useShortcut(
    `g ${keyName}`,
    `Go to ${label}`,
    () => navigate(`/apps/${encodeURIComponent(appId)}/${slug}`),
    'Navigation',
  );
  return null;
}

/** Below this width the sections sidebar starts collapsed. */
const NARROW_SHELL = 1024;

/** The console frame for one app: top bar (app switcher, theme, user menu), sidebar, section. */
export default function AppShell() {
  const { appId = '' } = useParams();
  const location = useLocation();
  const session = useSession();
  const apps = useApps();
  const [helpOpen, setHelpOpen] = useState(false);
  // On a narrow window the sections collapse to a button, leaving the width to the page.
  const [navOpen, setNavOpen] = useState(() => window.innerWidth >= NARROW_SHELL);
  const section = location.pathname.split('/')[3] ?? 'data';

  useShortcutListener();
  useShortcut('?', 'Show keyboard shortcuts', () => setHelpOpen(true));
  useShortcut('t', 'Switch theme (system, light, dark)', () => cycleTheme());

  useEffect(() => {
    try {
      localStorage.setItem('bds-console-last-app', appId);
    } catch {}
  }, [appId]);

  const user = session.data;
  if (!user) return null;
  const app = apps.data?.find((a) => a.id === appId);
  const unknownApp = apps.isSuccess && !app;

  return (
    <div className="flex h-full flex-col">
      <header className="flex h-12 shrink-0 items-center gap-4 border-b border-slate-200 px-4 dark:border-slate-800">
        <button
          type="button"
          aria-label={navOpen ? 'Hide sections' : 'Show sections'}
          aria-expanded={navOpen}
          title={navOpen ? 'Hide sections' : 'Show sections'}
          onClick={() => setNavOpen(!navOpen)}
          className="rounded px-1.5 text-lg leading-none text-slate-500 hover:bg-slate-100 dark:hover:bg-slate-800"
        >
          ☰
        </button>
        <span className="font-semibold">Console</span>
        {apps.data && apps.data.length > 0 && (
          <AppSwitcher apps={apps.data} appId={app ? appId : (apps.data[0]?.id ?? '')} section={section} />
        )}
        <div className="ml-auto flex items-center gap-3">
          <ThemeToggle />
          <UserMenu user={user} onShowShortcuts={() => setHelpOpen(true)} />
        </div>
      </header>
      <div className="flex min-h-0 flex-1">
        <nav
          aria-label="Sections"
          hidden={!navOpen}
          className="w-48 shrink-0 overflow-y-auto border-r border-slate-200 bg-slate-50 p-2 dark:border-slate-800 dark:bg-slate-900"
        >
          <ul className="space-y-0.5">
            {SECTIONS.map((s) => (
              <li key={s.slug}>
                <NavLink
                  to={`/apps/${encodeURIComponent(appId)}/${s.slug}`}
                  className={({ isActive }) =>
                    `flex items-center justify-between rounded-md px-3 py-1.5 text-sm ${
                      isActive
                        ? 'bg-indigo-100 font-medium text-indigo-900 dark:bg-indigo-900/50 dark:text-indigo-100'
                        : 'text-slate-700 hover:bg-slate-200/60 dark:text-slate-300 dark:hover:bg-slate-800'
                    }`
                  }
                >
                  {s.label}
                  {!s.ready && <span className="text-[10px] text-slate-400 uppercase">soon</span>}
                </NavLink>
                <SectionShortcut appId={appId} slug={s.slug} label={s.label} keyName={s.key} />
              </li>
            ))}
          </ul>
        </nav>
        <main className="min-w-0 flex-1 overflow-auto">
          {unknownApp ? (
            <p className="p-8 text-sm">No app with id “{appId}” in this console.</p>
          ) : (
            <Suspense fallback={<Spinner />}>
              <Outlet />
            </Suspense>
          )}
        </main>
      </div>
      <ShortcutsHelp open={helpOpen} onClose={() => setHelpOpen(false)} />
    </div>
  );
}
