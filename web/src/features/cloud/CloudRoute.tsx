import { useParams, useSearchParams } from 'react-router';
import { Spinner } from '../../components/ui/spinner.tsx';
import { Tabs } from '../../components/ui/tabs.tsx';
import { useCloudCode } from '../../hooks/use-cloud-code.ts';
import { useCanWrite } from '../../lib/session.ts';
import { FunctionsPanel } from './components/functions-panel.tsx';
import { HooksPanel } from './components/hooks-panel.tsx';
import { JobsPanel } from './components/jobs-panel.tsx';
import { SchedulesPanel } from './components/schedules-panel.tsx';
import { TriggersPanel } from './components/triggers-panel.tsx';

const TABS = [
  { id: 'functions', label: 'Functions' },
  { id: 'jobs', label: 'Jobs' },
  { id: 'schedules', label: 'Schedules' },
  { id: 'triggers', label: 'Triggers' },
  { id: 'hooks', label: 'Hooks' },
] as const;
type Tab = (typeof TABS)[number]['id'];

/** /apps/:appId/cloud?tab=functions|jobs|schedules|triggers|hooks */
export default function CloudRoute() {
  const { appId = '' } = useParams();
  const [search, setSearch] = useSearchParams();
  const tab = (TABS.find((t) => t.id === search.get('tab'))?.id ?? 'functions') as Tab;
  const code = useCloudCode(appId);
  const canWrite = useCanWrite();

  return (
    <div className="mx-auto max-w-6xl p-6">
      <h1 className="text-xl font-semibold">Cloud</h1>
      <p className="mt-1 mb-4 text-sm text-slate-500 dark:text-slate-400">
        Server-side logic: cloud code functions and jobs, the schedules the service runs, every trigger, and
        webhooks.
      </p>
      <Tabs tabs={TABS} current={tab} onSelect={(id) => setSearch(id === 'functions' ? {} : { tab: id })} />
      {code.isPending ? (
        <Spinner label="Loading cloud code…" />
      ) : code.isError ? (
        <p role="alert" className="text-sm text-red-600">
          Could not load cloud code: {code.error.message}
        </p>
      ) : tab === 'functions' ? (
        <FunctionsPanel appId={appId} code={code.data} canWrite={canWrite} />
      ) : tab === 'jobs' ? (
        <JobsPanel appId={appId} jobs={code.data.jobs} canWrite={canWrite} />
      ) : tab === 'schedules' ? (
        <SchedulesPanel appId={appId} jobs={code.data.jobs} canWrite={canWrite} />
      ) : tab === 'triggers' ? (
        <TriggersPanel code={code.data} />
      ) : (
        <HooksPanel appId={appId} code={code.data} canWrite={canWrite} />
      )}
    </div>
  );
}
