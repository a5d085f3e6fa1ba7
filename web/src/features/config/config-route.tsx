import { useParams, useSearchParams } from 'react-router';
import { QueryState } from '../../components/query-state.tsx';
import { Tabs } from '../../components/ui/tabs.tsx';
import { useCanWrite } from '../../lib/session.ts';
import { useConfig } from './api/config.ts';
import { ConfigEditor } from './components/config-editor.tsx';
import { ConfigHistory } from './components/config-history.tsx';

const TABS = [
  { id: 'params', label: 'Parameters' },
  { id: 'history', label: 'History' },
] as const;

/** /apps/:appId/config?tab=params|history */
export default function ConfigRoute() {
  const { appId = '' } = useParams();
  const [search, setSearch] = useSearchParams();
  const tab = search.get('tab') === 'history' ? 'history' : 'params';
  const config = useConfig(appId);
  const canWrite = useCanWrite();

  return (
    <div className="mx-auto max-w-5xl p-6">
      <h1 className="text-xl font-semibold">Config</h1>
      <p className="mt-1 mb-4 text-sm text-slate-500 dark:text-slate-400">
        Parameters your apps read with <code className="font-mono">GET /config</code>. Master-key-only
        parameters are hidden from clients.
      </p>
      <Tabs tabs={TABS} current={tab} onSelect={(id) => setSearch(id === 'params' ? {} : { tab: id })} />
      {tab === 'history' ? (
        <ConfigHistory appId={appId} />
      ) : (
        <QueryState query={config} loading="Loading config…" failed="Could not load the config">
          {(doc) => (
            <ConfigEditor
              key={`${appId}:${config.dataUpdatedAt}`}
              appId={appId}
              doc={doc}
              canWrite={canWrite}
            />
          )}
        </QueryState>
      )}
    </div>
  );
}
