import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { READ_ONLY_POSTS } from '../src/security.ts';
import { findLeaks, KEYS, type StartedBff, startBff, TEST_PASSWORD, WEBHOOK_KEY } from './helpers/bff.ts';

const CSP =
  "default-src 'self';script-src 'self';style-src 'self';img-src 'self' data:;connect-src 'self';" +
  "font-src 'self';object-src 'none';base-uri 'self';form-action 'self';frame-ancestors 'none'";

/** Every non-GET route the /bff/ router knows, from Express's own route table. */
function writeRoutes(t: StartedBff): Array<{ method: string; path: string }> {
  const out: Array<{ method: string; path: string }> = [];
  const walk = (stack: any[], prefix: string) => {
    for (const layer of stack) {
      if (layer.route) {
        const paths = Array.isArray(layer.route.path) ? layer.route.path : [layer.route.path];
        for (const p of paths) {
          for (const [m, on] of Object.entries(layer.route.methods)) {
            if (on && !['get', 'head', 'options', '_all'].includes(m)) {
              out.push({ method: m.toUpperCase(), path: prefix + String(p) });
            }
          }
        }
      } else if (layer.handle?.stack && layer.name === 'router') {
        walk(layer.handle.stack, prefix);
      }
    }
  };
  const bffLayer = (t.bff.app as any).router.stack.find((l: any) => l.name === 'router');
  walk(bffLayer.handle.stack, '/bff');
  return out;
}

const concrete = (p: string) =>
  p.replace(':appId', 'test-app').replace(/:(\w+)/g, (_m, name) => (name === 'className' ? 'Post' : 'x1'));

