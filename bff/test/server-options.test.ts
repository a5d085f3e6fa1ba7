import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakePush, startFakePush } from '../../server/test/helpers/fake-push.ts';
import { type BffFetch, KEYS, type StartedBff, startBff, WEBHOOK_KEY } from './helpers/bff.ts';

/**
 * The console's Server page reads the service's effective options through the bff (GET
 * /bff/apps/<app>/server/options, proxying the master-only GET /serverInfo/options). Read-only
 * console users may read it: the service answers no secret by construction, and the bff's answer
 * filter applies anyway.
 */

let t: StartedBff;
let push: FakePush;
let admin: BffFetch;
let viewer: BffFetch;
const A = '/bff/apps/test-app';

const publicJwk = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({
  format: 'jwk',
}) as Record<string, string>;

/** Secrets of the service's options that the bff does not hold (so its own key filter cannot hide them). */
const SERVICE_SECRETS = {
  smtpPass: 'bff-smtp-pass-6a7b8c9d',
  smtpUser: 'bff-smtp-user-0e1f2a3b',
  serverUrlPassword: 'bff-server-url-password-4c5d',
  jwkModulus: publicJwk.n!,
};

const pemBodyStart = (pem: string) =>
  pem
    .split('\n')
    .filter((line) => line && !line.startsWith('-----'))
    .join('')
    .slice(0, 40);

beforeAll(async () => {
  push = await startFakePush();
  t = await startBff({
    service: {
      serverURL: `http://console:${SERVICE_SECRETS.serverUrlPassword}@localhost:1/api`,
      email: {
        adapter: 'smtp',
        smtp: {
          host: '127.0.0.1',
          port: 2525,
          auth: { user: SERVICE_SECRETS.smtpUser, pass: SERVICE_SECRETS.smtpPass },
        },
      },
      push: push.options,
      auth: {
        acme: {
          issuer: 'https://issuer.example',
          audience: 'app',
          jwks: { keys: [{ ...publicJwk, kid: 'k1' }] },
        },
      },
      preventLoginWithUnverifiedEmail: true,
      verifyUserEmails: true,
      allowCustomObjectId: true,
      trustProxy: ['10.0.0.0/8'],
    },
  });
  admin = await t.login('admin');
  viewer = await t.login('viewer');
});

afterAll(async () => {
  await t?.close();
  await push?.close();
});

const secretsIn = (text: string) =>
  [
    ...Object.values(SERVICE_SECRETS),
    KEYS.masterKey,
    KEYS.restAPIKey,
    KEYS.javascriptKey,
    WEBHOOK_KEY,
    pemBodyStart((push.options as { apns: { key: string } }).apns.key),
    pemBodyStart((push.options as { fcm: { privateKey: string } }).fcm.privateKey),
  ].filter((secret) => text.includes(secret));

describe('GET /bff/apps/:appId/server/options', () => {
  it("answers an admin the service's options as the service answers them", async () => {
    const res = await admin.get(`${A}/server/options`);
    expect(res.status).toBe(200);
    const direct = await t.service.request('GET', '/serverInfo/options', { as: 'master' });
    expect(res.json).toEqual(direct.json);
    const rows = res.json.groups.flatMap((g: { options: Array<{ name: string }> }) => g.options);
    const row = (name: string) => rows.find((r: { name: string }) => r.name === name);
    expect(row('preventLoginWithUnverifiedEmail')).toMatchObject({ set: true, value: true });
    expect(row('allowCustomObjectId')).toMatchObject({ set: true, value: true });
    expect(row('trustProxy')).toMatchObject({ set: true, value: ['10.0.0.0/8'] });
    expect(row('masterKey')).toMatchObject({ set: true, hidden: true });
    expect(row('email.smtp.auth')).toMatchObject({ set: true, hidden: true });
    expect(res.json.authProviders.map((p: { name: string; kind: string }) => `${p.name}:${p.kind}`)).toEqual([
      'anonymous:anonymous',
      'acme:idToken',
    ]);
    expect(secretsIn(res.text)).toEqual([]);
  });

  it('answers a read-only console user the same, without a secret', async () => {
    const res = await viewer.get(`${A}/server/options`);
    expect(res.status).toBe(200);
    expect(res.json).toEqual((await admin.get(`${A}/server/options`)).json);
    expect(secretsIn(res.text)).toEqual([]);
  });

  it('needs a console session and a known app', async () => {
    const anonymous = await t.anonymous().get(`${A}/server/options`);
    expect(anonymous.status).toBe(401);
    const unknown = await admin.get('/bff/apps/no-such-app/server/options');
    expect([unknown.status, unknown.json]).toEqual([404, { code: 101, error: 'Unknown app: no-such-app.' }]);
  });
});
