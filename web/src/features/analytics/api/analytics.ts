import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { api, seg } from '../../../lib/api.ts';

export interface EventCount {
  name: string;
  bucket: string;
  count: number;
}

export interface AnalyticsFilters {
  interval: 'hour' | 'day';
  since: string;
  until: string;
  dimension: string;
  value: string;
}

export function useEventCounts(appId: string, f: AnalyticsFilters) {
  return useQuery({
    queryKey: ['apps', appId, 'analytics', f],
    queryFn: ({ signal }) =>
      api.get<{ enabled: boolean; results: EventCount[] }>(
        `/apps/${seg(appId)}/analytics`,
        {
          interval: f.interval,
          since: f.since ? new Date(f.since).toISOString() : undefined,
          until: f.until ? new Date(f.until).toISOString() : undefined,
          dimensions: f.dimension && f.value ? JSON.stringify({ [f.dimension]: f.value }) : undefined,
        },
        signal,
      ),
    placeholderData: keepPreviousData,
  });
}
