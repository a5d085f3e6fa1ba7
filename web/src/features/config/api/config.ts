import type { AuditEntry } from '@bds/client/protocol';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, seg } from '../../../lib/api.ts';
import type { ConfigDoc } from '../lib/diff.ts';

export type { AuditEntry } from '@bds/client/protocol';

export const configKey = (appId: string) => ['apps', appId, 'config'] as const;
export const configHistoryKey = (appId: string) => ['apps', appId, 'config', 'history'] as const;

export function useConfig(appId: string) {
  return useQuery({
    queryKey: configKey(appId),
    queryFn: ({ signal }) => api.get<ConfigDoc>(`/apps/${seg(appId)}/config`, undefined, signal),
  });
}

export function useSaveConfig(appId: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (body: Required<ConfigDoc>) => api.put<ConfigDoc>(`/apps/${seg(appId)}/config`, body),
    onSuccess: (doc) => {
      queryClient.setQueryData(configKey(appId), doc);
      void queryClient.invalidateQueries({ queryKey: configHistoryKey(appId) });
    },
  });
}

/** Config changes made through the console, newest first, from the audit log. */
export function useConfigHistory(appId: string, enabled: boolean) {
  return useQuery({
    queryKey: configHistoryKey(appId),
    queryFn: ({ signal }) =>
      api
        .get<{ results: AuditEntry[]; next: number | null }>(
          '/audit',
          { app: appId, action: 'config.update', limit: 50 },
          signal,
        )
        .then((r) => r.results),
    enabled,
  });
}
