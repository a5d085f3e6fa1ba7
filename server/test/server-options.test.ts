import { createHash, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { secretOptions } from '../src/config/option-values.ts';
import { optionsSchema, validateOptions } from '../src/config/options.ts';
import { describeOptions, type OptionRow, type OptionsView } from '../src/config/options-view.ts';
import { type FakePush, startFakePush } from './helpers/fake-push.ts';
import { KEYS, startService, type TestService } from './helpers/service.ts';

/**
 * The service's effective options for the master key (GET /serverInfo/options, the console's
 * Server page): master only, every option with its description and value, and no secret: the
 * schema's secret marks decide what is hidden, and a walk over the schema sets every marked option
 * to a value that must not come back.
 */

/** A cloud module registering the sign-in providers `myprov` and `myAuth`. */
const AUTH_CLOUD_MODULE = fileURLToPath(new URL('./fixtures/auth-cloud.ts', import.meta.url));

const MASTER_ONLY = { code: 119, error: 'unauthorized: master key is required' };

/** An RSA key pair: its private PEM, its public PEM and its public JWK. */
function keyPair() {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const privatePem = privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  const publicPem = publicKey.export({ type: 'spki', format: 'pem' }) as string;
  // The option's check refuses private key material (users/providers.test.ts): a public JWK here.
  const publicJwk = publicKey.export({ format: 'jwk' }) as Record<string, string>;
  const digest = createHash('sha256')
    .update(createPublicKey(publicPem).export({ type: 'spki', format: 'der' }))
    .digest('base64url');
  return { privatePem, publicPem, publicJwk, digest };
}

const pemBody = (pem: string) =>
  pem
    .split('\n')
    .filter((line) => line && !line.startsWith('-----'))
    .join('');

/** The members of a JWK that name it (shown), and its public exponent (too short to look for). */
const JWK_NAMES = new Set(['kid', 'kty', 'alg', 'use', 'crv', 'e']);

/** Each secret's value as a list of strings none of which may appear in an answer. */
function fragments(value: unknown): string[] {
  if (typeof value === 'string') return value.includes('-----') ? [pemBody(value).slice(0, 40)] : [value];
  if (Array.isArray(value)) return value.flatMap(fragments);
  if (value !== null && typeof value === 'object')
    return Object.entries(value).flatMap(([name, v]) => (JWK_NAMES.has(name) ? [] : fragments(v)));
  return [];
}

const rowsOf = (view: OptionsView): OptionRow[] => view.groups.flatMap((g) => g.options);
const rowNamed = (view: OptionsView, name: string) => rowsOf(view).find((r) => r.name === name);

// ---------------------------------------------------------------------------------------------
// The walk over the schema

type Schema = z.core.$ZodType;

/** The schema a wrapper wraps (as the options view unwraps), or undefined. */
function inner(schema: Schema): Schema | undefined {
  const def = schema._zod.def as unknown as Record<string, unknown> & { type: string };
  if (['default', 'prefault', 'optional', 'nonoptional', 'nullable', 'readonly', 'catch'].includes(def.type))
    return def.innerType as Schema;
  if (def.type === 'pipe') return def.in as Schema;
  return undefined;
}

/**
 * Every option path of the schema (`email.smtp.auth`, `auth.*.jwks`: `*` a record's values, `[]`
 * an array's elements), with whether it carries a secret mark.
 */
function optionPaths(schema: Schema, path: string, out: Map<string, boolean>): Map<string, boolean> {
  let marked = false;
  let core = schema;
  for (let s: Schema | undefined = schema; s; s = inner(s)) {
    if (secretOptions.get(s)) marked = true;
    core = s;
  }
  if (path) out.set(path, marked);
  if (marked) return out;
  const def = core._zod.def as unknown as Record<string, unknown> & { type: string };
  const below = (name: string) => (path ? `${path}.${name}` : name);
  if (def.type === 'object')
    for (const [name, field] of Object.entries(def.shape as Record<string, Schema>))
      optionPaths(field, below(name), out);
  if (def.type === 'record') optionPaths(def.valueType as Schema, below('*'), out);
  if (def.type === 'array') optionPaths(def.element as Schema, below('[]'), out);
  if (def.type === 'union') for (const option of def.options as Schema[]) optionPaths(option, path, out);
  return out;
}

const SAMPLE = keyPair();
const APNS = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({
  type: 'pkcs8',
  format: 'pem',
}) as string;
const FCM = keyPair();

/** A value for every option the schema marks secret: the test names each one (a new mark must be added here). */
const SECRET_VALUES: Record<string, unknown> = {
  masterKey: 'walk-master-key-6f1d2c3b',
  restAPIKey: 'walk-rest-key-8a7b6c5d',
  javascriptKey: 'walk-js-key-1e2f3a4b',
  clientKey: 'walk-client-key-9c8d7e6f',
  webhookKey: 'walk-webhook-key-5a4b3c2d',
  databaseURI: 'postgres://app:walk-db-password-77aa@db.example:5432/app?sslpassword=walk-ssl-password-88bb',
  redisURL: 'rediss://:walk-redis-password-99cc@cache.example:6380/0',
  serverURL: 'https://admin:walk-server-url-password-11dd@api.example.com/api',
  'auth.*.jwks': { keys: [{ ...SAMPLE.publicJwk, kid: 'walk-kid-1', alg: 'RS256', use: 'sig' }] },
  'auth.*.publicKeys': [SAMPLE.publicPem],
  'email.smtp.auth': { user: 'walk-smtp-user-22ee', pass: 'walk-smtp-pass-33ff' },
  'push.apns.key': APNS,
  'push.apns.url': 'https://apns:walk-apns-url-password-44aa@apns.example',
  'push.fcm.privateKey': FCM.privatePem,
  'push.fcm.url': 'https://fcm:walk-fcm-url-password-55bb@fcm.example',
  'push.fcm.tokenUrl': 'https://token:walk-token-url-password-66cc@oauth.example/token',
};

/** Options whose names look like a secret's and are not one, and why. */
const NOT_SECRET: Record<string, string> = {
  auth: 'the sign-in providers: their key material (jwks, publicKeys) is marked',
  'hooks.allowInsecureUrls': 'a switch',
};

/** Options with every secret set (a provider `acme` for `auth.*`), and every object option present. */
function walkInput(): Record<string, unknown> {
  const input: Record<string, unknown> = {
    appId: 'walk-app',
    push: {
      apns: { keyId: 'KEYID12345', teamId: 'TEAM12345', topic: 'com.example' },
      fcm: { projectId: 'walk-project', clientEmail: 'push@walk-project.example' },
    },
    email: { adapter: 'smtp', smtp: { host: 'smtp.example' } },
    accountLockout: { threshold: 3, duration: 60 },
    idempotency: { paths: ['classes/.*'] },
  };
  const put = (path: string, value: unknown) => {
    const parts = path.split('.').map((p) => (p === '*' ? 'acme' : p));
    let at = input;
    for (const part of parts.slice(0, -1)) {
      at[part] ??= {};
      at = at[part] as Record<string, unknown>;
    }
    at[parts.at(-1)!] = value;
  };
  put('auth.*.issuer', 'https://issuer.example');
  put('auth.*.audience', 'walk-app');
  for (const [path, value] of Object.entries(SECRET_VALUES)) {
    if (path === 'auth.*.publicKeys') continue; // one provider takes jwks or publicKeys: `pem` below
    put(path, value);
  }
  (input.auth as Record<string, unknown>).pem = {
    issuer: 'https://pem.example',
    audience: 'walk-app',
    publicKeys: SECRET_VALUES['auth.*.publicKeys'],
  };
  return input;
}

describe('the options view (config/options-view.ts)', () => {
  const marked = [...optionPaths(optionsSchema, '', new Map())].filter(([, m]) => m).map(([p]) => p);

  it('the test sets a value for every option the schema marks secret, and for no other', () => {
    expect(marked.sort()).toEqual(Object.keys(SECRET_VALUES).sort());
  });

  it('marks every option whose name looks like a secret, but those named here', () => {
    const paths = optionPaths(optionsSchema, '', new Map());
    const covered = (path: string) => {
      const parts = path.split('.');
      return parts.some((_, i) => paths.get(parts.slice(0, i + 1).join('.')) === true);
    };
    const suspicious = [...paths.keys()].filter(
      (path) =>
        /(key|keys|secret|pass|password|token|credentials?|auth|urls?|uri)$/i.test(path.split('.').at(-1)!) &&
        !covered(path) &&
        !(path in NOT_SECRET),
    );
    expect(suspicious).toEqual([]);
  });

  it('answers no secret value set anywhere in the schema, and still the rest', () => {
    const options = validateOptions(walkInput());
    const view = describeOptions(options, ['walkCloudProvider']);
    const text = JSON.stringify(view);
    for (const [path, value] of Object.entries(SECRET_VALUES)) {
      for (const fragment of fragments(value))
        expect(text, `${path} leaks ${fragment}`).not.toContain(fragment);
    }
    // No key text at all, not even the public modulus.
    expect(text).not.toContain(SAMPLE.publicJwk.n);
    expect(text).not.toContain(pemBody(SAMPLE.publicPem).slice(0, 40));
    // What is not secret is there.
    expect(rowNamed(view, 'appId')).toMatchObject({ set: true, value: 'walk-app' });
    expect(rowNamed(view, 'push.apns.keyId')).toMatchObject({ set: true, value: 'KEYID12345' });
    expect(rowNamed(view, 'email.smtp.host')).toMatchObject({ set: true, value: 'smtp.example' });
  });

  it('shows a secret option as set, never its value; an address without its password', () => {
    const view = describeOptions(validateOptions(walkInput()));
    for (const name of ['masterKey', 'restAPIKey', 'javascriptKey', 'clientKey', 'webhookKey']) {
      expect(rowNamed(view, name)).toEqual({
        name,
        description: expect.stringMatching(/\w/),
        set: true,
        hidden: true,
      });
    }
    for (const name of ['email.smtp.auth', 'push.apns.key', 'push.fcm.privateKey'])
      expect(rowNamed(view, name)).toMatchObject({ set: true, hidden: true });
    expect(rowNamed(view, 'databaseURI')?.value).toBe(
      'postgres://app@db.example:5432/app?sslpassword=[FILTERED]',
    );
    expect(rowNamed(view, 'redisURL')?.value).toBe('rediss://cache.example:6380/0');
    expect(rowNamed(view, 'serverURL')?.value).toBe('https://admin@api.example.com/api');
    expect(rowNamed(view, 'push.fcm.tokenUrl')?.value).toBe('https://token@oauth.example/token');
    // A secret left out is shown as not set.
    const bare = describeOptions(validateOptions({ appId: 'a', masterKey: 'only-the-master-key' }));
    expect(rowNamed(bare, 'webhookKey')).toEqual({
      name: 'webhookKey',
      description: 'The key the service sends to webhook receivers, so they know a call is its own.',
      set: false,
    });
    expect(rowNamed(bare, 'push')).toMatchObject({ set: false });
  });

  it('hides an address that names its password twice, or that does not parse', () => {
    const view = describeOptions(
      validateOptions({
        appId: 'a',
        masterKey: 'only-the-master-key',
        databaseURI: 'postgres://u:twice-secret-1a@db.example/twice-secret-1a',
      }),
    );
    expect(rowNamed(view, 'databaseURI')).toMatchObject({ set: true, hidden: true });
    expect(JSON.stringify(view)).not.toContain('twice-secret-1a');
    const sqlite = describeOptions(
      validateOptions({
        appId: 'a',
        masterKey: 'only-the-master-key',
        databaseURI: 'sqlite:/tmp/app.sqlite',
      }),
    );
    expect(rowNamed(sqlite, 'databaseURI')?.value).toBe('sqlite:/tmp/app.sqlite');
  });

  it('shows ID token keys by their names and digest only', () => {
    const view = describeOptions(validateOptions(walkInput()));
    expect(rowNamed(view, 'auth')?.value).toEqual({
      acme: {
        issuer: 'https://issuer.example',
        audience: 'walk-app',
        jwks: {
          keys: [
            { kid: 'walk-kid-1', kty: 'RSA', alg: 'RS256', use: 'sig', type: 'rsa', sha256: SAMPLE.digest },
          ],
        },
        algorithms: [
          'RS256',
          'RS384',
          'RS512',
          'PS256',
          'PS384',
          'PS512',
          'ES256',
          'ES384',
          'ES512',
          'EdDSA',
        ],
      },
      pem: {
        issuer: 'https://pem.example',
        audience: 'walk-app',
        publicKeys: [{ type: 'rsa', sha256: SAMPLE.digest }],
        algorithms: [
          'RS256',
          'RS384',
          'RS512',
          'PS256',
          'PS384',
          'PS512',
          'ES256',
          'ES384',
          'ES512',
          'EdDSA',
        ],
      },
    });
  });

  it('lists every option once, in one group, each with a description', () => {
    const view = describeOptions(validateOptions(walkInput()));
    expect(view.groups.map((g) => g.name)).toEqual([
      'service',
      'keys',
      'storage',
      'accounts',
      'email',
      'access',
      'limits',
      'files',
      'realtime',
      'cloud',
      'jobs',
      'push',
      'analytics',
    ]);
    const rows = rowsOf(view);
    const topLevel = rows.filter((r) => !r.name.includes('.')).map((r) => r.name);
    expect(topLevel.sort()).toEqual(Object.keys(optionsSchema.shape).sort());
    expect(new Set(rows.map((r) => r.name)).size).toBe(rows.length);
    expect(rows.filter((r) => r.description.trim() === '').map((r) => r.name)).toEqual([]);
    // An object option is a heading row followed by its fields.
    expect(rowNamed(view, 'liveQuery')).toEqual({
      name: 'liveQuery',
      description:
        'Realtime subscriptions (LiveQuery) on the service\'s own HTTP server (docs/architecture.md "Realtime").',
      set: true,
      object: true,
    });
    expect(rowNamed(view, 'liveQuery.path')).toEqual({
      name: 'liveQuery.path',
      description:
        "The WebSocket path on the service's HTTP server, at the server's root (docs/protocol.md#realtime-frames).",
      set: true,
      value: '/live',
    });
  });
});

// ---------------------------------------------------------------------------------------------
// GET /serverInfo/options on the running service

describe('GET /serverInfo/options', () => {
  let t: TestService;
  let push: FakePush;
  const jwtKeys = keyPair();
  const service = {
    clientKey: 'svc-client-key-0a1b2c3d',
    smtpPass: 'svc-smtp-pass-4e5f6a7b',
    serverUrlPassword: 'svc-server-url-password-8c9d',
  };

  beforeAll(async () => {
    push = await startFakePush();
    t = await startService({
      clientKey: service.clientKey,
      webhookKey: 'svc-webhook-key-1f2e3d4c',
      serverURL: `http://console:${service.serverUrlPassword}@localhost:1/api`,
      email: {
        adapter: 'smtp',
        from: 'app@example.com',
        smtp: { host: '127.0.0.1', port: 2525, auth: { user: 'mailer', pass: service.smtpPass } },
      },
      push: push.options,
      auth: {
        acme: {
          issuer: 'https://issuer.example',
          audience: 'app',
          jwks: { keys: [{ ...jwtKeys.publicJwk, kid: 'acme-1' }] },
        },
      },
      cloud: AUTH_CLOUD_MODULE,
      preventLoginWithUnverifiedEmail: true,
      verifyUserEmails: true,
      revokeSessionOnPasswordReset: false,
      allowCustomObjectId: true,
      trustProxy: 1,
    });
  });
  afterAll(async () => {
    await t?.close();
    await push?.close();
  });

  it('answers the master key the effective options, grouped, with the sign-in providers', async () => {
    const res = await t.request('GET', '/serverInfo/options', { as: 'master' });
    expect(res.status).toBe(200);
    const view = res.json as OptionsView;
    expect(view.groups.find((g) => g.name === 'accounts')).toMatchObject({ title: 'Accounts' });
    expect(rowNamed(view, 'preventLoginWithUnverifiedEmail')).toEqual({
      name: 'preventLoginWithUnverifiedEmail',
      description:
        'With verifyUserEmails: a password sign-up gets no session, a login answers 205, until the email is verified.',
      set: true,
      value: true,
    });
    expect(rowNamed(view, 'revokeSessionOnPasswordReset')).toMatchObject({ value: false });
    expect(rowNamed(view, 'allowCustomObjectId')).toMatchObject({ value: true });
    expect(rowNamed(view, 'trustProxy')).toMatchObject({ value: 1 });
    expect(rowNamed(view, 'sessionLength')).toMatchObject({ value: 365 * 24 * 3600 });
    expect(rowNamed(view, 'push.apns.keyId')).toMatchObject({ value: 'KEY1234567' });
    expect(rowNamed(view, 'serverURL')).toMatchObject({ value: 'http://console@localhost:1/api' });
    expect(view.authProviders).toEqual([
      {
        name: 'anonymous',
        kind: 'anonymous',
        description: 'Built in: a client-made id signs up and logs in an anonymous user.',
      },
      {
        name: 'acme',
        kind: 'idToken',
        description: 'OpenID Connect ID tokens, checked offline against the keys of the option auth.',
      },
      {
        name: 'myAuth',
        kind: 'cloud',
        description: 'An adapter the cloud code module registers (cloud.authProvider).',
      },
      {
        name: 'myprov',
        kind: 'cloud',
        description: 'An adapter the cloud code module registers (cloud.authProvider).',
      },
    ]);
  });

  it('carries no key, password or private key', async () => {
    const res = await t.request('GET', '/serverInfo/options', { as: 'master' });
    const secrets = [
      KEYS.masterKey,
      KEYS.restAPIKey,
      KEYS.javascriptKey,
      service.clientKey,
      'svc-webhook-key-1f2e3d4c',
      service.smtpPass,
      service.serverUrlPassword,
      jwtKeys.publicJwk.n!,
      ...fragments((push.options as { apns: { key: string } }).apns.key),
      ...fragments((push.options as { fcm: { privateKey: string } }).fcm.privateKey),
    ];
    for (const secret of secrets) expect(res.text).not.toContain(secret);
    for (const name of [
      'masterKey',
      'restAPIKey',
      'javascriptKey',
      'clientKey',
      'webhookKey',
      'email.smtp.auth',
    ])
      expect(rowNamed(res.json, name)).toMatchObject({ set: true, hidden: true });
  });

  it('refuses every other caller with 119', async () => {
    const user = await t.request('POST', '/users', { body: { username: 'ann', password: 'ann-pw' } });
    expect(user.status).toBe(201);
    for (const as of ['rest', 'js'] as const) {
      const res = await t.request('GET', '/serverInfo/options', { as });
      expect([res.status, res.json]).toEqual([403, MASTER_ONLY]);
    }
    const signedIn = await t.request('GET', '/serverInfo/options', { sessionToken: user.json.sessionToken });
    expect([signedIn.status, signedIn.json]).toEqual([403, MASTER_ONLY]);
    // A batch member is refused the same way.
    const batch = await t.request('POST', '/batch', {
      body: { requests: [{ method: 'GET', path: '/api/serverInfo/options' }] },
    });
    expect(batch.status).toBe(200);
    expect(batch.json).toEqual([{ error: MASTER_ONLY }]);
  });

  it('leaves GET /serverInfo as it is, for the master key too', async () => {
    for (const as of ['master', 'rest'] as const) {
      const res = await t.request('GET', '/serverInfo', { as });
      expect(res.status).toBe(200);
      expect(Object.keys(res.json).sort()).toEqual(['features', 'serverVersion']);
    }
  });
});
