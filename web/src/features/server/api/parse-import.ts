import type { ConsoleParseImportStart, FromParseRun, ParseImportSource } from '@bds/client/protocol';
import { useMutation, useQuery } from '@tanstack/react-query';
import { api, seg } from '../../../lib/api.ts';

export type { ConsoleParseImportStart, FromParseRun, ParseImportSource };

/** How often the console asks about a running import. */
const POLL_MS = 1000;

const base = (appId: string) => `/apps/${seg(appId)}/transfer/parse`;

/** The parse-servers the bff is configured to import from (names and URLs, never their keys). */
export function useParseImportSources(appId: string) {
  return useQuery({
    queryKey: ['apps', appId, 'transfer', 'parse-sources'],
    queryFn: ({ signal }) =>
      api.get<{ results: ParseImportSource[] }>(
        `/apps/${seg(appId)}/transfer/parse-sources`,
        undefined,
        signal,
      ),
  });
}

/** Starts an import from a configured source (the bff adds its keys and calls the service). */
export function useStartParseImport(appId: string) {
  return useMutation({
    mutationFn: (start: ConsoleParseImportStart) => api.post<FromParseRun>(base(appId), start),
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
