import { useQuery } from '@tanstack/react-query';
import { api } from '../../../lib/api.ts';

export interface AppSummary {
  id: string;
  name: string;
  serverURL: string;
}

export const appsKey = ['apps'] as const;

export function useApps(enabled = true) {
  return useQuery({
    queryKey: appsKey,
    queryFn: () => api.get<{ results: AppSummary[] }>('/apps').then((r) => r.results),
    staleTime: 5 * 60_000,
    enabled,
  });
}
