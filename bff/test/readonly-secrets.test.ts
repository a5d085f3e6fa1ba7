import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { roleMay } from '../src/capabilities.ts';
import type { ConsoleUser } from '../src/context.ts';
import { registerApiRoutes } from '../src/routes/index.ts';
import { type BffFetch, findLeaks, type StartedBff, startBff } from './helpers/bff.ts';

/**
 * Finding 4 of "Trust at the seams": a read-only console user must never obtain anything that
 * grants write authority (reset or verification links, session tokens, credentials in authData,
 * keys). The API console refuses the service paths that exist to hand them out, in every spelling;
 * every answer a read-only user gets is filtered; and no query of theirs may compare a secret field
 * (which would let them read it character by character). Admins keep today's behaviour.
 */

const A = '/bff/apps/test-app';
const CONSOLE = `${A}/api-console`;

const REFUSED = {
  devMailbox:
    'GET /devMailbox answers password reset and verification links: read-only console users cannot send it.',
  session:
    'GET of the _Session class (/sessions, /classes/_Session and the like) answers session tokens: read-only console users cannot send it.',
  aggregate:
    'GET /aggregate/<C> can copy secret fields under other names: read-only console users cannot send it.',
  login: 'GET /login signs in and creates a session: read-only console users cannot send it.',
  verify: 'GET /apps/<id>/verify_email spends a verification token: read-only console users cannot send it.',
  query: (field: string) => `Read-only console users cannot filter or sort on secret fields (${field}).`,
};

let t: StartedBff;
let admin: BffFetch;
let viewer: BffFetch;
const ids: Record<string, string> = {};
let annToken = '';
let anonymousId = '';

async function ok(res: { status: number; json: any; text: string }): Promise<any> {
  if (res.status >= 300) throw new Error(`${res.status} ${res.text}`);
  return res.json;
}

/** The tokens of the links in the dev mailbox (read by the test with the master key), once `count` are there. */
async function mailedTokens(count: number): Promise<string[]> {
  for (let i = 0; ; i++) {
    const mails = await ok(await t.service.request('GET', '/devMailbox', { as: 'master' }));
    const tokens: string[] = mails.results.flatMap((m: { text: string }) =>
      [...m.text.matchAll(/token=([0-9a-f]+)/g)].map((x) => x[1]!),
    );
    // Mail is sent after the request is answered.
    if (tokens.length >= count || i === 150) return tokens;
    await new Promise((r) => setTimeout(r, 20));
  }
}

const asMaster = (path: string, query?: Record<string, unknown>) => ({
  method: 'GET',
  path,
  ...(query ? { query } : {}),
  as: { kind: 'master' },
});

beforeAll(async () => {
  t = await startBff({ service: { verifyUserEmails: true } });
  admin = await t.login('admin');
  viewer = await t.login('viewer');
  const ann = await ok(
    await t.service.request('POST', '/users', {
      body: { username: 'ann', password: 'ann-pw', email: 'ann@example.com' },
    }),
  );
  ids.ann = ann.objectId;
  annToken = ann.sessionToken;
  anonymousId = '6c1f0b1e-4d2a-4b8e-9a51-0f7c3e2d1a90';
  await ok(
    await t.service.request('POST', '/users', { body: { authData: { anonymous: { id: anonymousId } } } }),
  );
  ids.session = (
    await ok(
      await t.service.request('GET', '/classes/_Session', {
        as: 'master',
        query: { where: { sessionToken: annToken } },
      }),
    )
  ).results[0].objectId;
  await ok(
    await t.service.request('PUT', '/config', {
      as: 'master',
      body: {
        params: { stripeSecret: 'sk_live_ro_0123456789', greeting: 'hello' },
        masterKeyOnly: { stripeSecret: true },
      },
    }),
  );
});

afterAll(async () => {
  await t?.close();
});

