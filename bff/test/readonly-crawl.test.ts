import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type BffFetch,
  type BffResponse,
  KEYS,
  type StartedBff,
  startBff,
  WEBHOOK_KEY,
} from './helpers/bff.ts';

/**
 * The crawl of finding 4 ("Trust at the seams"): with secrets seeded in a real service (session
 * tokens, an anonymous user's credential, an MFA secret and its recovery codes, reset and
 * verification links in the dev mailbox, a masterKeyOnly config value, secret-named row fields, a
 * webhook that was called with the webhook key, the app's keys), a read-only console user GETs
 * every GET route of the bff and sends every GET route of the service through the API console
 * (as master, as anonymous and as a user, plus other spellings of the secret-bearing paths). No
 * answer may carry a seeded secret; the refused calls answer their exact status, code and text.
 */

const A = '/bff/apps/test-app';
const CONSOLE = `${A}/api-console`;
const CLIENT_KEY = 'test-client-key-5555-crawl';

const REFUSED = {
  devMailbox:
    'GET /devMailbox answers password reset and verification links: read-only console users cannot send it.',
  session:
    'GET of the _Session class (/sessions, /classes/_Session and the like) answers session tokens: read-only console users cannot send it.',
  aggregate:
    'GET /aggregate/<C> can copy secret fields under other names: read-only console users cannot send it.',
  login: 'GET /login signs in and creates a session: read-only console users cannot send it.',
  verifyPassword: "GET /verifyPassword checks a user's password: read-only console users cannot send it.",
};

let t: StartedBff;
let admin: BffFetch;
let viewer: BffFetch;
let receiver: Server;
const hookKeysReceived: string[] = [];
const ids: Record<string, string> = {};
let fileName = '';
/** A request id for the logs routes' parameter (GET /logs/<requestId> answers its lines, none here). */
const crawlRequestId = 'crawl-request-1';
/** Every seeded secret, by what it is (the names appear in a failure). */
const secrets = new Map<string, string>();
/** Every answer the read-only user got in this file. */
const seen: Array<{ what: string; text: string }> = [];

async function ok(res: { status: number; json: any; text: string }): Promise<any> {
  if (res.status >= 300) throw new Error(`${res.status} ${res.text}`);
  return res.json;
}

const service = (
  method: string,
  path: string,
  options: Parameters<StartedBff['service']['request']>[2] = {},
) => t.service.request(method, path, options).then(ok);

/** The read-only user's answers are recorded for the scan. */
async function asViewer(what: string, send: () => Promise<BffResponse>): Promise<BffResponse> {
  const res = await send();
  seen.push({ what, text: res.text });
  return res;
}

function leaksIn(text: string): string[] {
  const found: string[] = [];
  for (const [name, value] of secrets) {
    const forms = [value, encodeURIComponent(value), Buffer.from(value).toString('base64')];
    if (forms.some((f) => text.includes(f))) found.push(name);
  }
  return found;
}

/** Session tokens of the service right now (read with the master key), to add to the secrets. */
async function rememberSessionTokens(): Promise<void> {
  const all = await service('GET', '/classes/_Session', { as: 'master', query: { limit: 1000 } });
  for (const s of all.results) secrets.set(`session token ${s.objectId}`, s.sessionToken);
}

