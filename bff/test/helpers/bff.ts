import { Writable } from 'node:stream';
import { KEYS, startService, type TestService } from '../../../server/test/helpers/service.ts';
import { type Bff, type BffDeps, createBff } from '../../src/index.ts';
import type { BffOptionsInput, ParseSourceConfig } from '../../src/options.ts';
import { hashPassword } from '../../src/passwords.ts';

/**
 * Starts a real service in-process plus the bff pointing at it, and records every bff response
 * (for the key-leak scan) and every log line.
 *
 *   const t = await startBff();
 *   const admin = await t.login('admin', TEST_PASSWORD);
 *   const res = await admin.post('/bff/apps/test-app/...', { ... });   // CSRF header + Origin added
 *   expect(res.status).toBe(200); res.json ...
 *   await t.close();
 */

export { KEYS };
export const WEBHOOK_KEY = 'test-webhook-key-9876543210';
export const TEST_PASSWORD = 'correct horse battery staple';

export interface TestUser {
  username: string;
  password?: string;
  role?: 'admin' | 'read-only';
  apps?: string[];
  mfaSecret?: string;
}

/** admin (admin), viewer (read-only), both with TEST_PASSWORD and every app. */
export const TEST_USERS: TestUser[] = [
  { username: 'admin', role: 'admin' },
  { username: 'viewer', role: 'read-only' },
];

export interface TestApp {
  id: string;
  name?: string;
  /** The parse-servers the app may import from (bff option `apps[].parseSources`). */
  parseSources?: ParseSourceConfig[];
}

export interface StartBffOptions {
  users?: TestUser[];
  /** Apps of the console; each points at the one in-process service. Default: [{id: 'test-app'}]. */
  apps?: TestApp[];
  /** Extra bff options (e.g. loginThrottle, idleTimeoutSeconds). */
  options?: Partial<BffOptionsInput>;
  deps?: BffDeps;
  /** Service option overrides. */
  service?: Record<string, unknown>;
}

