import { isObject } from '@bds/client/protocol';
import type { HookClient } from '../../hooks/client.ts';

/** What `Parse.Cloud.httpRequest` answers (the incumbent's HTTPResponse fields). */
export interface HttpResponse {
  status: number;
  headers: Record<string, unknown>;
  text: string;
  buffer: Buffer;
  data?: unknown;
}

/**
 * `Parse.Cloud.httpRequest({url, method, headers, body, params})` as the incumbent offers it, sent
 * by the service's one outgoing-call rule (HookClient: https only unless hooks.allowInsecureUrls,
 * the trusted CAs, hooks.timeoutMs, at most 10 MB back). An object body goes as JSON unless the
 * content type says form; an answer of 400 or more rejects with the response, as on the incumbent.
 */
export async function httpRequest(
  client: HookClient,
  options: Record<string, unknown>,
): Promise<HttpResponse> {
  if (typeof options?.url !== 'string') throw new Error('httpRequest needs a url.');
  const url = new URL(options.url);
  const params = options.params;
  if (typeof params === 'string') url.search = params;
  else if (isObject(params))
    for (const [k, v] of Object.entries(params)) url.searchParams.append(k, String(v));
  const headers: Record<string, string | number> = {};
  if (isObject(options.headers))
    for (const [k, v] of Object.entries(options.headers)) headers[k.toLowerCase()] = String(v);
  let body: string | Buffer | undefined;
  if (typeof options.body === 'string' || Buffer.isBuffer(options.body)) body = options.body;
  else if (options.body !== undefined) {
    const form = String(headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded');
    if (form) body = new URLSearchParams(options.body as Record<string, string>).toString();
    else {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
  }
  if (body !== undefined) headers['content-length'] = Buffer.byteLength(body);
  const method = typeof options.method === 'string' ? options.method.toUpperCase() : 'GET';
  const answer = await client.request(url.toString(), method, headers, body);
  const response: HttpResponse = {
    status: answer.status,
    headers: answer.headers,
    text: answer.text,
    buffer: Buffer.from(answer.text),
  };
  try {
    response.data = JSON.parse(answer.text);
  } catch {
    response.data = undefined;
  }
  if (answer.status >= 400) throw response;
  return response;
}
