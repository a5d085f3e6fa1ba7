import { useQuery } from '@tanstack/react-query';
import { api, seg } from '../../../lib/api.ts';
import type { ApiDocument } from '../lib/operations.ts';

/** The service's API document through the bff: as master (every class) or as anonymous (the public's). */
export function useApiDocument(appId: string, as: 'master' | 'anonymous') {
  return useQuery({
    queryKey: ['apps', appId, 'openapi', as],
    queryFn: ({ signal }) => api.get<ApiDocument>(`/apps/${seg(appId)}/openapi.json`, { as }, signal),
  });
}

/** One row id of the class, for the examples of the operations on one row (none: a placeholder). */
export function useSomeRowId(appId: string, className: string) {
  return useQuery({
    queryKey: ['apps', appId, 'openapi-row', className],
    queryFn: ({ signal }) =>
      api.get<{ results: Array<{ objectId: string }> }>(
        `/apps/${seg(appId)}/classes/${seg(className)}`,
        { limit: 1, keys: 'objectId' },
        signal,
      ),
    select: (res) => res.results[0]?.objectId,
  });
}