describe('bff security', () => {
  let t: StartedBff;
  beforeAll(async () => {
    t = await startBff({
      apps: [
        { id: 'test-app', name: 'Test app' },
        { id: 'other-app', name: 'Other app' },
      ],
      users: [
        { username: 'admin', role: 'admin' },
        { username: 'viewer', role: 'read-only' },
        { username: 'scoped', role: 'admin', apps: ['other-app'] },
      ],
      // No build here, whether or not web/dist exists in the tree: the placeholder page.
      options: { webDist: path.join(tmpdir(), 'bds-no-web-dist') },
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('refuses a cross-site form post (no custom header, foreign Origin, urlencoded)', async () => {
    const form = {
      method: 'POST',
      csrf: false,
      rawBody: `username=admin&password=${encodeURIComponent(TEST_PASSWORD)}`,
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: 'https://evil.example' },
    };
    const anon = t.anonymous();
    const login = await anon('/bff/login', form);
    expect(login.status).toBe(403);
    expect(login.json.code).toBe(119);
    expect(login.json.error).toMatch(/Cross-site request refused/);
    expect(login.headers.getSetCookie()).toEqual([]);

    const admin = await t.login('admin');
    for (const p of ['/bff/logout', '/bff/apps/test-app/classes/Post']) {
      const res = await admin(p, { ...form, rawBody: 'title=pwned' });
      expect(res.status).toBe(403);
      expect(res.json.error).toMatch(/Cross-site request refused/);
    }
    expect((await admin.get('/bff/session')).status).toBe(200);
  });

  it('needs both the custom header and a same-origin Origin (or Referer)', async () => {
    const admin = await t.login('admin');
    const path = '/bff/logout';
    const noHeader = await admin(path, { method: 'POST', csrf: false, headers: { Origin: t.origin } });
    expect(noHeader.status).toBe(403);
    const foreign = await admin(path, {
      method: 'POST',
      csrf: false,
      headers: { 'X-Console-CSRF': '1', Origin: 'http://127.0.0.1:1' },
    });
    expect(foreign.status).toBe(403);
    const nullOrigin = await admin(path, {
      method: 'POST',
      csrf: false,
      headers: { 'X-Console-CSRF': '1', Origin: 'null' },
    });
    expect(nullOrigin.status).toBe(403);
    const neither = await admin(path, { method: 'POST', csrf: false, headers: { 'X-Console-CSRF': '1' } });
    expect(neither.status).toBe(403);
    const foreignReferer = await admin(path, {
      method: 'POST',
      csrf: false,
      headers: { 'X-Console-CSRF': '1', Referer: 'https://evil.example/page' },
    });
    expect(foreignReferer.status).toBe(403);
    expect((await admin.get('/bff/session')).status).toBe(200);
    const referer = await admin(path, {
      method: 'POST',
      csrf: false,
      headers: { 'X-Console-CSRF': '1', Referer: `${t.origin}/apps/test-app` },
    });
    expect(referer.status).toBe(200);
  });

  it('gives a read-only session 403 on every write route', async () => {
    const viewer = await t.login('viewer');
    const found = writeRoutes(t);
    expect(found.length).toBeGreaterThan(10);
    const routes = [
      // The POST routes that only ask (explain, impact, evaluate, the API console) let read-only
      // users through the guard; security-routes, api-console-routes and readonly tests pin what
      // they answer them.
      ...writeRoutes(t).filter(
        (r) =>
          r.path !== '/bff/login' &&
          r.path !== '/bff/logout' &&
          !(r.method === 'POST' && READ_ONLY_POSTS.some((route) => route.test(concrete(r.path).slice(4)))),
      ),
      { method: 'POST', path: '/bff/apps/test-app/a/route/added/later' },
      { method: 'DELETE', path: '/bff/anything' },
    ];
    for (const r of routes) {
      const res = await viewer(concrete(r.path), { method: r.method, body: {} });
      expect({ route: `${r.method} ${r.path}`, status: res.status, json: res.json }).toEqual({
        route: `${r.method} ${r.path}`,
        status: 403,
        json: { code: 119, error: 'Read-only console users cannot change anything.' },
      });
    }
    // Reads still work, and logout is allowed.
    expect((await viewer.get('/bff/session')).status).toBe(200);
    expect((await viewer.post('/bff/logout')).status).toBe(200);
  });

  it('enforces per-app access under /bff/apps/:appId/', async () => {
    const scoped = await t.login('scoped');
    expect((await scoped.get('/bff/session')).json).toEqual({
      user: { username: 'scoped', role: 'admin', apps: ['other-app'] },
    });
    const refused = await scoped.get('/bff/apps/test-app/schemas');
    expect(refused.status).toBe(403);
    expect(refused.json).toEqual({ code: 119, error: 'This console user has no access to this app.' });
    expect((await scoped.post('/bff/apps/test-app/classes/Post', { title: 'x' })).status).toBe(403);
    expect((await scoped.get('/bff/apps/other-app/schemas')).status).not.toBe(403);
  });

  it('sends security headers with a strict CSP on every response, and no-store under /bff/', async () => {
    const admin = await t.login('admin');
    for (const p of ['/bff/session', '/bff/nope', '/', '/apps/test-app/browser']) {
      const res = await admin.get(p);
      expect(res.headers.get('content-security-policy')).toBe(CSP);
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('x-powered-by')).toBeNull();
      if (p.startsWith('/bff/')) expect(res.headers.get('cache-control')).toBe('no-store');
    }
    const unauth = await t.anonymous().get('/bff/session');
    expect(unauth.headers.get('content-security-policy')).toBe(CSP);
    expect(unauth.headers.get('cache-control')).toBe('no-store');
  });

  it('serves a placeholder page without inline script while web/dist is missing', async () => {
    const res = await t.anonymous().get('/some/client/route');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    expect(res.text).toContain('console UI is not built yet');
    expect(res.text).not.toMatch(/<script|<style|style=/i);
    const bff404 = await t.anonymous().get('/bff/nope');
    expect(bff404.status).toBe(401);
  });

  it('logs each request with user, method, route, status and duration, and never a key or password', async () => {
    const admin = await t.login('admin');
    await admin.get('/bff/apps');
    await admin.get('/bff/apps/test-app/schemas');
    t.bff.logger.info(
      { masterKey: KEYS.masterKey, note: `key ${KEYS.restAPIKey} and ${WEBHOOK_KEY}` },
      'probe',
    );
    t.bff.logger.error(new Error(`boom ${KEYS.masterKey}`));
    const lines = t.logs.map((l) => JSON.parse(l));
    const entry = lines.find((l) => l.msg === 'request' && l.path === '/bff/apps' && l.user === 'admin');
    expect(entry).toMatchObject({ method: 'GET', route: '/bff/apps', status: 200 });
    expect(typeof entry.durationMs).toBe('number');
    expect(lines.some((l) => l.msg === 'request' && l.path === '/bff/login' && l.status === 200)).toBe(true);
    const all = t.logs.join('\n');
    for (const secret of [...t.secrets, TEST_PASSWORD]) expect(all).not.toContain(secret);
    expect(all).toContain('[FILTERED]');
  });

  it('no configured key appears in any response body, header or cookie', () => {
    expect(t.responses.length).toBeGreaterThan(20);
    expect(findLeaks(t.responses, t.secrets)).toEqual([]);
  });
});

describe('serving the built SPA', () => {
  let t: StartedBff;
  let dist: string;
  beforeAll(async () => {
    dist = mkdtempSync(path.join(tmpdir(), 'bds-web-'));
    mkdirSync(path.join(dist, 'assets'));
    writeFileSync(
      path.join(dist, 'index.html'),
      '<!doctype html><script type="module" src="/assets/app-1a2b.js"></script>',
    );
    writeFileSync(path.join(dist, 'assets', 'app-1a2b.js'), 'console.log(1);');
    writeFileSync(path.join(dist, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
    t = await startBff({ options: { webDist: dist } });
  });
  afterAll(async () => {
    await t?.close();
    rmSync(dist, { recursive: true, force: true });
  });

  it('caches hashed assets for a year, never index.html, and falls back to index.html', async () => {
    const c = t.anonymous();
    const asset = await c.get('/assets/app-1a2b.js');
    expect(asset.status).toBe(200);
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    const index = await c.get('/');
    expect(index.text).toContain('/assets/app-1a2b.js');
    expect(index.headers.get('cache-control')).toBe('no-cache');
    const deep = await c.get('/apps/test-app/browser/Post');
    expect(deep.text).toBe(index.text);
    expect(deep.headers.get('cache-control')).toBe('no-cache');
    expect((await c.get('/favicon.svg')).headers.get('cache-control')).toBe('no-cache');
    expect((await c.get('/assets/missing-123.js')).status).toBe(404);
    const api = await c.get('/bff/nope');
    expect(api.status).toBe(401);
    expect(api.json.code).toBe(119);
  });
});

describe('the key-leak scan', () => {
  it('finds a key in a body, a header or a cookie', async () => {
    const { findLeaks: scan } = await import('./helpers/bff.ts');
    const base = { method: 'GET', path: '/x', status: 200, headers: {}, setCookies: [], text: '' };
    expect(scan([{ ...base, text: `{"k":"${KEYS.masterKey}"}` }], [KEYS.masterKey])).toHaveLength(1);
    expect(scan([{ ...base, headers: { 'x-k': WEBHOOK_KEY } }], [WEBHOOK_KEY])).toHaveLength(1);
    expect(
      scan([{ ...base, setCookies: [`c=${encodeURIComponent(KEYS.restAPIKey)}`] }], [KEYS.restAPIKey]),
    ).toHaveLength(1);
    expect(scan([base], [KEYS.masterKey])).toEqual([]);
  });
});