export interface BffResponse {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

export interface RecordedResponse {
  method: string;
  path: string;
  status: number;
  headers: Record<string, string>;
  setCookies: string[];
  text: string;
}

export interface BffRequestInit {
  method?: string;
  /** JSON body. */
  body?: unknown;
  /** Raw body (with your own Content-Type header). */
  rawBody?: string;
  headers?: Record<string, string>;
  /** Default true: add `X-Console-CSRF: 1` and a same-origin `Origin` on non-GET requests. */
  csrf?: boolean;
}

/** A cookie-carrying fetch against the bff. Paths start with /bff/ (or / for the SPA). */
export interface BffFetch {
  (path: string, init?: BffRequestInit): Promise<BffResponse>;
  get(path: string, init?: BffRequestInit): Promise<BffResponse>;
  post(path: string, body?: unknown, init?: BffRequestInit): Promise<BffResponse>;
  put(path: string, body?: unknown, init?: BffRequestInit): Promise<BffResponse>;
  patch(path: string, body?: unknown, init?: BffRequestInit): Promise<BffResponse>;
  delete(path: string, init?: BffRequestInit): Promise<BffResponse>;
  /** The current `name=value` cookie header ('' when none). */
  readonly cookie: string;
}

export interface StartedBff {
  /** http://127.0.0.1:<port> (the bff; its API is under /bff/) */
  url: string;
  origin: string;
  bff: Bff;
  service: TestService;
  /** Every response the bff sent through this helper. */
  responses: RecordedResponse[];
  /** Every log line the bff wrote. */
  logs: string[];
  /** The configured key values (master, REST, JavaScript, webhook, client when set) that must never leak. */
  secrets: string[];
  /** An anonymous client (no cookie until it logs in through POST /bff/login). */
  request: BffFetch;
  /** A new cookie jar, without a session. */
  anonymous(): BffFetch;
  /** Logs in (password + TOTP if given) and returns a fetch carrying the session cookie; throws on failure. */
  login(username: string, password?: string, totp?: string): Promise<BffFetch>;
  /** Stops both; throws if any recorded response leaked a configured key (the scan every suite gets). */
  close(): Promise<void>;
}

const hashes = new Map<string, Promise<string>>();
const hashOf = (password: string) => {
  let h = hashes.get(password);
  if (!h) {
    h = hashPassword(password);
    hashes.set(password, h);
  }
  return h;
};

export async function startBff(opts: StartBffOptions = {}): Promise<StartedBff> {
  const service = await startService({ webhookKey: WEBHOOK_KEY, ...opts.service });
  const logs: string[] = [];
  const logStream = new Writable({
    write(chunk, _enc, cb) {
      for (const line of String(chunk).split('\n')) if (line) logs.push(line);
      cb();
    },
  });
  const users = await Promise.all(
    (opts.users ?? TEST_USERS).map(async (u) => ({
      username: u.username,
      passwordHash: await hashOf(u.password ?? TEST_PASSWORD),
      role: u.role ?? 'admin',
      ...(u.apps ? { apps: u.apps } : {}),
      ...(u.mfaSecret ? { mfaSecret: u.mfaSecret } : {}),
    })),
  );
  const apps = (opts.apps ?? [{ id: 'test-app', name: 'Test app' }]).map((a) => ({
    id: a.id,
    name: a.name ?? a.id,
    serverURL: service.url,
    appId: KEYS.appId,
    masterKey: KEYS.masterKey,
    restAPIKey: KEYS.restAPIKey,
    javascriptKey: KEYS.javascriptKey,
    webhookKey: WEBHOOK_KEY,
    ...(a.parseSources ? { parseSources: a.parseSources } : {}),
    // A service started with a client key gets it in the console's app too (and in the leak scan).
    ...(typeof opts.service?.clientKey === 'string' ? { clientKey: opts.service.clientKey } : {}),
  }));
  let bff: Bff;
  try {
    bff = await createBff(
      {
        port: 0,
        host: '127.0.0.1',
        dataDir: service.dataDir,
        apps,
        consoleUsers: users,
        sessionSecret: 'test-session-secret-0123456789-abcdefghijklmnop',
        logLevel: 'info',
        ...opts.options,
      },
      { logStream, ...opts.deps },
    );
  } catch (err) {
    await service.close();
    throw err;
  }
  const { url } = await bff.listen(0, '127.0.0.1');
  const responses: RecordedResponse[] = [];
  const configuredKeys = [KEYS.masterKey, KEYS.restAPIKey, KEYS.javascriptKey, WEBHOOK_KEY];
  if (typeof opts.service?.clientKey === 'string') configuredKeys.push(opts.service.clientKey);

  const makeFetch = (): BffFetch => {
    const jar = new Map<string, string>();
    const send = async (path: string, init: BffRequestInit = {}): Promise<BffResponse> => {
      const method = (init.method ?? 'GET').toUpperCase();
      const headers: Record<string, string> = {};
      if (init.csrf !== false && method !== 'GET' && method !== 'HEAD') {
        headers['X-Console-CSRF'] = '1';
        headers.Origin = url;
      }
      const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
      if (cookie) headers.Cookie = cookie;
      let body: string | undefined;
      if (init.rawBody !== undefined) body = init.rawBody;
      else if (init.body !== undefined) {
        body = JSON.stringify(init.body);
        headers['Content-Type'] = 'application/json';
      }
      Object.assign(headers, init.headers);
      const res = await fetch(`${url}${path}`, { method, headers, body, redirect: 'manual' });
      const text = await res.text();
      const setCookies = res.headers.getSetCookie();
      for (const c of setCookies) {
        const [pair, ...attrs] = c.split(';');
        const eq = pair!.indexOf('=');
        const name = pair!.slice(0, eq).trim();
        const value = pair!.slice(eq + 1).trim();
        const expired = attrs.some(
          (a) => /^\s*max-age=0\s*$/i.test(a) || /expires=Thu, 01 Jan 1970/i.test(a),
        );
        if (!value || expired) jar.delete(name);
        else jar.set(name, value);
      }
      responses.push({
        method,
        path,
        status: res.status,
        headers: Object.fromEntries(res.headers),
        setCookies,
        text,
      });
      let json: unknown;
      try {
        json = text ? JSON.parse(text) : undefined;
      } catch {
        json = undefined;
      }
      return { status: res.status, headers: res.headers, text, json };
    };
    const f = send as BffFetch;
    f.get = (path, init) => send(path, { ...init, method: 'GET' });
    f.post = (path, body, init) => send(path, { ...init, method: 'POST', body });
    f.put = (path, body, init) => send(path, { ...init, method: 'PUT', body });
    f.patch = (path, body, init) => send(path, { ...init, method: 'PATCH', body });
    f.delete = (path, init) => send(path, { ...init, method: 'DELETE' });
    Object.defineProperty(f, 'cookie', { get: () => [...jar].map(([k, v]) => `${k}=${v}`).join('; ') });
    return f;
  };

  return {
    url,
    origin: url,
    bff,
    service,
    responses,
    logs,
    secrets: configuredKeys,
    request: makeFetch(),
    anonymous: makeFetch,
    async login(username, password = TEST_PASSWORD, totp) {
      const f = makeFetch();
      const res = await f.post('/bff/login', { username, password, ...(totp ? { totp } : {}) });
      if (res.status !== 200 || !res.json?.user) {
        throw new Error(`login as ${username} failed: ${res.status} ${res.text}`);
      }
      return f;
    },
    /** Also the key-leak scan: throws when any recorded response carried a configured key. */
    async close() {
      await bff.close();
      await service.close();
      const leaks = findLeaks(responses, configuredKeys);
      if (leaks.length) throw new Error(`configured keys leaked:\n${leaks.join('\n')}`);
    },
  };
}

/** Every place a secret value was found in the recorded responses (empty when none leaked). */
export function findLeaks(responses: RecordedResponse[], secrets: string[]): string[] {
  const found: string[] = [];
  for (const r of responses) {
    const haystacks = [r.text, JSON.stringify(r.headers), r.setCookies.join('\n')];
    for (const secret of secrets) {
      const forms = [secret, encodeURIComponent(secret), Buffer.from(secret).toString('base64')];
      if (haystacks.some((h) => forms.some((f) => h.includes(f)))) {
        found.push(`${r.method} ${r.path} (${r.status}) leaks a configured key`);
      }
    }
  }
  return found;
}
