import { useNavigate } from 'react-router';
import type { AppSummary } from '../../features/apps/api/apps.ts';

/** Switches app, staying in the same section. */
export function AppSwitcher({
  apps,
  appId,
  section,
}: {
  apps: AppSummary[];
  appId: string;
  section: string;
}) {
  const navigate = useNavigate();
  return (
    <label className="flex items-center gap-2 text-sm">
      <span className="sr-only">App</span>
      <select
        aria-label="App"
        data-testid="app-switcher"
        value={appId}
        onChange={(e) => navigate(`/apps/${encodeURIComponent(e.target.value)}/${section}`)}
        className="rounded-md border border-slate-300 bg-white px-2 py-1 text-sm font-medium dark:border-slate-600 dark:bg-slate-800"
      >
        {apps.map((a) => (
          <option key={a.id} value={a.id}>
            {a.name}
          </option>
        ))}
      </select>
    </label>
  );
}
