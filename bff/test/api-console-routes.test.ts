import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConsoleUser } from '../src/context.ts';
import { type ApiCall, curlOf, EVALUATE_PATHS, READ_ONLY_REFUSAL } from '../src/routes/api-console.ts';
import { registerApiRoutes } from '../src/routes/index.ts';
import { type BffFetch, findLeaks, KEYS, type StartedBff, startBff } from './helpers/bff.ts';

/**
 * POST /bff/apps/:appId/api-console against a real service: calls as master, as a user (through
 * the service's /security/evaluate) and as anonymous; the read-only rule; the path guard; and no
 * key in any answer.
 */

let t: StartedBff;
let admin: BffFetch;
let viewer: BffFetch;
const CONSOLE = '/bff/apps/test-app/api-console';
const ids: Record<string, string> = {};
let annToken = '';

async function ok(res: { status: number; json: any; text: string }): Promise<any> {
  if (res.status >= 300) throw new Error(`${res.status} ${res.text}`);
  return res.json;
}

/** Row ids of a Post find, sorted. */
const idsOf = (body: { results: Array<{ objectId: string }> }) => body.results.map((r) => r.objectId).sort();

const countPosts = async () =>
  (await ok(await t.service.request('GET', '/classes/Post', { as: 'master', query: { count: 1, limit: 0 } })))
    .count as number;

beforeAll(async () => {
  t = await startBff();
  admin = await t.login('admin');
  viewer = await t.login('viewer');
  await ok(
    await t.service.request('POST', '/schemas/Post', {
      as: 'master',
      body: { className: 'Post', fields: { title: { type: 'String' }, secret: { type: 'String' } } },
    }),
  );
  for (const name of ['ann', 'bob']) {
    const u = await ok(
      await t.service.request('POST', '/users', { body: { username: name, password: `${name}-pw` } }),
    );
    ids[name] = u.objectId;
  }
  annToken = (
    await ok(await t.service.request('POST', '/login', { body: { username: 'ann', password: 'ann-pw' } }))
  ).sessionToken;
  const post = (title: string, ACL: unknown) =>
    t.service.request('POST', '/classes/Post', { as: 'master', body: { title, ACL } }).then(ok);
  ids.public = (await post('public', { '*': { read: true } })).objectId;
  ids.annOnly = (await post('ann only', { [ids.ann!]: { read: true, write: true } })).objectId;
  ids.bobOnly = (await post('bob only', { [ids.bob!]: { read: true, write: true } })).objectId;
  ids.masterOnly = (await post('master only', {})).objectId;
});

afterAll(async () => {
  await t?.close();
});

