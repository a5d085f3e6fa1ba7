import type { AutoIndexReport, PerformanceReport, ShapeReport } from '@bds/client/protocol';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, seg } from '../../../lib/api.ts';

export type { AutoIndexReport, PerformanceReport, ShapeReport } from '@bds/client/protocol';

export const performanceKey = (appId: string) => ['apps', appId, 'performance'] as const;

/** The shapes of the app's finds and its automatic indexes (the service's Performance API, through the bff). */
export function usePerformance(appId: string) {
  return useQuery({
    queryKey: performanceKey(appId),
    queryFn: ({ signal }) => api.get<PerformanceReport>(`/apps/${seg(appId)}/performance`, undefined, signal),
  });
}

/** Builds the index of a shape that scans now (the service picks its keys). */
export function useBuildIndex(appId: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (shape: ShapeReport) =>
      api.post<AutoIndexReport>(`/apps/${seg(appId)}/performance/classes/${seg(shape.className)}/indexes`, {
        shape: shape.shape,
      }),
    onSettled: () => queryClient.invalidateQueries({ queryKey: performanceKey(appId) }),
  });
}

/** Drops an automatic index. */
export function useDropIndex(appId: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (index: AutoIndexReport) =>
      api.delete(
        `/apps/${seg(appId)}/performance/classes/${seg(index.className)}/indexes/${seg(index.name)}`,
      ),
    onSettled: () => queryClient.invalidateQueries({ queryKey: performanceKey(appId) }),
  });
}