beforeAll(async () => {
  receiver = createServer((req, res) => {
    hookKeysReceived.push(String(req.headers['x-backend-webhook-key'] ?? ''));
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ success: 'pong' }));
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

  t = await startBff({
    service: { verifyUserEmails: true, clientKey: CLIENT_KEY, hooks: { allowInsecureUrls: true } },
  });
  admin = await t.login('admin');
  viewer = await t.login('viewer');
  for (const [i, key] of t.secrets.entries()) secrets.set(`configured key ${i}`, key);

  // Users: one with an email (a verification mail), then a reset mail; an anonymous one (its
  // authData id logs in as it); one enrolled in MFA (its secret and recovery codes).
  const ann = await service('POST', '/users', {
    body: { username: 'ann', password: 'ann-pw', email: 'ann@example.com' },
  });
  ids.ann = ann.objectId;
  await service('POST', '/login', { body: { username: 'ann', password: 'ann-pw' } });
  await service('POST', '/requestPasswordReset', { body: { email: 'ann@example.com' } });
  const anonymousId = '0d9c7a52-3b1e-4f6a-8c2d-5e4f3a2b1c0d';
  secrets.set('anonymous authData id', anonymousId);
  ids.anonymous = (
    await service('POST', '/users', { body: { authData: { anonymous: { id: anonymousId } } } })
  ).objectId;
  const mfaSecret = new Secret({ size: 20 }).base32;
  secrets.set('MFA secret', mfaSecret);
  const mo = await service('POST', '/users', { body: { username: 'mo', password: 'mo-pw' } });
  ids.mo = mo.objectId;
  const totp = new TOTP({ secret: Secret.fromBase32(mfaSecret), algorithm: 'SHA1', digits: 6, period: 30 });
  const enrolled = await service('PUT', `/users/${mo.objectId}`, {
    sessionToken: mo.sessionToken,
    body: { authData: { mfa: { secret: mfaSecret, token: totp.generate() } } },
  });
  for (const [i, code] of (enrolled.authDataResponse.mfa.recovery as string[]).entries())
    secrets.set(`MFA recovery code ${i}`, code);

  // The mail links (read the way only the master key may), once both mails are sent (after the
  // requests were answered).
  let mails = await service('GET', '/devMailbox', { as: 'master' });
  for (let i = 0; mails.results.length < 2 && i < 150; i++) {
    await new Promise((r) => setTimeout(r, 20));
    mails = await service('GET', '/devMailbox', { as: 'master' });
  }
  for (const mail of mails.results as Array<{ subject: string; text: string }>) {
    for (const m of mail.text.matchAll(/token=([0-9a-f]+)/g))
      secrets.set(`link token of "${mail.subject}"`, m[1]!);
  }
  expect([...secrets.keys()].filter((k) => k.startsWith('link token')).length).toBe(2);

  // Config, rows with secret-named fields, a role, an installation, a file.
  secrets.set('masterKeyOnly config value', 'sk_live_crawl_9f8e7d6c5b4a');
  await service('PUT', '/config', {
    as: 'master',
    body: {
      params: { stripeSecret: 'sk_live_crawl_9f8e7d6c5b4a', motd: 'hi' },
      masterKeyOnly: { stripeSecret: true },
    },
  });
  secrets.set('row field token', 'vault-token-1a2b3c4d5e6f');
  secrets.set('row field apiKey', 'vault-api-key-6f5e4d3c2b1a');
  ids.vault = (
    await service('POST', '/classes/Vault', {
      as: 'master',
      body: { label: 'vault', token: 'vault-token-1a2b3c4d5e6f', apiKey: 'vault-api-key-6f5e4d3c2b1a' },
    })
  ).objectId;
  ids.role = (
    await service('POST', '/roles', {
      as: 'master',
      body: {
        name: 'Staff',
        ACL: { '*': { read: true } },
        users: {
          __op: 'AddRelation',
          objects: [{ __type: 'Pointer', className: '_User', objectId: ids.ann }],
        },
      },
    })
  ).objectId;
  ids.installation = (
    await service('POST', '/installations', {
      as: 'master',
      body: {
        installationId: 'c1d2e3f4-0000-4000-8000-000000000001',
        deviceType: 'android',
        deviceToken: 'tok-1',
      },
    })
  ).objectId;
  const uploaded = await t.service.request('POST', '/files/notes.txt', {
    as: 'master',
    rawBody: 'plain notes',
    headers: { 'Content-Type': 'text/plain' },
  });
  fileName = (await ok(uploaded)).name;

  // A function webhook and a trigger, both called with the webhook key.
  await service('POST', '/hooks/functions', { as: 'master', body: { functionName: 'echo', url: hookUrl } });
  await service('POST', '/hooks/triggers', {
    as: 'master',
    body: { className: 'Vault', triggerName: 'afterSave', url: hookUrl },
  });
  await service('POST', '/functions/echo', { body: { hello: 'world' } });
  expect(hookKeysReceived).toContain(WEBHOOK_KEY);

  await rememberSessionTokens();
  ids.session = (
    await service('GET', '/classes/_Session', {
      as: 'master',
      query: { where: { user: { __type: 'Pointer', className: '_User', objectId: ids.ann } }, limit: 1 },
    })
  ).results[0].objectId;
}, 60_000);