describe('an admin console user', () => {
  it('as master: a GET answers every row, with the status, the time and no dry run', async () => {
    const res = await admin.post(CONSOLE, { method: 'GET', path: '/classes/Post', as: { kind: 'master' } });
    expect(res.status).toBe(200);
    expect(res.json.status).toBe(200);
    expect(res.json.code).toBeUndefined();
    expect(res.json.dryRun).toBe(false);
    expect(res.json.via).toBe('master-key');
    expect(typeof res.json.ms).toBe('number');
    expect(idsOf(res.json.body)).toEqual([ids.public, ids.annOnly, ids.bobOnly, ids.masterOnly].sort());
  });

  it('as master: query parameters are passed (where as JSON, keys, count)', async () => {
    const res = await admin.post(CONSOLE, {
      method: 'GET',
      path: '/classes/Post',
      query: { where: { title: 'public' }, keys: 'title', count: 1 },
      as: { kind: 'master' },
    });
    expect(res.json.status).toBe(200);
    expect(res.json.body.count).toBe(1);
    expect(res.json.body.results).toMatchObject([{ objectId: ids.public, title: 'public' }]);
    // A where typed as text (the console's text box) is sent as is.
    const asText = await admin.post(CONSOLE, {
      method: 'GET',
      path: '/classes/Post',
      query: { where: '{"title":"ann only"}' },
      as: { kind: 'master' },
    });
    expect(idsOf(asText.json.body)).toEqual([ids.annOnly]);
  });

  it('as master: a POST creates the row and is audited', async () => {
    const before = await countPosts();
    const res = await admin.post(CONSOLE, {
      method: 'POST',
      path: '/classes/Post',
      body: { title: 'made in the console' },
      as: { kind: 'master' },
    });
    expect(res.status).toBe(200);
    expect(res.json.status).toBe(201);
    expect(res.json.dryRun).toBe(false);
    const id = res.json.body.objectId as string;
    expect(id).toMatch(/^[A-Za-z0-9]+$/);
    expect(await countPosts()).toBe(before + 1);
    const row = await ok(await t.service.request('GET', `/classes/Post/${id}`, { as: 'master' }));
    expect(row.title).toBe('made in the console');
    const audit = t.bff.ctx.audit.list({ action: 'api-console.call' });
    expect(audit[0]).toMatchObject({ user: 'admin', app: 'test-app', target: 'POST /classes/Post' });
    expect(audit[0]!.after).toEqual({ status: 201 });
  });

  it("as master: the service's error is the call's answer (status, code, text)", async () => {
    const res = await admin.post(CONSOLE, {
      method: 'GET',
      path: '/classes/Post/nope',
      as: { kind: 'master' },
    });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      status: 404,
      code: 101,
      body: { code: 101, error: 'Object not found.' },
    });
  });

  it('as master: session tokens in the answer are hidden', async () => {
    const res = await admin.post(CONSOLE, { method: 'GET', path: '/sessions', as: { kind: 'master' } });
    expect(res.json.status).toBe(200);
    expect(res.json.body.results.length).toBeGreaterThan(0);
    for (const s of res.json.body.results) expect(s.sessionToken).toBe('[FILTERED]');
    expect(res.text).not.toContain(annToken);
  });

  it("as a user: a GET answers what that user's own REST find answers", async () => {
    const res = await admin.post(CONSOLE, {
      method: 'GET',
      path: '/classes/Post',
      as: { kind: 'user', userId: ids.ann },
    });
    expect(res.status).toBe(200);
    expect(res.json.status).toBe(200);
    expect(res.json.dryRun).toBe(false);
    expect(res.json.via).toBe('security-evaluate');
    const rest = await ok(await t.service.request('GET', '/classes/Post', { sessionToken: annToken }));
    expect(idsOf(res.json.body)).toEqual(idsOf(rest));
    expect(idsOf(res.json.body)).toContain(ids.annOnly);
    expect(idsOf(res.json.body)).not.toContain(ids.bobOnly);
  });

  it("as a user: GET /users/me answers that user's row", async () => {
    const res = await admin.post(CONSOLE, {
      method: 'GET',
      path: '/users/me',
      as: { kind: 'user', userId: ids.ann },
    });
    expect(res.json.status).toBe(200);
    expect(res.json.body.objectId).toBe(ids.ann);
    expect(res.json.body.username).toBe('ann');
  });

  it('as a user: a write is a dry run and changes nothing', async () => {
    const before = await countPosts();
    const res = await admin.post(CONSOLE, {
      method: 'PUT',
      path: `/classes/Post/${ids.annOnly}`,
      body: { title: 'changed by ann?' },
      as: { kind: 'user', userId: ids.ann },
    });
    expect(res.status).toBe(200);
    expect(res.json.status).toBe(200);
    expect(res.json.dryRun).toBe(true);
    expect(res.json.wouldHave).toMatchObject({
      op: 'update',
      className: 'Post',
      objectId: ids.annOnly,
      before: { title: 'ann only' },
      after: { title: 'changed by ann?' },
    });
    const created = await admin.post(CONSOLE, {
      method: 'POST',
      path: '/classes/Post',
      body: { title: 'dry' },
      as: { kind: 'user', userId: ids.ann },
    });
    expect(created.json).toMatchObject({ status: 201, dryRun: true, via: 'security-evaluate' });
    const row = await ok(await t.service.request('GET', `/classes/Post/${ids.annOnly}`, { as: 'master' }));
    expect(row.title).toBe('ann only');
    expect(await countPosts()).toBe(before);
    // No audit entry: nothing changed.
    expect(t.bff.ctx.audit.list({ action: 'api-console.call' }).map((e) => e.target)).toEqual([
      'POST /classes/Post',
    ]);
  });

  it("as a user: a write the ACL refuses answers the service's refusal, as a dry run", async () => {
    const res = await admin.post(CONSOLE, {
      method: 'DELETE',
      path: `/classes/Post/${ids.bobOnly}`,
      as: { kind: 'user', userId: ids.ann },
    });
    expect(res.json).toMatchObject({
      status: 404,
      code: 101,
      dryRun: true,
      body: { code: 101, error: 'Object not found.' },
    });
    expect((await t.service.request('GET', `/classes/Post/${ids.bobOnly}`, { as: 'master' })).status).toBe(
      200,
    );
  });

  it('as a user: an unknown user answers 404 {code: 101}', async () => {
    const res = await admin.post(CONSOLE, {
      method: 'GET',
      path: '/classes/Post',
      as: { kind: 'user', userId: 'noSuchUser' },
    });
    expect(res.status).toBe(404);
    expect(res.json.code).toBe(101);
  });

  it('as a user: a path /security/evaluate does not run answers 400 with the supported list', async () => {
    const res = await admin.post(CONSOLE, {
      method: 'GET',
      path: '/schemas',
      as: { kind: 'user', userId: ids.ann },
    });
    expect(res.status).toBe(400);
    expect(res.json).toEqual({
      code: 107,
      error: `A call as a user supports only these paths: ${EVALUATE_PATHS}. Send GET /schemas as master.`,
    });
    const write = await admin.post(CONSOLE, {
      method: 'POST',
      path: '/functions/hello',
      body: {},
      as: { kind: 'anonymous' },
    });
    expect(write.status).toBe(400);
    expect(write.json.error).toBe(
      `A call as anonymous (writes) supports only these paths: ${EVALUATE_PATHS}. Send POST /functions/hello as master.`,
    );
  });

  it('as anonymous: a GET goes with the application keys only and answers what a REST-key find answers', async () => {
    const res = await admin.post(CONSOLE, {
      method: 'GET',
      path: '/classes/Post',
      as: { kind: 'anonymous' },
    });
    expect(res.json.status).toBe(200);
    expect(res.json.via).toBe('application-keys');
    const rest = await ok(await t.service.request('GET', '/classes/Post', { as: 'rest' }));
    expect(idsOf(res.json.body)).toEqual(idsOf(rest));
    expect(idsOf(res.json.body)).toContain(ids.public);
    expect(idsOf(res.json.body)).not.toContain(ids.annOnly);
  });

  it("as anonymous: a master-only GET answers the service's refusal", async () => {
    const res = await admin.post(CONSOLE, { method: 'GET', path: '/schemas', as: { kind: 'anonymous' } });
    expect(res.status).toBe(200);
    expect(res.json.status).toBe(403);
    expect(res.json.code).toBe(119);
    expect(res.json.body.code).toBe(119);
  });

  it('as anonymous: a write is a dry run through /security/evaluate', async () => {
    const before = await countPosts();
    const res = await admin.post(CONSOLE, {
      method: 'POST',
      path: '/classes/Post',
      body: { title: 'anon' },
      as: { kind: 'anonymous' },
    });
    expect(res.json).toMatchObject({ dryRun: true, via: 'security-evaluate' });
    expect(await countPosts()).toBe(before);
  });
});

