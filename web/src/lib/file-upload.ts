/** A file uploaded to the app through the bff: the Files section's uploads and a row's File cell. */
import { ErrorCode, toUploadName } from '@bds/client/protocol';
import { ApiError, bffUrl, CSRF_HEADER, seg } from './api.ts';

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
      } else
        reject(
          new ApiError(
            xhr.status,
            data.code ?? ErrorCode.INTERNAL_SERVER_ERROR,
            data.error ?? `Upload failed (${xhr.status}).`,
          ),
        );
    };
    xhr.onerror = () =>
      reject(new ApiError(0, ErrorCode.CONNECTION_FAILED, 'The console backend is unreachable.'));
    xhr.send(file);
  });
}