afterAll(async () => {
  await t?.close();
  await new Promise((r) => receiver?.close(r));
});

/** The routes of an Express router, walked down its stack: `METHOD /full/path`. */
function routesOf(stack: any[], prefix = ''): Array<{ method: string; path: string }> {
  const out: Array<{ method: string; path: string }> = [];
  for (const layer of stack) {
    if (layer.route) {
      for (const method of Object.keys(layer.route.methods))
        out.push({ method: method.toUpperCase(), path: `${prefix}${layer.route.path}` });
    } else if (layer.handle?.stack) {
      // A layer keeps no mount path: it tells which prefix of a path under /bff/ it takes (the
      // router's versions answer the match, or true and keep it on the layer).
      const match = layer.match?.('/bff/probe');
      const taken = match === true ? layer.path : match?.path;
      const mount = typeof taken === 'string' ? taken : '';
      out.push(...routesOf(layer.handle.stack, prefix + mount));
    }
  }
  return out;
}

const CLASSES = [
  '_User',
  '_Session',
  '_Role',
  '_Installation',
  'Vault',
  '_Hooks',
  '_JobStatus',
  '_PushStatus',
];
const rowsOf = () => [
  ['_User', ids.ann!],
  ['_User', ids.anonymous!],
  ['_User', ids.mo!],
  ['_Session', ids.session!],
  ['_Role', ids.role!],
  ['_Installation', ids.installation!],
  ['Vault', ids.vault!],
];

/** The concrete paths of a route pattern, its parameters filled with the seeded ids. */
function fill(pattern: string): string[] {
  let paths = [pattern.replace(':appId', 'test-app')];
  const expand = (param: string, values: string[]) => {
    if (!paths.some((p) => p.includes(param))) return;
    paths = paths.flatMap((p) => (p.includes(param) ? values.map((v) => p.replace(param, v)) : [p]));
  };
  if (pattern.includes(':className/:objectId')) {
    paths = paths.flatMap((p) => rowsOf().map(([c, id]) => p.replace(':className/:objectId', `${c}/${id}`)));
  }
  expand(':className/:triggerName', ['Vault/afterSave']);
  expand(':className', CLASSES);
  expand(':roleId', [ids.role!]);
  const objectIds = /\/sessions|_Session/.test(pattern)
    ? [ids.session!]
    : pattern.includes('/roles')
      ? [ids.role!]
      : pattern.includes('/installations')
        ? [ids.installation!]
        : [ids.ann!, ids.anonymous!, ids.mo!];
  expand(':objectId', objectIds);
  expand(':name', [pattern.includes('/files') ? fileName : 'echo']);
  expand(':requestId', [crawlRequestId]);
  for (const p of paths)
    if (p.includes(':')) throw new Error(`no value for a parameter of ${pattern}: fill() must learn it`);
  return paths;
}

/** Reads an event stream for `ms` (or until `until` is seen), then hangs up. */
async function readStream(
  path: string,
  during: () => Promise<void>,
  until: RegExp,
): Promise<{ status: number; text: string }> {
  const ac = new AbortController();
  const res = await fetch(`${t.url}${path}`, { headers: { Cookie: viewer.cookie }, signal: ac.signal });
  let text = '';
  const reading = (async () => {
    const reader = res.body!.getReader();
    const dec = new TextDecoder();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        text += dec.decode(value, { stream: true });
      }
    } catch {
      // hung up
    }
  })();
  const deadline = Date.now() + 8_000;
  while (!text.includes('event: ready') && !text.includes('event: fail') && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 25));
  await during();
  while (!until.test(text) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
  ac.abort();
  await reading;
  return { status: res.status, text };
}

