import type { FromParseRun, FromParseStart } from '@bds/client/protocol';
import { useMutation, useQuery } from '@tanstack/react-query';
import { api, seg } from '../../../lib/api.ts';

export type { FromParseRun, FromParseStart };

/** How often the console asks about a running import. */
const POLL_MS = 1000;

const base = (appId: string) => `/apps/${seg(appId)}/transfer/parse`;

/** Starts an import from parse-server (the bff proxies the service's master-only route). */
export function useStartParseImport(appId: string) {
  return useMutation({
    mutationFn: (start: FromParseStart) => api.post<FromParseRun>(base(appId), start),
  });
}

/** A run's progress, asked again every second while it runs. */
export function useParseImport(appId: string, runId: string | null) {
  return useQuery({
    queryKey: ['apps', appId, 'transfer', 'parse', runId],
    queryFn: ({ signal }) => api.get<FromParseRun>(`${base(appId)}/${seg(runId!)}`, undefined, signal),
    enabled: runId !== null,
    refetchInterval: (query) => (query.state.data?.status === 'running' ? POLL_MS : false),
  });
}
