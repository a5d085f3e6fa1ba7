import { Navigate } from 'react-router';
import { Spinner } from '../../components/ui/spinner.tsx';
import { useApps } from '../../features/apps/api/apps.ts';

/** `/`: opens the first app the user may see (the last one used when it is still there). */
export default function HomeRoute() {
  const apps = useApps();
  if (apps.isPending) return <Spinner label="Loading apps…" />;
  if (apps.isError)
    return <p className="p-6 text-sm text-red-600">Could not load apps: {apps.error.message}</p>;
  const list = apps.data;
  if (list.length === 0) return <p className="p-6 text-sm">This console user has no apps.</p>;
  let last: string | null = null;
  try {
    last = localStorage.getItem('bds-console-last-app');
  } catch {}
  const target = list.find((a) => a.id === last) ?? list[0]!;
  return <Navigate to={`/apps/${encodeURIComponent(target.id)}/data`} replace />;
}