describe('the finding: a read-only user reads a password reset link through the API console', () => {
  it('GET /devMailbox as master is refused; the reset link never reaches the read-only user', async () => {
    expect((await admin.post(`${A}/users/${ids.ann}/password-reset`)).status).toBe(200);
    const tokens = await mailedTokens(2);
    expect(tokens.length).toBe(2); // the verification mail of the sign-up and the reset mail
    const res = await viewer.post(CONSOLE, asMaster('/devMailbox'));
    expect(res.status).toBe(403);
    expect(res.json).toEqual({ code: 119, error: REFUSED.devMailbox });
    for (const token of tokens) expect(res.text).not.toContain(token);
  });

  it('an admin still reads the mailbox (unchanged)', async () => {
    const res = await admin.post(CONSOLE, asMaster('/devMailbox'));
    expect(res.status).toBe(200);
    expect(res.json.status).toBe(200);
    for (const token of await mailedTokens(2)) expect(res.text).toContain(token);
  });
});

describe('the API console refuses secret-bearing service paths in every spelling', () => {
  const cases: Array<[string, string]> = [
    ['/devMailbox', REFUSED.devMailbox],
    ['/devMailbox/', REFUSED.devMailbox],
    ['//devMailbox', REFUSED.devMailbox],
    ['/%64evMailbox', REFUSED.devMailbox],
    ['/sessions', REFUSED.session],
    ['/sessions/', REFUSED.session],
    ['/sessions/me', REFUSED.session],
    ['/sessions/ID', REFUSED.session],
    ['/%73essions', REFUSED.session],
    ['/classes/_Session', REFUSED.session],
    ['/classes//_Session', REFUSED.session],
    ['/classes/%5FSession', REFUSED.session],
    ['/classes/_Session/ID', REFUSED.session],
    ['/live/trace/_Session', REFUSED.session],
    ['/aggregate/_Session', REFUSED.session],
    ['/aggregate/_User', REFUSED.aggregate],
    ['/login', REFUSED.login],
    ['/login/', REFUSED.login],
    ['//login', REFUSED.login],
    ['/%6Cogin', REFUSED.login],
    ['/%6cogin', REFUSED.login],
    ['/apps/test-app/verify_email', REFUSED.verify],
    ['/apps/test-app/%76erify_email', REFUSED.verify],
  ];
  for (const [path, error] of cases) {
    it(`GET ${path} → 403`, async () => {
      const sessionsBefore = (await t.service.request('GET', '/classes/_Session', { as: 'master' })).json
        .results.length;
      for (const as of [{ kind: 'master' }, { kind: 'anonymous' }, { kind: 'user', userId: ids.ann }]) {
        const res = await viewer.post(CONSOLE, {
          method: 'GET',
          path: path.replace('ID', ids.session!),
          query: path.includes('login') ? { username: 'ann', password: 'ann-pw' } : {},
          as,
        });
        expect(res.status, `${path} as ${as.kind}`).toBe(403);
        expect(res.json).toEqual({ code: 119, error });
        expect(res.text).not.toContain(annToken);
      }
      // GET /login would have made a session.
      expect(
        (await t.service.request('GET', '/classes/_Session', { as: 'master' })).json.results.length,
      ).toBe(sessionsBefore);
    });
  }

  it('an admin still sends them (unchanged)', async () => {
    const sessions = await admin.post(CONSOLE, asMaster('/classes/_Session'));
    expect(sessions.status).toBe(200);
    expect(sessions.json.body.results.length).toBeGreaterThanOrEqual(2);
    const aggregate = await admin.post(
      CONSOLE,
      asMaster('/aggregate/_User', { pipeline: [{ $group: { _id: null, n: { $sum: 1 } } }] }),
    );
    expect(aggregate.status).toBe(200);
    expect(aggregate.json.status).toBe(200);
  });
});

