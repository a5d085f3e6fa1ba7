import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, seg } from '../../../lib/api.ts';

export interface StoredFile {
  name: string;
  contentType: string;
  size: number;
  createdAt: string;
  url: string;
}

/** A File value that names no file the service stored (written before names were checked). */
export interface ForeignFileValue {
  className: string;
  objectId: string;
  field: string;
  name: string;
}

export const orphansKey = (appId: string) => ['apps', appId, 'files', 'orphans'] as const;
export const foreignKey = (appId: string) => ['apps', appId, 'files', 'foreign'] as const;

export function useOrphans(appId: string) {
  return useQuery({
    queryKey: orphansKey(appId),
    queryFn: ({ signal }) =>
      api
        .get<{ results: StoredFile[] }>(`/apps/${seg(appId)}/files/orphans`, undefined, signal)
        .then((r) => r.results),
  });
}

export function useForeignFileValues(appId: string) {
  return useQuery({
    queryKey: foreignKey(appId),
    queryFn: ({ signal }) =>
      api
        .get<{ results: ForeignFileValue[] }>(`/apps/${seg(appId)}/files/foreign`, undefined, signal)
        .then((r) => r.results),
  });
}

export function useDeleteFile(appId: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (name: string) => api.delete(`/apps/${seg(appId)}/files/${seg(name)}`),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: orphansKey(appId) }),
  });
}

/** Puts an uploaded file on a row's File field (by its name: the service builds the url on read). */
export function attachFile(
  appId: string,
  className: string,
  objectId: string,
  field: string,
  file: { name: string },
) {
  return api.put(`/apps/${seg(appId)}/classes/${seg(className)}/${seg(objectId)}`, {
    [field]: { __type: 'File', name: file.name },
  });
}
