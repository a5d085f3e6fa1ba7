import { toUploadName } from '@bds/client/protocol';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { ApiError, api, bffUrl, CSRF_HEADER, seg } from '../../../lib/api.ts';

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

/**
 * Uploads with XMLHttpRequest (fetch reports no upload progress). The file's type travels in
 * X-Upload-Content-Type; the body is sent as octet-stream so no body parser buffers it.
 */
export function uploadFile(
  appId: string,
  file: File,
  onProgress: (fraction: number) => void,
): Promise<{ name: string; url: string }> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', bffUrl(`/apps/${seg(appId)}/files/${seg(toUploadName(file.name))}`));
    xhr.setRequestHeader(CSRF_HEADER, '1');
    xhr.setRequestHeader('Content-Type', 'application/octet-stream');
    xhr.setRequestHeader('X-Upload-Content-Type', file.type || 'application/octet-stream');
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable) onProgress(e.loaded / e.total);
    };
    xhr.onload = () => {
      let data: { name?: string; url?: string; code?: number; error?: string } = {};
      try {
        data = JSON.parse(xhr.responseText);
      } catch {
        // not JSON
      }
      if (xhr.status === 201 && data.name && data.url) {
        onProgress(1);
        resolve({ name: data.name, url: data.url });
      } else reject(new ApiError(xhr.status, data.code ?? 1, data.error ?? `Upload failed (${xhr.status}).`));
    };
    xhr.onerror = () => reject(new ApiError(0, 100, 'The console backend is unreachable.'));
    xhr.send(file);
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
