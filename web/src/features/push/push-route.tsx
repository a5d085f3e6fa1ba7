import { useParams } from 'react-router';
import { InstallationsTable } from '../../components/installations-table.tsx';
import { useCanWrite } from '../../lib/session.ts';
import { usePushSetup } from './api/push.ts';
import { Compose } from './components/compose.tsx';
import { StatusList } from './components/status-list.tsx';

/** The `push` option as the README shows it (credentials elided). */
const PUSH_OPTION_EXAMPLE = `"push": {
  "apns": { "keyId": "…", "teamId": "…", "key": "-----BEGIN PRIVATE KEY-----…", "topic": "com.example.app" },
  "fcm": { "projectId": "…", "clientEmail": "…", "privateKey": "-----BEGIN PRIVATE KEY-----…" }
}`;

/** Said when the section opens: without the `push` option the service sends nothing. */
function NotConfigured() {
  return (
    <div
      role="status"
      data-testid="push-off"
      className="rounded-lg border border-amber-300 bg-amber-50 p-4 text-sm dark:border-amber-700 dark:bg-amber-950"
    >
      <p className="font-medium">Push is not configured: the service sends no notifications.</p>
      <p className="mt-1">
        Start the service with the option <code className="font-mono">push</code> holding APNs and/or FCM
        credentials (README, "Files, push, analytics, aggregation and idempotency"), then reload this page:
      </p>
      <pre className="mt-2 overflow-auto rounded bg-white p-2 font-mono text-xs dark:bg-slate-900">
        {PUSH_OPTION_EXAMPLE}
      </pre>
    </div>
  );
}

/** /apps/:appId/push: compose and send, the pushes with their live status, and the installations. */
export default function PushRoute() {
  const { appId = '' } = useParams();
  const canWrite = useCanWrite();
  const setup = usePushSetup(appId);
  const configured = setup.data?.configured;
  return (
    <div className="mx-auto max-w-6xl space-y-6 p-6">
      <div>
        <h1 className="text-xl font-semibold">Push</h1>
        <p className="mt-1 text-sm text-slate-500 dark:text-slate-400">
          Notifications go to installations through APNs and FCM. Counts update as pushes run.
        </p>
      </div>
      {configured === false && <NotConfigured />}
      {/* If the setup cannot be read, composing still works: a send then says what is wrong. */}
      {canWrite && (configured || setup.isError) && <Compose appId={appId} />}
      <section aria-label="Pushes" className="space-y-2">
        <h2 className="text-base font-semibold">Pushes</h2>
        <StatusList appId={appId} />
      </section>
      <section aria-label="Installations" className="space-y-2">
        <h2 className="text-base font-semibold">Installations</h2>
        <InstallationsTable appId={appId} />
      </section>
    </div>
  );
}