describe('no query of a read-only user compares a secret field', () => {
  const where = (w: unknown) => encodeURIComponent(JSON.stringify(w));
  const oracles: Array<[string, string, () => Promise<{ status: number; json: any; text: string }>]> = [
    [
      'the data browser: where on _Session.sessionToken',
      'sessionToken',
      () => viewer.get(`${A}/classes/_Session?where=${where({ sessionToken: { $regex: '^r:' } })}`),
    ],
    [
      'the data browser: count with where on authData.anonymous.id',
      'authData',
      () =>
        viewer.get(`${A}/classes/_User/count?where=${where({ 'authData.anonymous.id': { $regex: '^6c' } })}`),
    ],
    [
      'the data browser: a subquery naming sessionToken',
      'sessionToken',
      () =>
        viewer.get(
          `${A}/classes/_User?where=${where({ objectId: { $inQuery: { className: '_Session', where: { sessionToken: { $exists: true } } } } })}`,
        ),
    ],
    [
      'the data browser: $select of sessionToken',
      'sessionToken',
      () =>
        viewer.get(
          `${A}/classes/_User?where=${where({ username: { $select: { query: { className: '_Session' }, key: 'sessionToken' } } })}`,
        ),
    ],
    [
      'the data browser: order by sessionToken',
      'sessionToken',
      () => viewer.get(`${A}/classes/_Session?order=-sessionToken`),
    ],
    [
      'the sessions view: where on sessionToken',
      'sessionToken',
      () => viewer.get(`${A}/sessions?where=${where({ sessionToken: { $gt: 'r:8' } })}`),
    ],
    [
      'the API console: where on authData',
      'authData',
      () =>
        viewer.post(
          CONSOLE,
          asMaster('/classes/_User', { where: { 'authData.anonymous.id': { $regex: '^6c' } } }),
        ),
    ],
    [
      'the API console: where as JSON text',
      'authData',
      () =>
        viewer.post(
          CONSOLE,
          asMaster('/users', { where: JSON.stringify({ authData: { $exists: true } }), count: 1 }),
        ),
    ],
    [
      'the Security API: evaluate as the user with where on sessionToken',
      'sessionToken',
      () =>
        viewer.post(`${A}/security/evaluate`, {
          viewpoint: { kind: 'user', userId: ids.ann },
          method: 'GET',
          path: '/sessions',
          query: { where: { sessionToken: { $regex: '^r:' } } },
        }),
    ],
    [
      'the realtime inspector: where on sessionToken',
      'sessionToken',
      () =>
        viewer.get(
          `${A}/realtime/stream?className=_Session&where=${where({ sessionToken: { $regex: '^r:a' } })}`,
        ),
    ],
  ];
  for (const [what, field, send] of oracles) {
    it(`${what} → 403`, async () => {
      const res = await send();
      expect(res.status).toBe(403);
      expect(res.json).toEqual({ code: 119, error: REFUSED.query(field) });
    });
  }

  it('an admin may still query them (unchanged)', async () => {
    const res = await admin.get(`${A}/classes/_Session/count?where=${where({ sessionToken: annToken })}`);
    expect(res.status).toBe(200);
    expect(res.json.count).toBe(1);
  });

  it('ordinary filters of a read-only user still work', async () => {
    const res = await viewer.get(`${A}/classes/_User?where=${where({ username: 'ann' })}&order=-createdAt`);
    expect(res.status).toBe(200);
    expect(res.json.results.map((r: { username: string }) => r.username)).toEqual(['ann']);
  });
});

