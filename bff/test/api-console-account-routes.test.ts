import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { READ_ONLY_REFUSAL } from '../src/routes/api-console.ts';
import { type BffFetch, type StartedBff, startBff } from './helpers/bff.ts';

/**
 * The account routes that act with a user's authority without the user's session: POST /loginAs
 * (the master key makes a session for any user) and /verifyPassword (a password check, counted
 * toward lockout). Through the API console a read-only console user reaches neither, in any
 * method or spelling and as whoever the call would run; an admin reaches both.
 */

const CONSOLE = '/bff/apps/test-app/api-console';
const VERIFY_REFUSAL =
  "GET /verifyPassword checks a user's password: read-only console users cannot send it.";

let t: StartedBff;
let admin: BffFetch;
let viewer: BffFetch;
let annId = '';

const sessionsOfAnn = async () =>
  (
    await t.service.request('GET', '/classes/_Session', {
      as: 'master',
      query: {
        where: { user: { __type: 'Pointer', className: '_User', objectId: annId } },
        count: 1,
        limit: 0,
      },
    })
  ).json.count as number;

beforeAll(async () => {
  t = await startBff();
  admin = await t.login('admin');
  viewer = await t.login('viewer');
  const ann = await t.service.request('POST', '/users', { body: { username: 'ann', password: 'ann-pw' } });
  expect(ann.status, ann.text).toBe(201);
  annId = ann.json.objectId;
});

afterAll(async () => {
  await t?.close();
});

describe('a read-only console user', () => {
  it('is refused POST /loginAs and POST /verifyPassword, as master, a user or anonymous; no session is made', async () => {
    const before = await sessionsOfAnn();
    for (const as of [{ kind: 'master' }, { kind: 'user', userId: annId }, { kind: 'anonymous' }]) {
      for (const [path, body] of [
        ['/loginAs', { userId: annId }],
        ['/verifyPassword', { username: 'ann', password: 'ann-pw' }],
        ['/loginAs/', { userId: annId }],
        ['//%6CoginAs', { userId: annId }],
      ] as const) {
        const res = await viewer.post(CONSOLE, { method: 'POST', path, body, as });
        expect(res.status, `${path} as ${as.kind}`).toBe(403);
        expect(res.json).toEqual({ code: 119, error: READ_ONLY_REFUSAL });
      }
    }
    expect(await sessionsOfAnn()).toBe(before);
  });

  it('is refused GET /verifyPassword (the SDKs’ method), in any spelling', async () => {
    for (const path of ['/verifyPassword', '/verifyPassword/', '//%76erifyPassword']) {
      const res = await viewer.post(CONSOLE, {
        method: 'GET',
        path,
        query: { username: 'ann', password: 'ann-pw' },
        as: { kind: 'master' },
      });
      expect(res.status, path).toBe(403);
      expect(res.json).toEqual({ code: 119, error: VERIFY_REFUSAL });
    }
  });
});

describe('an admin console user', () => {
  it('sends POST /loginAs as master and gets the session; GET /verifyPassword answers the user', async () => {
    const before = await sessionsOfAnn();
    const as = await admin.post(CONSOLE, {
      method: 'POST',
      path: '/loginAs',
      body: { userId: annId },
      as: { kind: 'master' },
    });
    expect(as.status, as.text).toBe(200);
    expect(as.json.status).toBe(200);
    expect(as.json.body.objectId).toBe(annId);
    // (The console shows no session token, to anyone.)
    expect(as.json.body.sessionToken).toBeDefined();
    expect(await sessionsOfAnn()).toBe(before + 1);
    const verify = await admin.post(CONSOLE, {
      method: 'GET',
      path: '/verifyPassword',
      query: { username: 'ann', password: 'ann-pw' },
      as: { kind: 'anonymous' },
    });
    expect(verify.status, verify.text).toBe(200);
    expect(verify.json.body.objectId).toBe(annId);
  });
});
