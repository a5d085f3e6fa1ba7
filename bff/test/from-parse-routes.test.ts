import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BffFetch, type StartedBff, startBff } from './helpers/bff.ts';

/**
 * The console's import from parse-server through the bff (POST /bff/apps/<app>/transfer/parse,
 * GET .../transfer/parse/<id>): the body checked, the service's refusals passed on, and ONE audit
 * entry per import, written when the bff sees it end, without the master key or database URL.
 * An incumbent nobody listens on makes the run fail at once; the real incumbent is driven by
 * server/test/from-parse and e2e/parse-import.e2e.test.ts.
 */

let t: StartedBff;
let admin: BffFetch;
const P = '/bff/apps/test-app/transfer/parse';
const MASTER_KEY = 'incumbent-master-key-3f9a';
const DATABASE_URL = 'postgres://parse:db-password-77c1@127.0.0.1:9/parse';

beforeAll(async () => {
  t = await startBff();
  admin = await t.login('admin');
});

afterAll(async () => {
  await t?.close();
});

describe('import from parse-server through the bff', () => {
  it('refuses a bad body (its own check, then the service’s) and starts nothing', async () => {
    const missing = await admin(P, { method: 'POST', body: { serverURL: 'http://x/parse', appId: 'a' } });
    expect(missing.status).toBe(400);
    expect(missing.json).toEqual({
      code: 107,
      error:
        'Invalid import from parse-server: masterKey: Invalid input: expected string, received undefined',
    });
    const badUrl = await admin(P, {
      method: 'POST',
      body: { serverURL: 'ftp://x/parse', appId: 'a', masterKey: MASTER_KEY },
    });
    expect(badUrl.status).toBe(400);
    expect(badUrl.json).toEqual({ code: 107, error: 'serverURL must be the http(s) URL of parse-server.' });
    const unknown = await admin.get(`${P}/nope`);
    expect(unknown.status).toBe(404);
    expect(unknown.json).toEqual({ code: 101, error: 'No import from parse-server nope.' });
    expect(t.bff.ctx.audit.list({ action: 'app.importFromParse' })).toEqual([]);
  });

  it('follows a run to its end and audits it once, without the key or the database URL', async () => {
    const serverURL = 'http://127.0.0.1:9/parse';
    const started = await admin(P, {
      method: 'POST',
      body: { serverURL, appId: 'old-app', masterKey: MASTER_KEY, postgresURL: DATABASE_URL, sessions: true },
    });
    expect(started.status).toBe(202);
    expect(started.json).toMatchObject({ status: 'running', serverURL, appId: 'old-app', postgres: true });
    await expect.poll(async () => (await admin.get(`${P}/${started.json.id}`)).json.status).toBe('failed');
    await expect.poll(() => t.bff.ctx.audit.list({ action: 'app.importFromParse' }).length).toBe(1);
    const [entry] = t.bff.ctx.audit.list({ action: 'app.importFromParse' });
    expect(entry).toMatchObject({
      user: 'admin',
      app: 'test-app',
      action: 'app.importFromParse',
      target: serverURL,
      before: null,
      after: {
        serverURL,
        appId: 'old-app',
        sessions: true,
        postgres: true,
        id: started.json.id,
        status: 'failed',
        summary: null,
        error: expect.stringMatching(/^cannot reach parse-server at http:\/\/127\.0\.0\.1:9\/parse: /),
      },
    });
    const text = JSON.stringify(entry) + started.text;
    expect(text).not.toContain(MASTER_KEY);
    expect(text).not.toContain('db-password-77c1');
    // The follower stops after the entry: no second one.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(t.bff.ctx.audit.list({ action: 'app.importFromParse' })).toHaveLength(1);
  });
});
