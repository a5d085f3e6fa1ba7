import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { useParams } from 'react-router';
import { QueryState } from '../../components/query-state.tsx';
import { fetchSchemas } from '../../lib/schemas-api.ts';
import { Inspector } from './components/inspector.tsx';
import { ResumeWindowPanel } from './components/resume-window.tsx';

/** /apps/:appId/realtime: one or two (split) realtime inspectors on a class. */
export default function RealtimeRoute() {
  const { appId = '' } = useParams();
  const schemas = useQuery({
    queryKey: ['apps', appId, 'schemas'],
    queryFn: ({ signal }) => fetchSchemas(appId, signal),
  });
  const [className, setClassName] = useState('');
  const [split, setSplit] = useState(false);
  const list = schemas.data?.results ?? [];
  const schema = list.find((s) => s.className === className);

  return (
    <div className="p-6">
      <h1 className="text-xl font-semibold">Realtime</h1>
      <p className="mt-1 mb-4 text-sm text-slate-500 dark:text-slate-400">
        Watch the events the service sends a subscription, as master, a chosen user or anonymously; events a
        viewpoint does not receive show the delivery trace’s reason.
      </p>
      <ResumeWindowPanel appId={appId} />
      <QueryState query={schemas} loading="Loading classes…" failed="Could not load classes">
        {() => (
          <>
            <div className="mb-3 flex items-center gap-4 text-sm">
              <label>
                Class{' '}
                <select
                  aria-label="Class"
                  className="rounded border px-1 py-0.5 dark:bg-gray-800"
                  value={className}
                  onChange={(e) => setClassName(e.target.value)}
                >
                  <option value="">choose a class</option>
                  {list.map((s) => (
                    <option key={s.className} value={s.className}>
                      {s.className}
                    </option>
                  ))}
                </select>
              </label>
              <label className="flex items-center gap-1">
                <input type="checkbox" checked={split} onChange={(e) => setSplit(e.target.checked)} />
                Split view
              </label>
            </div>
            {schema && (
              <div className="flex flex-col gap-3 lg:flex-row" key={schema.className}>
                <Inspector appId={appId} index={1} schema={schema} />
                {split && <Inspector appId={appId} index={2} schema={schema} initialViewpoint="user" />}
              </div>
            )}
          </>
        )}
      </QueryState>
    </div>
  );
}
