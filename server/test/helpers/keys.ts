/**
 * The test apps' keys and the headers that present them: what a test needs to call a service,
 * apart from starting one (service.ts, which also decides the store). A test that only calls a
 * service it starts itself imports these from here, and so stays out of the PostgreSQL run
 * (scripts/store-tests.ts).
 */
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
