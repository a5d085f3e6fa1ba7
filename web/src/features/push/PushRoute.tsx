import { useParams } from 'react-router';
import { useCanWrite } from '../../lib/session.ts';
import { Compose } from './components/compose.tsx';
import { Installations } from './components/installations.tsx';
import { StatusList } from './components/status-list.tsx';

/** /apps/:appId/push: compose and send, the pushes with their live status, and the installations. */
export default function PushRoute() {
  const { appId = '' } = useParams();
  const canWrite = useCanWrite();
  return (
    <div className="mx-auto max-w-6xl space-y-6 p-6">
      <div>
        <h1 className="text-xl font-semibold">Push</h1>
        <p className="mt-1 text-sm text-slate-500 dark:text-slate-400">
          Notifications go to installations through APNs and FCM. Counts update as pushes run.
        </p>
      </div>
      {canWrite && <Compose appId={appId} />}
      <section aria-label="Pushes" className="space-y-2">
        <h2 className="text-base font-semibold">Pushes</h2>
        <StatusList appId={appId} />
      </section>
      <Installations appId={appId} />
    </div>
  );
}