describe('what a read-only user is answered is filtered', () => {
  it('the API console: _User rows as master, without authData', async () => {
    const res = await viewer.post(CONSOLE, asMaster('/classes/_User'));
    expect(res.status).toBe(200);
    expect(res.json.body.results.map((r: { username: string }) => r.username)).toContain('ann');
    expect(res.text).not.toContain(anonymousId);
  });

  it('config: masterKeyOnly values are hidden from a read-only user, in the view and in the API console', async () => {
    const view = await viewer.get(`${A}/config`);
    expect(view.status).toBe(200);
    expect(view.json).toEqual({
      params: { stripeSecret: '[FILTERED]', greeting: 'hello' },
      masterKeyOnly: { stripeSecret: true },
    });
    const call = await viewer.post(CONSOLE, asMaster('/config'));
    expect(call.json.body).toEqual(view.json);
    // An admin sees the value (unchanged).
    expect((await admin.get(`${A}/config`)).json.params.stripeSecret).toBe('sk_live_ro_0123456789');
  });

  it('schema documents are shown whole: field names and index keys are not secrets', async () => {
    const session = await viewer.get(`${A}/schemas/_Session`);
    expect(session.status).toBe(200);
    expect(session.json.fields.sessionToken).toEqual({ type: 'String' });
    const list = await viewer.get(`${A}/schemas`);
    const user = list.json.results.find((d: { className: string }) => d.className === '_User');
    expect(user.fields.authData).toEqual({ type: 'Object' });
    expect(user.fields.password).toEqual({ type: 'String' });
  });

  it('config: the masterKeyOnly flags stay flags, a secret-named parameter is hidden too', async () => {
    await ok(
      await t.service.request('PUT', '/config', {
        as: 'master',
        body: {
          params: { apiKey: 'master-only-key-77', token: 'public-token-78' },
          masterKeyOnly: { apiKey: true },
        },
      }),
    );
    const view = await viewer.get(`${A}/config`);
    expect(view.json.params.apiKey).toBe('[FILTERED]');
    expect(view.json.params.token).toBe('[FILTERED]');
    expect(view.json.masterKeyOnly).toEqual({ stripeSecret: true, apiKey: true });
    expect((await admin.get(`${A}/config`)).json.params.token).toBe('public-token-78');
    await ok(
      await t.service.request('PUT', '/config', {
        as: 'master',
        body: { params: { apiKey: { __op: 'Delete' }, token: { __op: 'Delete' } } },
      }),
    );
  });

  it('the audit log: a config change shows the read-only user no masterKeyOnly value', async () => {
    expect(
      (await admin.put(`${A}/config`, { params: { stripeSecret: 'sk_live_ro_rotated_42' } })).status,
    ).toBe(200);
    const viewed = await viewer.get('/bff/audit?action=config.update');
    expect(viewed.status).toBe(200);
    expect(viewed.json.results.length).toBe(1);
    expect(viewed.text).not.toContain('sk_live_ro_');
    expect((await admin.get('/bff/audit?action=config.update')).text).toContain('sk_live_ro_rotated_42');
  });

  it('a reset or verification link stored in a row reaches a read-only user without its token', async () => {
    const link = 'http://localhost/api/apps/test-app/reset?token=0123456789abcdef0123456789abcdef';
    const row = await ok(
      await t.service.request('POST', '/classes/Note', {
        as: 'master',
        body: { text: `reset here: ${link}` },
      }),
    );
    const res = await viewer.get(`${A}/classes/Note/${row.objectId}`);
    expect(res.status).toBe(200);
    expect(res.json.text).toBe('reset here: http://localhost/api/apps/test-app/reset?token=[FILTERED]');
    expect((await admin.get(`${A}/classes/Note/${row.objectId}`)).json.text).toBe(`reset here: ${link}`);
  });
});

describe('the read-only role is one capability set', () => {
  it('roleMay: admins may write and read secrets, read-only users neither', () => {
    expect(roleMay('admin', 'write')).toBe(true);
    expect(roleMay('admin', 'readSecrets')).toBe(true);
    expect(roleMay('read-only', 'write')).toBe(false);
    expect(roleMay('read-only', 'readSecrets')).toBe(false);
  });

  it('the foundation guard decides on the normal form of the path', async () => {
    // Express does not route these spellings to the question routes; the guard must not let them
    // through as questions either, nor refuse a question for its spelling.
    const explain = {
      operation: 'find',
      className: '_User',
      viewpoint: { kind: 'anonymous' },
    };
    expect((await viewer.post(`${A}/security/explain`, explain)).status).toBe(200);
    for (const path of [`${A}/security/explain/`, `${A}/security/%65xplain`]) {
      const res = await viewer.post(path, explain);
      expect([200, 404], path).toContain(res.status);
    }
  });

  it('the routes refuse by themselves, without the foundation guard', async () => {
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
      const mailbox = await fetch(`${base}${CONSOLE}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(asMaster('/%64evMailbox')),
      });
      expect(mailbox.status).toBe(403);
      expect(await mailbox.json()).toEqual({ code: 119, error: REFUSED.devMailbox });
      const config = await fetch(`${base}${A}/config`);
      expect(((await config.json()) as { params: Record<string, unknown> }).params.stripeSecret).toBe(
        '[FILTERED]',
      );
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it('no key in any response', () => {
    expect(findLeaks(t.responses, t.secrets)).toEqual([]);
  });
});