describe('a read-only console user crawls the console and the service', () => {
  it('the seeds are live: the tokens log in and the mailbox links work', async () => {
    const annSessions = [...secrets].filter(([name]) => name.startsWith('session token'));
    expect(annSessions.length).toBeGreaterThanOrEqual(3);
    for (const [, token] of annSessions) {
      expect((await t.service.request('GET', '/users/me', { sessionToken: token })).status).toBe(200);
    }
    // Signing up again with the same anonymous id logs in as that user.
    const again = await t.service.request('POST', '/users', {
      body: { authData: { anonymous: { id: secrets.get('anonymous authData id') } } },
    });
    expect(again.json.objectId).toBe(ids.anonymous);
    await rememberSessionTokens();
  });

  it('GET every route of the bff', async () => {
    const gets = routesOf((t.bff.app as unknown as { router: { stack: any[] } }).router.stack).filter(
      (r) => r.method === 'GET',
    );
    const patterns = new Set(gets.map((r) => r.path));
    expect(patterns.size).toBeGreaterThanOrEqual(30);
    const visited = new Set<string>();
    for (const pattern of patterns) {
      // Event streams: their own tests below.
      if (pattern.endsWith('/realtime/stream') || pattern.endsWith('/logs/tail')) continue;
      for (const path of fill(pattern)) {
        const res = await asViewer(`GET ${path}`, () => viewer.get(path));
        expect(res.status, `GET ${path}: ${res.text.slice(0, 200)}`).toBeLessThan(500);
        expect(leaksIn(res.text), `GET ${path}`).toEqual([]);
        visited.add(pattern);
      }
    }
    expect(visited.size).toBe(patterns.size - 2);
    // The crawl saw data, not only errors.
    expect(seen.find((s) => s.what === `GET ${A}/config`)?.text).toContain('stripeSecret');
    expect(seen.find((s) => s.what === `GET ${A}/classes/_User`)?.text).toContain('"ann"');
    expect(seen.find((s) => s.what === `GET ${A}/cloud/deliveries`)?.text).toContain('echo');
    expect(seen.find((s) => s.what === `GET ${A}/classes/Vault/${ids.vault}`)?.text).toContain('[FILTERED]');
  });

  it('the realtime inspector streams no secret (as master on _Session and Vault, and as a user)', async () => {
    const streams: Array<[string, () => Promise<void>]> = [
      [
        'className=_Session&viewpoint=master',
        async () => {
          await service('POST', '/login', { body: { username: 'ann', password: 'ann-pw' } });
        },
      ],
      [
        'className=Vault&viewpoint=master',
        async () => {
          await service('PUT', `/classes/Vault/${ids.vault}`, { as: 'master', body: { label: 'changed' } });
        },
      ],
      [
        `className=_User&viewpoint=user&userId=${ids.ann}`,
        async () => {
          // The inspection session the bff made for this stream: its token must stay in the bff.
          const inspections = await service('GET', '/classes/_Session', {
            as: 'master',
            query: { where: { 'createdWith.action': 'inspect' } },
          });
          expect(inspections.results.length).toBe(1);
          secrets.set('inspection session token', inspections.results[0].sessionToken);
          await service('PUT', `/users/${ids.ann}`, { as: 'master', body: { email: 'ann2@example.com' } });
        },
      ],
    ];
    for (const [query, during] of streams) {
      const path = `${A}/realtime/stream?${query}`;
      const res = await readStream(path, during, /event: live/);
      seen.push({ what: `GET ${path}`, text: res.text });
      expect(res.status).toBe(200);
      expect(res.text, query).toContain('event: live');
      await rememberSessionTokens();
      expect(leaksIn(res.text), query).toEqual([]);
    }
  }, 40_000);

  it('the logs tail streams no secret (a login with its password in the query, a session token)', async () => {
    const path = `${A}/logs/tail`;
    const res = await readStream(
      path,
      async () => {
        await fetch(`${t.service.url}/login?username=ann&password=ann-pw`, {
          headers: { 'X-Backend-Application-Id': KEYS.appId, 'X-Backend-REST-API-Key': KEYS.restAPIKey },
        });
        await service('GET', '/users/me', { sessionToken: secrets.get(`session token ${ids.session}`) });
      },
      /\/users\/me/,
    );
    seen.push({ what: `GET ${path}`, text: res.text });
    expect(res.status).toBe(200);
    expect(res.text).toContain('"path":"/login"');
    expect(leaksIn(res.text)).toEqual([]);
  });

  it('send every GET route of the service through the API console, as master, anonymous and a user', async () => {
    const gets = t.service.service.routes().filter((r) => r.method === 'GET');
    expect(gets.length).toBeGreaterThanOrEqual(30);
    const spellings = [
      '/devMailbox/',
      '//devMailbox',
      '/%64evMailbox',
      '/DEVMAILBOX',
      '/classes//_Session',
      '/classes/%5FSession',
      '/sessions/',
      `/sessions/${ids.session}/`,
      '/%73essions/me',
      '/live/trace//_Session',
      '/login/',
      '//login',
      '/%6Cogin',
    ];
    const calls = [...new Set([...gets.flatMap((r) => fill(r.pattern)), ...spellings])];
    expect(calls.length).toBeGreaterThanOrEqual(60);
    const refusedFor = (path: string): string | undefined => {
      const normal = `/${path
        .split('/')
        .filter(Boolean)
        .map((s) => decodeURIComponent(s))
        .join('/')}`;
      if (normal === '/devMailbox') return REFUSED.devMailbox;
      if (/^\/sessions(\/|$)|\/_Session(\/|$)/.test(normal)) return REFUSED.session;
      if (normal.startsWith('/aggregate/')) return REFUSED.aggregate;
      if (normal === '/login') return REFUSED.login;
      if (normal === '/verifyPassword') return REFUSED.verifyPassword;
      return undefined;
    };
    let refusals = 0;
    let answered = 0;
    for (const path of calls) {
      const query: Record<string, unknown> = path.includes('login')
        ? { username: 'ann', password: 'ann-pw' }
        : path.startsWith('/aggregate')
          ? { pipeline: [{ $project: { copied: '$sessionToken', alsoCopied: '$authData' } }] }
          : {};
      for (const as of [{ kind: 'master' }, { kind: 'anonymous' }, { kind: 'user', userId: ids.ann }]) {
        const what = `${path} as ${as.kind}`;
        const res = await asViewer(what, () => viewer.post(CONSOLE, { method: 'GET', path, query, as }));
        expect(leaksIn(res.text), what).toEqual([]);
        const refusal = refusedFor(path);
        if (refusal) {
          expect(res.status, what).toBe(403);
          expect(res.json, what).toEqual({ code: 119, error: refusal });
          refusals++;
        } else {
          // The API console passed the call on and shows the service's answer (error or not).
          expect([200, 400], `${what}: ${res.text.slice(0, 200)}`).toContain(res.status);
          if (res.status === 200) answered++;
        }
      }
    }
    expect(refusals).toBeGreaterThanOrEqual(3 * 20);
    expect(answered).toBeGreaterThanOrEqual(60);
    // The crawl saw data, not only refusals.
    const usersAsMaster = seen.find((s) => s.what === '/classes/_User as master')!.text;
    expect(usersAsMaster).toContain('"ann"');
    expect(seen.find((s) => s.what === '/config as master')!.text).toContain('[FILTERED]');
  });

  it('the scan: no answer the read-only user got carried a seeded secret', () => {
    expect(seen.length).toBeGreaterThanOrEqual(200);
    const leaks = seen.flatMap((s) => leaksIn(s.text).map((name) => `${s.what} leaks the ${name}`));
    expect(leaks).toEqual([]);
  });

  it("an admin still reads them (the seeds are reachable, and admins keep today's behaviour)", async () => {
    const mailbox = await admin.post(CONSOLE, { method: 'GET', path: '/devMailbox', as: { kind: 'master' } });
    expect(mailbox.status).toBe(200);
    for (const [name, value] of secrets)
      if (name.startsWith('link token')) expect(mailbox.text).toContain(value);
    expect((await admin.get(`${A}/config`)).text).toContain('sk_live_crawl_9f8e7d6c5b4a');
    expect((await admin.get(`${A}/classes/Vault/${ids.vault}`)).text).toContain('vault-token-1a2b3c4d5e6f');
  });
});
