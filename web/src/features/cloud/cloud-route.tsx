import { useParams, useSearchParams } from 'react-router';
import { QueryState } from '../../components/query-state.tsx';
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
      <QueryState query={code} loading="Loading cloud code…" failed="Could not load cloud code">
        {(inventory) =>
          tab === 'functions' ? (
            <FunctionsPanel appId={appId} code={inventory} canWrite={canWrite} />
          ) : tab === 'jobs' ? (
            <JobsPanel appId={appId} jobs={inventory.jobs} canWrite={canWrite} />
          ) : tab === 'schedules' ? (
            <SchedulesPanel appId={appId} jobs={inventory.jobs} canWrite={canWrite} />
          ) : tab === 'triggers' ? (
            <TriggersPanel code={inventory} />
          ) : (
            <HooksPanel appId={appId} code={inventory} canWrite={canWrite} />
          )
        }
      </QueryState>
    </div>
  );
}