describe('a read-only console user', () => {
  it('may send a GET (as master too)', async () => {
    const res = await viewer.post(CONSOLE, { method: 'GET', path: '/classes/Post', as: { kind: 'master' } });
    expect(res.status).toBe(200);
    expect(res.json.status).toBe(200);
    expect(res.json.body.results.length).toBeGreaterThanOrEqual(4);
  });

  it('is refused any other method, whoever the call runs as, and nothing changes', async () => {
    const before = await countPosts();
    for (const as of [{ kind: 'master' }, { kind: 'user', userId: ids.ann }, { kind: 'anonymous' }]) {
      for (const method of ['POST', 'PUT', 'DELETE']) {
        const res = await viewer.post(CONSOLE, { method, path: '/classes/Post', body: { title: 'x' }, as });
        expect(res.status, `${method} as ${as.kind}`).toBe(403);
        expect(res.json).toEqual({ code: 119, error: READ_ONLY_REFUSAL });
      }
    }
    expect(await countPosts()).toBe(before);
  });

  it('is refused a GET that changes state (GET /login creates a session)', async () => {
    const res = await viewer.post(CONSOLE, {
      method: 'GET',
      path: '/login',
      query: { username: 'ann', password: 'ann-pw' },
      as: { kind: 'master' },
    });
    expect(res.status).toBe(403);
    expect(res.json).toEqual({
      code: 119,
      error: 'GET /login signs in and creates a session: read-only console users cannot send it.',
    });
  });

  it('the route refuses by itself, without the foundation guard (missing body included)', async () => {
    const user: ConsoleUser = { username: 'viewer', role: 'read-only' };
    const app = express();
    app.use(express.json());
    app.use((req, _res, next) => {
      (req as typeof req & { consoleUser: ConsoleUser }).consoleUser = user;
      next();
    });
    const router = express.Router();
    registerApiRoutes(router, t.bff.ctx);
    app.use('/bff', router);
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    try {
      const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
      const post = (body?: unknown) =>
        fetch(`${base}${CONSOLE}`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
      for (const body of [
        undefined,
        { method: 'POST', path: '/classes/Post', body: {}, as: { kind: 'master' } },
      ]) {
        const res = await post(body);
        expect(res.status).toBe(403);
        expect(await res.json()).toEqual({ code: 119, error: READ_ONLY_REFUSAL });
      }
      const get = await post({ method: 'GET', path: '/classes/Post', as: { kind: 'master' } });
      expect(get.status).toBe(200);
      const login = await post({ method: 'GET', path: '/login', as: { kind: 'anonymous' } });
      expect(login.status).toBe(403);
      expect(((await login.json()) as { error: string }).error).toBe(
        'GET /login signs in and creates a session: read-only console users cannot send it.',
      );
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});

describe('the guard on the call', () => {
  const PATH_CASES: Array<[string, string]> = [
    [
      'http://evil.example/api/classes/Post',
      "must start with / (a path under the service's REST API, e.g. /classes/Post; no absolute URL)",
    ],
    [
      'classes/Post',
      "must start with / (a path under the service's REST API, e.g. /classes/Post; no absolute URL)",
    ],
    ['//evil.example/classes/Post', 'must not start with // (no host)'],
    ['/classes/../schemas', 'must not contain . or .. segments'],
    ['/classes/%2e%2E/schemas', 'must not contain . or .. segments'],
    ['/classes/./Post', 'must not contain . or .. segments'],
    ['/classes/a%2Fb', 'must not encode / or \\ inside a segment'],
    ['/classes/a%5Cb', 'must not encode / or \\ inside a segment'],
    ['/classes/Post?where={}', 'must not carry a query string or fragment (put parameters in query)'],
    ['/classes/Post#x', 'must not carry a query string or fragment (put parameters in query)'],
    ['/classes//Post', 'must not contain empty segments'],
    ['/classes/Post/', 'must not contain empty segments'],
    ['/classes/Po st', 'must contain only URL path characters (no spaces, backslashes or quotes)'],
    ['/classes\\..\\schemas', 'must contain only URL path characters (no spaces, backslashes or quotes)'],
    ['/classes/%zz', 'must be validly percent-encoded'],
    ['/classes/a%0Ab', 'must not contain control characters'],
    ['', 'must not be empty'],
  ];
  for (const [path, message] of PATH_CASES) {
    it(`path ${JSON.stringify(path)} → 400 {code: 107}`, async () => {
      const res = await admin.post(CONSOLE, { method: 'GET', path, as: { kind: 'master' } });
      expect(res.status).toBe(400);
      expect(res.json).toEqual({ code: 107, error: `Invalid API call: path: ${message}` });
    });
  }

  it('refuses a host or header override, other methods, a body on GET and credentials in the body', async () => {
    const cases: Array<[unknown, string]> = [
      [
        { method: 'GET', path: '/classes/Post', as: { kind: 'master' }, headers: { Host: 'evil.example' } },
        'Invalid API call: Unrecognized key: "headers"',
      ],
      [
        { method: 'GET', path: '/classes/Post', as: { kind: 'master' }, serverURL: 'http://evil.example' },
        'Invalid API call: Unrecognized key: "serverURL"',
      ],
      [
        { method: 'PATCH', path: '/classes/Post', as: { kind: 'master' } },
        'Invalid API call: method: Invalid option: expected one of "GET"|"POST"|"PUT"|"DELETE"',
      ],
      [
        { method: 'GET', path: '/classes/Post', body: {}, as: { kind: 'master' } },
        'Invalid API call: body: a GET carries no body (put parameters in query)',
      ],
      [
        {
          method: 'POST',
          path: '/classes/Post',
          body: { _method: 'GET', _MasterKey: 'x' },
          as: { kind: 'anonymous' },
        },
        'Invalid API call: body: must not carry _method, _MasterKey (who the call runs as is chosen with "as")',
      ],
      [
        { method: 'GET', path: '/classes/Post', as: { kind: 'user', userId: 'a/b' } },
        'Invalid API call: as.userId: must be an object id',
      ],
      [
        { method: 'GET', path: '/classes/Post', as: { kind: 'root' } },
        "Invalid API call: as.kind: Invalid discriminator value. Expected 'master' | 'user' | 'anonymous'",
      ],
      [
        { method: 'GET', path: '/classes/Post', query: { 'a-b': '1' }, as: { kind: 'master' } },
        'Invalid API call: query: "a-b" is not a parameter name (letters, digits, underscores)',
      ],
    ];
    for (const [body, error] of cases) {
      const res = await admin.post(CONSOLE, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json, JSON.stringify(body)).toEqual({ code: 107, error });
    }
  });

  it('an unknown app answers 404', async () => {
    const res = await admin.post('/bff/apps/nope/api-console', {
      method: 'GET',
      path: '/classes/Post',
      as: { kind: 'master' },
    });
    expect(res.status).toBe(404);
    expect(res.json).toEqual({ code: 101, error: 'Unknown app: nope.' });
  });
});

describe('keys', () => {
  it('a stored value equal to the master key comes back filtered', async () => {
    const created = await admin.post(CONSOLE, {
      method: 'POST',
      path: '/classes/Post',
      body: { title: 'holds a key', secret: KEYS.masterKey },
      as: { kind: 'master' },
    });
    const res = await admin.post(CONSOLE, {
      method: 'GET',
      path: `/classes/Post/${created.json.body.objectId}`,
      as: { kind: 'master' },
    });
    expect(res.json.body.secret).toBe('[FILTERED]');
    expect(res.text).not.toContain(KEYS.masterKey);
  });

  it('no key in any response of this suite', () => {
    expect(t.responses.filter((r) => r.path.endsWith('/api-console')).length).toBeGreaterThan(20);
    expect(findLeaks(t.responses, t.secrets)).toEqual([]);
  });
});

describe('copy as curl', () => {
  const SERVICE = 'https://data.example.com/api';

  it('as master: the master key is the $MASTER_KEY placeholder, the query is encoded', () => {
    const call: ApiCall = {
      method: 'GET',
      path: '/classes/Post',
      query: { where: { title: "it's" }, limit: 10 },
      as: { kind: 'master' },
    };
    expect(curlOf(`${SERVICE}/`, call)).toBe(
      [
        `curl -X GET 'https://data.example.com/api/classes/Post?where=%7B%22title%22%3A%22it%27s%22%7D&limit=10'`,
        '-H "X-Backend-Application-Id: $APPLICATION_ID"',
        '-H "X-Backend-Master-Key: $MASTER_KEY"',
      ].join(' \\\n  '),
    );
  });

  it('as a user: the REST key and a placeholder session token; the body is single-quoted', () => {
    const call: ApiCall = {
      method: 'POST',
      path: '/classes/Post',
      query: {},
      body: { title: "Ann's post" },
      as: { kind: 'user', userId: 'u1' },
    };
    expect(curlOf(SERVICE, call)).toBe(
      [
        `curl -X POST 'https://data.example.com/api/classes/Post'`,
        '-H "X-Backend-Application-Id: $APPLICATION_ID"',
        '-H "X-Backend-REST-API-Key: $REST_API_KEY"',
        '-H "X-Backend-Session-Token: $SESSION_TOKEN"',
        '-H "Content-Type: application/json"',
        `--data-raw '{"title":"Ann'\\''s post"}'`,
      ].join(' \\\n  '),
    );
  });

  it('as anonymous: the REST key only', () => {
    const text = curlOf(SERVICE, {
      method: 'DELETE',
      path: '/classes/Post/x',
      query: {},
      as: { kind: 'anonymous' },
    });
    expect(text).toContain('-H "X-Backend-REST-API-Key: $REST_API_KEY"');
    expect(text).not.toContain('Master');
    expect(text).not.toContain('Session');
  });
});

describe('POST /apps/:appId/api-console/curl', () => {
  it('answers the command with placeholders and sends nothing; read-only users may ask too', async () => {
    for (const who of [admin, viewer]) {
      const res = await who.post(`${CONSOLE}/curl`, {
        method: 'POST',
        path: '/classes/Post',
        body: { title: 'not sent' },
        as: { kind: 'master' },
      });
      expect(res.status).toBe(200);
      expect(res.json.curl).toContain("curl -X POST '");
      expect(res.json.curl).toContain('-H "X-Backend-Master-Key: $MASTER_KEY"');
      expect(res.text).not.toContain(KEYS.masterKey);
    }
    const posts = await admin.get(
      `/bff/apps/test-app/classes/Post?where=${encodeURIComponent(JSON.stringify({ title: 'not sent' }))}`,
    );
    expect(posts.json.results).toEqual([]);
    const bad = await admin.post(`${CONSOLE}/curl`, {
      method: 'GET',
      path: 'classes',
      as: { kind: 'master' },
    });
    expect(bad.status).toBe(400);
    expect(bad.json.code).toBe(107);
  });
});
