import { request as httpRequest, type OutgoingHttpHeaders } from 'node:http';
import { expect } from 'vitest';
import { credentialHeaders, type TestService } from './service.ts';

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  json: any;
}

export interface RawOptions {
  /** JSON body. */
  body?: unknown;
  /** A body sent as it is, with its content type. */
  bytes?: { data: string | Buffer; type: string };
  headers?: OutgoingHttpHeaders;
  as?: 'rest' | 'master';
}

/**
 * One request with the path exactly as written: fetch and URL would rewrite some spellings
 * (`/./`, `/../`), and node:http sends every header of a list on its own line.
 */
export function raw(
  t: TestService,
  method: string,
  path: string,
  options: RawOptions = {},
): Promise<RawResponse> {
  const headers: OutgoingHttpHeaders = { ...credentialHeaders(options.as ?? 'rest'), ...options.headers };
  let body: string | Buffer | undefined;
  if (options.bytes) {
    body = options.bytes.data;
    headers['Content-Type'] = options.bytes.type;
  } else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['Content-Type'] = 'application/json';
  }
  if (body !== undefined) headers['Content-Length'] = Buffer.byteLength(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port: t.port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = text ? JSON.parse(text) : undefined;
        } catch {
          json = text;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, json });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** 429, code 155, the exact text with the wait that Retry-After gives. */
export function expectLimited(res: RawResponse, max: number, window: number): void {
  expect(res.status).toBe(429);
  const retry = Number(res.headers['retry-after']);
  expect(Number.isInteger(retry) && retry >= 1 && retry <= window).toBe(true);
  expect(res.json).toEqual({
    code: 155,
    error: `Too many requests: at most ${max} in ${window} seconds. Retry in ${retry} seconds.`,
  });
}
