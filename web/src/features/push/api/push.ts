import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, seg } from '../../../lib/api.ts';

export interface Audience {
  where?: string;
  channels?: string;
}

export interface PushStatus {
  objectId: string;
  createdAt: string;
  status: 'pending' | 'scheduled' | 'running' | 'succeeded' | 'failed';
  pushTime?: { iso: string };
  payload?: string;
  numSent?: number;
  numFailed?: number;
  sentPerType?: Record<string, number>;
  failedPerType?: Record<string, number>;
  failureReasons?: Record<string, number>;
  errorMessage?: string;
}

/** Whether the service is configured to send pushes (the `push` option). */
export function usePushSetup(appId: string) {
  return useQuery({
    queryKey: ['apps', appId, 'push', 'setup'],
    queryFn: ({ signal }) =>
      api.get<{ configured: boolean }>(`/apps/${seg(appId)}/push/setup`, undefined, signal),
    staleTime: 60_000,
  });
}

export function useAudience(appId: string, audience: Audience, enabled: boolean) {
  return useQuery({
    queryKey: ['apps', appId, 'push', 'audience', audience],
    queryFn: ({ signal }) =>
      api.get<{ total: number; byType: Record<string, number> }>(
        `/apps/${seg(appId)}/push/audience`,
        { ...audience },
        signal,
      ),
    enabled,
    placeholderData: keepPreviousData,
  });
}

export const statusKey = (appId: string) => ['apps', appId, 'push', 'status'] as const;

/** The push status list, refreshed every second while the page is open. */
export function usePushStatus(appId: string) {
  return useQuery({
    queryKey: statusKey(appId),
    queryFn: ({ signal }) =>
      api
        .get<{ results: PushStatus[] }>(`/apps/${seg(appId)}/push/status`, undefined, signal)
        .then((r) => r.results),
    refetchInterval: 1000,
  });
}

export function useSendPush(appId: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (body: Record<string, unknown>) =>
      api.post<{ result: boolean; pushStatusId: string }>(`/apps/${seg(appId)}/push`, body),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: statusKey(appId) }),
  });
}
