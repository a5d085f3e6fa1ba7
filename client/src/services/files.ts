/**
 * Files: uploads stream to the service; downloads stream back. A stored file's url is built from
 * its issued name only: a File value's `url` is never fetched, and a name the service never
 * issues (a url, a path) is refused before any request (protocol/files.ts).
 */
import { ArgumentError, ConnectionError } from '../errors.ts';
import {
  type AuthOptions,
  checkAuthOptions,
  type Failure,
  type FileBody,
  type Result,
  type Success,
} from '../options.ts';
import { foreignFileNameText, isIssuedFileName } from '../protocol/files.ts';
import type { RequestCore } from '../request-core.ts';

export async function uploadFile(
  core: RequestCore,
  name: string,
  data: FileBody,
  options: AuthOptions & { contentType?: string },
) {
  const { contentType, ...auth } = options;
  const type =
    contentType ?? (typeof Blob !== 'undefined' && data instanceof Blob && data.type ? data.type : undefined);
  return core.request<{ name: string; url: string }>('POST', `/files/${encodeURIComponent(name)}`, {
    ...checkAuthOptions(auth),
    rawBody: data,
    contentType: type,
  });
}

export async function downloadFile(
  core: RequestCore,
  file: string | { url?: string; name: string },
  options: { range?: [number, number] },
) {
  const url = fileUrl(core, file);
  const headers: Record<string, string> = {};
  if (options.range) headers.Range = `bytes=${options.range[0]}-${options.range[1]}`;
  let res: Response;
  try {
    res = await core.fetchImpl(url, { headers });
  } catch (err) {
    throw new ConnectionError(`Download of ${url} failed: ${(err as Error).message}`, { cause: err });
  }
  if (!res.ok || !res.body) {
    const text = await res.text();
    let code = res.status;
    let error = text || res.statusText;
    try {
      const json = JSON.parse(text) as { code?: number; error?: string };
      code = json.code ?? code;
      error = json.error ?? error;
    } catch {
      // not JSON
    }
    return { success: false, status: res.status, code, error } as Failure;
  }
  return {
    success: true,
    status: res.status,
    data: {
      contentType: res.headers.get('content-type') ?? 'application/octet-stream',
      size: Number(res.headers.get('content-length') ?? Number.NaN),
      body: res.body as ReadableStream<Uint8Array>,
      headers: res.headers,
    },
  } as Success<{ contentType: string; size: number; body: ReadableStream<Uint8Array>; headers: Headers }>;
}

export async function downloadBlob(
  core: RequestCore,
  file: string | { url?: string; name: string },
): Promise<Result<Blob>> {
  const res = await downloadFile(core, file, {});
  if (!res.success) return res;
  const blob = await new Response(res.data.body).blob();
  return { success: true, status: res.status, data: new Blob([blob], { type: res.data.contentType }) };
}

/** DELETE /files/<name>, master only: refused locally without a usable master key. */
export async function deleteFile(core: RequestCore, name: string, options: AuthOptions) {
  checkAuthOptions(options);
  core.requireMaster('deleteFile');
  return core.request<Record<string, never>>('DELETE', `/files/${encodeURIComponent(name)}`, {
    useMasterKey: true,
  });
}

/** The service's url of a stored file, from its issued name only. */
function fileUrl(core: RequestCore, file: string | { url?: string; name: string }): string {
  const name = typeof file === 'string' ? file : file?.name;
  if (!isIssuedFileName(name)) throw new ArgumentError(foreignFileNameText(String(name)));
  return `${core.serverURL}/files/${encodeURIComponent(core.applicationId)}/${encodeURIComponent(name)}`;
}
