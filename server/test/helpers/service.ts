import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createService, type Service } from '../../src/index.ts';

export const KEYS = {
  appId: 'test-app',
  masterKey: 'test-master-key-0123456789',
  restAPIKey: 'test-rest-key',
  javascriptKey: 'test-js-key',
};

export type Credential = 'master' | 'rest' | 'js' | 'app' | 'none';

export interface RequestOptions {
  as?: Credential;
  sessionToken?: string;
  headers?: Record<string, string>;
  /** JSON body; ignored when `rawBody` is given. */
  body?: unknown;
  rawBody?: string | Buffer;
  /** Query parameters; objects are JSON-encoded (as `where` is). */
  query?: Record<string, unknown>;
}

export interface TestResponse {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

export interface TestService {
  service: Service;
  /** http://127.0.0.1:<port>/api */
  url: string;
  port: number;
  dataDir: string;
  request(method: string, path: string, options?: RequestOptions): Promise<TestResponse>;
  close(): Promise<void>;
}

export function credentialHeaders(as: Credential = 'rest'): Record<string, string> {
  switch (as) {
    case 'none':
      return {};
    case 'app':
      return { 'X-Backend-Application-Id': KEYS.appId };
    case 'master':
      return { 'X-Backend-Application-Id': KEYS.appId, 'X-Backend-Master-Key': KEYS.masterKey };
    case 'js':
      return { 'X-Backend-Application-Id': KEYS.appId, 'X-Backend-JavaScript-Key': KEYS.javascriptKey };
    default:
      return { 'X-Backend-Application-Id': KEYS.appId, 'X-Backend-REST-API-Key': KEYS.restAPIKey };
  }
}

/** Starts the real service in-process on a random port with a fresh temporary data dir. */
export async function startService(overrides: Record<string, unknown> = {}): Promise<TestService> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'bds-test-'));
  const service = await createService({
    ...KEYS,
    dataDir,
    port: 0,
    host: '127.0.0.1',
    logLevel: 'warn',
    // Suites sign up and log in far more often than a person would; the limits have their own test.
    rateLimit: [],
    ...overrides,
  });
  const { port, url } = await service.listen(0, '127.0.0.1');
  const request = async (method: string, p: string, options: RequestOptions = {}): Promise<TestResponse> => {
    const headers: Record<string, string> = { ...credentialHeaders(options.as), ...options.headers };
    if (options.sessionToken) headers['X-Backend-Session-Token'] = options.sessionToken;
    let target = `${url}${p}`;
    if (options.query) {
      const search = new URLSearchParams();
      for (const [k, v] of Object.entries(options.query)) {
        search.set(k, typeof v === 'string' ? v : JSON.stringify(v));
      }
      target += `${p.includes('?') ? '&' : '?'}${search}`;
    }
    let body: string | Buffer | undefined;
    if (options.rawBody !== undefined) body = options.rawBody;
    else if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['Content-Type'] ??= 'application/json';
    }
    const res = await fetch(target, { method, headers, body });
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, text, json };
  };
  return {
    service,
    url,
    port,
    dataDir,
    request,
    async close() {
      await service.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
