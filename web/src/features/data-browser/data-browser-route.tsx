/**
 * Route `/apps/:appId/data/:className?`: the class list beside the open class (`ClassView`: the
 * grid, filters, editing, the row panel).
 */
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useCallback, useEffect, useRef, useState } from 'react';
import { useNavigate, useParams, useSearchParams } from 'react-router';
import { errorText } from '../../lib/api.ts';
import { useCanWrite } from '../../lib/session.ts';
import { toast } from '../../lib/toast.ts';
import { dataApi } from './api/bff.ts';
import { startClassLoad } from './api/early.ts';
import { dataBrowserKeys } from './api/query-keys.ts';
import { dataPath } from './components/cell.tsx';
import { ClassList } from './components/class-list.tsx';
import { ClassView } from './components/class-view.tsx';

/** Below this width the class list starts collapsed while a class is open. */
const NARROW = 1024;

export default function DataBrowserRoute() {
  const { appId = '', className } = useParams();
  const navigate = useNavigate();
  const qc = useQueryClient();
  const schemas = useQuery({
    queryKey: dataBrowserKeys.schemas(appId),
    queryFn: ({ signal }) => dataApi.schemas(appId, signal),
    staleTime: 30_000,
  });
  const list = schemas.data?.results ?? [];
  // The class's own schema is quick to answer: the grid can start from it while the schema list
  // (which counts every class) is still on its way.
  const own = useQuery({
    queryKey: dataBrowserKeys.schema(appId, className),
    queryFn: ({ signal }) => dataApi.schema(appId, className ?? '', signal),
    enabled: !!className && !schemas.data,
    staleTime: 30_000,
    retry: false,
  });
  const schema = list.find((s) => s.className === className) ?? (schemas.data ? undefined : own.data);
  const [params] = useSearchParams();
  // A class opened: its first rows and count start now, beside the schema list (the list's own
  // query runs at mount), not after it. Only on a class change: a new row or filter asks by itself.
  const paramsRef = useRef(params);
  paramsRef.current = params;
  useEffect(() => {
    if (className) startClassLoad(appId, className, paramsRef.current);
  }, [appId, className]);
  const [listOpen, setListOpen] = useState(() => !className || window.innerWidth >= NARROW);

  const canWrite = useCanWrite();
  const run = useCallback(
    async (label: string, fn: () => Promise<unknown>) => {
      try {
        await fn();
        toast.success(`${label}: done`);
        await qc.invalidateQueries({ queryKey: dataBrowserKeys.schemas(appId) });
        return true;
      } catch (err) {
        toast.error(err, `${label} refused`);
        return false;
      }
    },
    [appId, qc],
  );

  return (
    <div className="flex h-full min-h-0 flex-1" data-testid="data-browser">
      <ClassList
        appId={appId}
        schemas={list}
        current={className}
        run={run}
        canWrite={canWrite}
        open={listOpen}
        onToggle={() => setListOpen(!listOpen)}
      />
      <div className="flex min-w-0 flex-1 flex-col">
        {schemas.error && <p className="p-2 text-red-600">{errorText(schemas.error)}</p>}
        {!className && <p className="p-4 text-gray-500">Pick a class.</p>}
        {className && schemas.isSuccess && !schema && <p className="p-4">No class named {className}.</p>}
        {schema && (
          <ClassView
            key={`${appId}/${schema.className}`}
            appId={appId}
            schema={schema}
            schemas={list}
            run={run}
            canWrite={canWrite}
            onDropped={() => navigate(dataPath(appId, '').replace(/\/$/, ''))}
          />
        )}
      </div>
    </div>
  );
}
