import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BffFetch, type StartedBff, startBff } from './helpers/bff.ts';

/**
 * The console's import from parse-server through the bff (GET /bff/apps/<app>/transfer/parse-sources,
 * POST /bff/apps/<app>/transfer/parse, GET .../transfer/parse/<id>): the sources listed without
 * their keys, only a configured source started, and ONE audit entry per import, written when the
 * bff sees it end, without the master key or database URL.
 * An incumbent nobody listens on makes the run fail at once; the real incumbent is driven by
 * server/test/from-parse and e2e/parse-import.e2e.test.ts.
 */

let t: StartedBff;
let admin: BffFetch;
const P = '/bff/apps/test-app/transfer/parse';
const MASTER_KEY = 'incumbent-master-key-3f9a';
const DATABASE_URL = 'postgres://parse:db-password-77c1@127.0.0.1:9/parse';
const SERVER_URL = 'http://127.0.0.1:9/parse';

beforeAll(async () => {
  t = await startBff({
    apps: [
      {
        id: 'test-app',
        parseSources: [
          {
            name: 'old',
            serverURL: SERVER_URL,
            appId: 'old-app',
            masterKey: MASTER_KEY,
            postgresURL: DATABASE_URL,
          },
          {
            name: 'bare',
            serverURL: 'http://127.0.0.1:9/other',
            appId: 'other-app',
            masterKey: 'other-key-9d1e',
          },
        ],
      },
      { id: 'second-app' },
    ],
  });
  admin = await t.login('admin');
});

afterAll(async () => {
  await t?.close();
});

describe('import from parse-server through the bff', () => {
  it('lists the configured sources without their keys, to read-only users too', async () => {
    const expected = {
      results: [
        { name: 'old', serverURL: SERVER_URL, appId: 'old-app', postgres: true },
        { name: 'bare', serverURL: 'http://127.0.0.1:9/other', appId: 'other-app', postgres: false },
      ],
    };
    const listed = await admin.get('/bff/apps/test-app/transfer/parse-sources');
    expect(listed.status).toBe(200);
    expect(listed.json).toEqual(expected);
    const viewer = await t.login('viewer');
    expect((await viewer.get('/bff/apps/test-app/transfer/parse-sources')).json).toEqual(expected);
    const other = await admin.get('/bff/apps/second-app/transfer/parse-sources');
    expect(other.json).toEqual({ results: [] });
  });

  it('starts only a configured source, and a read-only user none', async () => {
    const oldShape = await admin(P, {
      method: 'POST',
      body: { serverURL: 'http://x/parse', appId: 'a', masterKey: MASTER_KEY },
    });
    expect(oldShape.status).toBe(400);
    expect(oldShape.json).toEqual({
      code: 107,
      error:
        'Invalid import from parse-server: source: Invalid input: expected string, received undefined; Unrecognized keys: "serverURL", "appId", "masterKey"',
    });
    const unknownSource = await admin(P, { method: 'POST', body: { source: 'nope' } });
    expect(unknownSource.status).toBe(404);
    expect(unknownSource.json).toEqual({ code: 101, error: 'No import source nope is configured.' });
    // Sources belong to their app: the second app has none.
    const elsewhere = await admin('/bff/apps/second-app/transfer/parse', {
      method: 'POST',
      body: { source: 'old' },
    });
    expect(elsewhere.status).toBe(404);
    expect(elsewhere.json).toEqual({ code: 101, error: 'No import source old is configured.' });
    const viewer = await t.login('viewer');
    const refused = await viewer(P, { method: 'POST', body: { source: 'old' } });
    expect(refused.status).toBe(403);
    expect(refused.json).toEqual({ code: 119, error: 'Read-only console users cannot change anything.' });
    const unknown = await admin.get(`${P}/nope`);
    expect(unknown.status).toBe(404);
    expect(unknown.json).toEqual({ code: 101, error: 'No import from parse-server nope.' });
    expect(t.bff.ctx.audit.list({ action: 'app.importFromParse' })).toEqual([]);
  });

  it('follows a run to its end and audits it once, without the key or the database URL', async () => {
    const serverURL = SERVER_URL;
    const started = await admin(P, { method: 'POST', body: { source: 'old', sessions: true } });
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
        source: 'old',
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
