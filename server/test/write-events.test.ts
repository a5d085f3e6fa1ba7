import { fileURLToPath } from 'node:url';
import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decideMasterSurface } from '../src/access/class.ts';
import type { WriteEvent } from '../src/index.ts';
import { anonymous, MASTER, makeCaller } from '../src/kernel/caller.ts';
import { ctxOf } from '../src/kernel/context.ts';
import { type FakePush, startFakePush } from './helpers/fake-push.ts';
import {
  KEYS,
  type RequestOptions,
  startService,
  type TestResponse,
  type TestService,
} from './helpers/service.ts';

/**
 * Every write route emits exactly the events of the one write pipeline, after commit: one row per
 * route (a new route is one more row). Each row: optional setup (its events are not counted), the
 * request, the status it answers, and the events it must emit as [class, op, count], nothing else,
 * with the source they must carry.
 */
interface Row {
  name: string;
  /** A service started with other options (see VARIANTS); the main one otherwise. */
  service?: Variant;
  setup?: (v: Vars, t: TestService) => Promise<void>;
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  as?: RequestOptions['as'];
  sessionToken?: string;
  headers?: Record<string, string>;
  body?: unknown;
  /** A body sent as is (an HTML form); `{name}` placeholders are filled as in `body`. */
  rawBody?: string;
  status: number;
  events: Array<[className: string, op: WriteEvent['op'], count: number]>;
  source?: WriteEvent['source'];
  /** For writes done after the answer (mail tokens, push delivery): wait until they are done. */
  settle?: (v: Vars, t: TestService, res: TestResponse) => Promise<void>;
}

type Vars = Record<string, string>;

/**
 * Services started with options the main one does not have, each started when a row first needs
 * it: push (against the local APNs/FCM fakes), analytics stored as rows, idempotency claims.
 */
type Variant = 'push' | 'analyticsStore' | 'idempotency';

const EVENTS_CLOUD = fileURLToPath(new URL('./fixtures/events-cloud.ts', import.meta.url));

const secret = new Secret({ size: 20 }).base32;
const totp = new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 });

/** Mail goes out after the answer: wait (generously) until one reached `to`. */
async function waitForMail(t: TestService, to: string): Promise<void> {
  for (let i = 0; i < 250; i++) {
    const res = await t.request('GET', '/devMailbox', { as: 'master' });
    if ((res.json.results as Array<{ to: string }>).some((m) => m.to === to)) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no mail to ${to}`);
}

/** The one-time token of the latest `page` link (reset, verify_email) mailed to `to`. */
async function tokenMailed(t: TestService, to: string, page: 'reset' | 'verify_email'): Promise<string> {
  await waitForMail(t, to);
  const res = await t.request('GET', '/devMailbox', { as: 'master' });
  const mails = (res.json.results as Array<{ to: string; text: string }>).filter((m) => m.to === to);
  const m = new RegExp(`/apps/[^/]+/${page}\\?token=([0-9a-f]{64})`).exec(mails.at(-1)!.text);
  if (!m) throw new Error(`no ${page} link mailed to ${to}`);
  return m[1]!;
}

/** A push's status row once its delivery has ended. */
async function pushDone(t: TestService, res: TestResponse): Promise<void> {
  const id = res.headers.get('X-Backend-Push-Status-Id');
  if (!id) throw new Error(`no push status id: ${res.text}`);
  for (let i = 0; i < 750; i++) {
    const row = await t.request('GET', `/classes/_PushStatus/${id}`, { as: 'master' });
    if (row.json.status === 'succeeded' || row.json.status === 'failed') return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`push ${id} did not end`);
}

const fill = (text: string, v: Vars) =>
  text.replace(/\{(\w+)\}/g, (_, k: string) => {
    if (!(k in v)) throw new Error(`row uses {${k}} but no setup defined it`);
    return v[k]!;
  });

async function signUp(t: TestService, username: string, extra: Record<string, unknown> = {}) {
  const res = await t.request('POST', '/users', { body: { username, password: 'pw', ...extra } });
  if (res.status !== 201) throw new Error(res.text);
  return res.json as { objectId: string; sessionToken: string };
}

async function login(t: TestService, username: string, headers?: Record<string, string>) {
  const res = await t.request('POST', '/login', { body: { username, password: 'pw' }, headers });
  if (res.status !== 200) throw new Error(res.text);
  return res.json.sessionToken as string;
}

async function create(t: TestService, path: string, body: Record<string, unknown>): Promise<string> {
  const res = await t.request('POST', path, { as: 'master', body });
  if (res.status !== 201) throw new Error(res.text);
  return res.json.objectId as string;
}

const rows: Row[] = [
  // ---- records ----
  {
    name: 'create a row',
    method: 'POST',
    path: '/classes/Post',
    as: 'master',
    body: { title: 'a' },
    status: 201,
    events: [['Post', 'create', 1]],
    source: 'rest',
  },
  {
    name: 'create a row in a new class: the class first',
    method: 'POST',
    path: '/classes/Fresh',
    as: 'master',
    body: { title: 'a' },
    status: 201,
    events: [
      ['_SCHEMA', 'create', 1],
      ['Fresh', 'create', 1],
    ],
  },
  {
    name: 'create a row with a new field: the schema change too',
    method: 'POST',
    path: '/classes/Post',
    as: 'master',
    body: { title: 'b', extra: 3 },
    status: 201,
    events: [
      ['_SCHEMA', 'update', 1],
      ['Post', 'create', 1],
    ],
  },
  {
    name: 'update a row',
    setup: async (v, t) => {
      v.post = await create(t, '/classes/Post', { title: 'u', likes: 0 });
    },
    method: 'PUT',
    path: '/classes/Post/{post}',
    as: 'master',
    body: { likes: { __op: 'Increment', amount: 1 } },
    status: 200,
    events: [['Post', 'update', 1]],
  },
  {
    name: 'delete a row',
    setup: async (v, t) => {
      v.post = await create(t, '/classes/Post', { title: 'd' });
    },
    method: 'DELETE',
    path: '/classes/Post/{post}',
    as: 'master',
    status: 200,
    events: [['Post', 'delete', 1]],
  },
  {
    name: 'a refused write emits nothing',
    setup: async (v, t) => {
      v.post = await create(t, '/classes/Post', { title: 'x', ACL: {} });
    },
    method: 'PUT',
    path: '/classes/Post/{post}',
    body: { title: 'y' },
    status: 404,
    events: [],
  },
  {
    name: 'batch members, each an event with source batch',
    setup: async (v, t) => {
      v.post = await create(t, '/classes/Post', { title: 'b' });
    },
    method: 'POST',
    path: '/batch',
    as: 'master',
    body: {
      requests: [
        { method: 'POST', path: '/classes/Post', body: { title: 'one' } },
        { method: 'POST', path: '/classes/Post', body: { title: 'two' } },
        { method: 'PUT', path: '/classes/Post/{post}', body: { title: 'three' } },
      ],
    },
    status: 200,
    events: [
      ['Post', 'create', 2],
      ['Post', 'update', 1],
    ],
    source: 'batch',
  },
  {
    name: 'a transactional batch that fails emits nothing',
    method: 'POST',
    path: '/batch',
    as: 'master',
    body: {
      transaction: true,
      requests: [
        { method: 'POST', path: '/classes/Post', body: { title: 'kept?' } },
        { method: 'PUT', path: '/classes/Post/nosuchrow0', body: { title: 'no' } },
      ],
    },
    status: 404,
    events: [],
  },
  // ---- users and sessions ----
  {
    name: 'sign-up: the user and its session',
    method: 'POST',
    path: '/users',
    body: { username: 'signup1', password: 'pw' },
    status: 201,
    events: [
      ['_User', 'create', 1],
      ['_Session', 'create', 1],
    ],
    source: 'account',
  },
  {
    name: 'anonymous sign-up',
    method: 'POST',
    path: '/users',
    body: { authData: { anonymous: { id: '4f2d3b30-1111-4a5e-9c3a-000000000001' } } },
    status: 201,
    events: [
      ['_User', 'create', 1],
      ['_Session', 'create', 1],
    ],
  },
  {
    name: 'login: a session',
    setup: async (_v, t) => {
      await signUp(t, 'login1');
    },
    method: 'POST',
    path: '/login',
    body: { username: 'login1', password: 'pw' },
    status: 200,
    events: [['_Session', 'create', 1]],
    source: 'account',
  },
  {
    name: 'login from an installation replaces that installation’s session',
    setup: async (_v, t) => {
      await signUp(t, 'login2');
      await login(t, 'login2', { 'X-Backend-Installation-Id': 'device-login2' });
    },
    method: 'POST',
    path: '/login',
    headers: { 'X-Backend-Installation-Id': 'device-login2' },
    body: { username: 'login2', password: 'pw' },
    status: 200,
    events: [
      ['_Session', 'delete', 1],
      ['_Session', 'create', 1],
    ],
  },
  {
    name: 'logout: the session goes',
    setup: async (v, t) => {
      v.token = (await signUp(t, 'logout1')).sessionToken;
    },
    method: 'POST',
    path: '/logout',
    sessionToken: '{token}',
    status: 200,
    events: [['_Session', 'delete', 1]],
  },
  {
    name: 'password change: the user, and the other sessions revoked',
    setup: async (v, t) => {
      const u = await signUp(t, 'pwchange');
      v.user = u.objectId;
      v.token = u.sessionToken;
      await login(t, 'pwchange');
      await login(t, 'pwchange');
    },
    method: 'PUT',
    path: '/users/{user}',
    sessionToken: '{token}',
    body: { password: 'new-pw' },
    status: 200,
    events: [
      ['_User', 'update', 1],
      ['_Session', 'delete', 2],
    ],
  },
  {
    name: 'anonymous upgrade: the user, the old session out, a new one in',
    setup: async (v, t) => {
      const res = await t.request('POST', '/users', {
        body: { authData: { anonymous: { id: '4f2d3b30-1111-4a5e-9c3a-000000000002' } } },
      });
      v.user = res.json.objectId;
      v.token = res.json.sessionToken;
    },
    method: 'PUT',
    path: '/users/{user}',
    sessionToken: '{token}',
    body: { username: 'upgraded', password: 'pw', authData: { anonymous: null } },
    status: 200,
    events: [
      ['_User', 'update', 1],
      ['_Session', 'delete', 1],
      ['_Session', 'create', 1],
    ],
  },
  {
    name: 'MFA enrolment: the user',
    setup: async (v, t) => {
      const u = await signUp(t, 'mfa1');
      v.user = u.objectId;
      v.token = u.sessionToken;
    },
    method: 'PUT',
    path: '/users/{user}',
    sessionToken: '{token}',
    body: { authData: { mfa: { secret, token: '{code}' } } },
    status: 200,
    events: [['_User', 'update', 1]],
  },
  {
    name: 'delete a user: the row and its sessions',
    setup: async (v, t) => {
      const u = await signUp(t, 'gone1');
      v.user = u.objectId;
      v.token = u.sessionToken;
      await login(t, 'gone1');
    },
    method: 'DELETE',
    path: '/users/{user}',
    sessionToken: '{token}',
    status: 200,
    events: [
      ['_User', 'delete', 1],
      ['_Session', 'delete', 2],
    ],
  },
  {
    name: 'link an auth provider (master): the user',
    setup: async (v, t) => {
      v.user = (await signUp(t, 'linked1')).objectId;
    },
    method: 'PUT',
    path: '/users/{user}',
    as: 'master',
    body: { authData: { custom: { id: 'linked1-id' } } },
    status: 200,
    events: [['_User', 'update', 1]],
    source: 'account',
  },
  {
    name: 'loginAs: a session',
    setup: async (v, t) => {
      v.user = (await signUp(t, 'loginas1')).objectId;
    },
    method: 'POST',
    path: '/loginAs',
    as: 'master',
    body: { userId: '{user}' },
    status: 200,
    events: [['_Session', 'create', 1]],
    source: 'account',
  },
  {
    name: 'upgradeToRevocableSession: a new session in, the old one out',
    setup: async (v, t) => {
      v.token = (await signUp(t, 'upgrade1')).sessionToken;
    },
    method: 'POST',
    path: '/upgradeToRevocableSession',
    sessionToken: '{token}',
    status: 200,
    events: [
      ['_Session', 'create', 1],
      ['_Session', 'delete', 1],
    ],
    source: 'account',
  },
  {
    name: 'verifyPassword: nothing written',
    setup: async (_v, t) => {
      await signUp(t, 'verifypw1');
    },
    method: 'POST',
    path: '/verifyPassword',
    body: { username: 'verifypw1', password: 'pw' },
    status: 200,
    events: [],
  },
  {
    name: 'revoke a session',
    setup: async (v, t) => {
      const u = await signUp(t, 'revoke1');
      v.token = u.sessionToken;
      const me = await t.request('GET', '/sessions/me', { sessionToken: u.sessionToken });
      v.session = me.json.objectId;
    },
    method: 'DELETE',
    path: '/sessions/{session}',
    sessionToken: '{token}',
    status: 200,
    events: [['_Session', 'delete', 1]],
  },
  {
    name: 'master creates a session',
    setup: async (v, t) => {
      v.user = (await signUp(t, 'sessmaster')).objectId;
    },
    method: 'POST',
    path: '/sessions',
    as: 'master',
    body: { user: { __type: 'Pointer', className: '_User', objectId: '{user}' }, sessionToken: 'r:manual' },
    status: 201,
    events: [['_Session', 'create', 1]],
  },
  {
    name: 'password reset request: the reset token is written',
    setup: async (_v, t) => {
      await signUp(t, 'reset1', { email: 'reset1@example.com' });
    },
    method: 'POST',
    path: '/requestPasswordReset',
    body: { email: 'reset1@example.com' },
    status: 200,
    events: [['_User', 'update', 1]],
    settle: async (_v, t) => {
      await waitForMail(t, 'reset1@example.com');
    },
  },
  {
    name: 'verification mail request: the verification token is written',
    setup: async (_v, t) => {
      await signUp(t, 'verify1', { email: 'verify1@example.com' });
    },
    method: 'POST',
    path: '/verificationEmailRequest',
    body: { email: 'verify1@example.com' },
    status: 200,
    events: [['_User', 'update', 1]],
    source: 'account',
    settle: async (_v, t) => {
      await waitForMail(t, 'verify1@example.com');
    },
  },
  {
    name: 'the verification link: the user’s email verified, the token spent',
    setup: async (v, t) => {
      await signUp(t, 'verify2', { email: 'verify2@example.com' });
      await t.request('POST', '/verificationEmailRequest', { body: { email: 'verify2@example.com' } });
      v.token = await tokenMailed(t, 'verify2@example.com', 'verify_email');
    },
    method: 'GET',
    path: `/apps/${KEYS.appId}/verify_email?token={token}`,
    as: 'none',
    status: 200,
    events: [['_User', 'update', 1]],
    source: 'account',
  },
  {
    name: 'the reset link’s form: the new password, and every session of the user revoked',
    setup: async (v, t) => {
      await signUp(t, 'reset2', { email: 'reset2@example.com' });
      await login(t, 'reset2');
      await t.request('POST', '/requestPasswordReset', { body: { email: 'reset2@example.com' } });
      v.token = await tokenMailed(t, 'reset2@example.com', 'reset');
    },
    method: 'POST',
    path: `/apps/${KEYS.appId}/reset`,
    as: 'none',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    rawBody: 'token={token}&new_password=pw2&confirm_password=pw2',
    status: 200,
    events: [
      ['_User', 'update', 1],
      ['_Session', 'delete', 2],
    ],
    source: 'account',
  },
  {
    name: 'master changes a session',
    setup: async (v, t) => {
      const u = await signUp(t, 'sessupdate');
      const me = await t.request('GET', '/sessions/me', { sessionToken: u.sessionToken });
      v.session = me.json.objectId;
    },
    method: 'PUT',
    path: '/sessions/{session}',
    as: 'master',
    body: { installationId: 'moved-device' },
    status: 200,
    events: [['_Session', 'update', 1]],
    source: 'rest',
  },
  {
    name: 'master changes a session through /classes/_Session',
    setup: async (v, t) => {
      const u = await signUp(t, 'sessupdate2');
      const me = await t.request('GET', '/sessions/me', { sessionToken: u.sessionToken });
      v.session = me.json.objectId;
    },
    method: 'PUT',
    path: '/classes/_Session/{session}',
    as: 'master',
    body: { installationId: 'moved-device-2' },
    status: 200,
    events: [['_Session', 'update', 1]],
  },
  // ---- roles and installations ----
  {
    name: 'create a role',
    method: 'POST',
    path: '/roles',
    as: 'master',
    body: { name: 'Editors', ACL: { '*': { read: true } } },
    status: 201,
    events: [['_Role', 'create', 1]],
  },
  {
    name: 'add a member to a role',
    setup: async (v, t) => {
      v.role = await create(t, '/roles', { name: 'Members', ACL: {} });
      v.user = (await signUp(t, 'member1')).objectId;
    },
    method: 'PUT',
    path: '/roles/{role}',
    as: 'master',
    body: {
      users: {
        __op: 'AddRelation',
        objects: [{ __type: 'Pointer', className: '_User', objectId: '{user}' }],
      },
    },
    status: 200,
    events: [['_Role', 'update', 1]],
  },
  {
    name: 'register an installation',
    method: 'POST',
    path: '/installations',
    headers: { 'X-Backend-Installation-Id': 'inst-1' },
    body: { deviceType: 'ios', deviceToken: 't1' },
    status: 201,
    events: [['_Installation', 'create', 1]],
  },
  {
    name: 'update an installation from its device',
    setup: async (v, t) => {
      const res = await t.request('POST', '/installations', {
        headers: { 'X-Backend-Installation-Id': 'inst-2' },
        body: { deviceType: 'android' },
      });
      v.inst = res.json.objectId;
    },
    method: 'PUT',
    path: '/installations/{inst}',
    headers: { 'X-Backend-Installation-Id': 'inst-2' },
    body: { channels: ['news'] },
    status: 200,
    events: [['_Installation', 'update', 1]],
  },
  {
    name: 'delete a role',
    setup: async (v, t) => {
      v.role = await create(t, '/roles', { name: 'Dropped', ACL: {} });
    },
    method: 'DELETE',
    path: '/roles/{role}',
    as: 'master',
    status: 200,
    events: [['_Role', 'delete', 1]],
    source: 'rest',
  },
  {
    name: 'delete an installation (master)',
    setup: async (v, t) => {
      v.inst = await create(t, '/installations', { installationId: 'inst-3', deviceType: 'ios' });
    },
    method: 'DELETE',
    path: '/installations/{inst}',
    as: 'master',
    status: 200,
    events: [['_Installation', 'delete', 1]],
    source: 'rest',
  },
  // ---- cloud code, webhooks, jobs ----
  {
    name: 'a cloud function writes through the pipeline (source cloud)',
    setup: async (v, t) => {
      await t.request('POST', '/schemas/Note', {
        as: 'master',
        body: { fields: { text: { type: 'String' } } },
      });
      v.token = (await signUp(t, 'cloudy')).sessionToken;
    },
    method: 'POST',
    path: '/functions/createNote',
    sessionToken: '{token}',
    body: { text: 'from cloud code' },
    status: 200,
    events: [['Note', 'create', 1]],
    source: 'cloud',
  },
  {
    name: 'register a function webhook',
    method: 'POST',
    path: '/hooks/functions',
    as: 'master',
    body: { functionName: 'remoteEvents', url: 'https://receiver.example/fn' },
    status: 201,
    events: [['_Hooks', 'create', 1]],
  },
  {
    name: 'change a webhook url',
    setup: async (_v, t) => {
      await t.request('POST', '/hooks/functions', {
        as: 'master',
        body: { functionName: 'moved', url: 'https://receiver.example/a' },
      });
    },
    method: 'PUT',
    path: '/hooks/functions/moved',
    as: 'master',
    body: { url: 'https://receiver.example/b' },
    status: 200,
    events: [['_Hooks', 'update', 1]],
  },
  {
    name: 'delete a webhook',
    setup: async (_v, t) => {
      await t.request('POST', '/hooks/functions', {
        as: 'master',
        body: { functionName: 'dropped', url: 'https://receiver.example/a' },
      });
    },
    method: 'DELETE',
    path: '/hooks/functions/dropped',
    as: 'master',
    status: 200,
    events: [['_Hooks', 'delete', 1]],
  },
  {
    name: 'register a trigger webhook',
    setup: async (_v, t) => {
      await t.request('POST', '/schemas/HookTarget', { as: 'master', body: {} });
    },
    method: 'POST',
    path: '/hooks/triggers',
    as: 'master',
    body: { className: 'HookTarget', triggerName: 'afterSave', url: 'https://receiver.example/t/save' },
    status: 201,
    events: [['_Hooks', 'create', 1]],
    source: 'system',
  },
  {
    name: 'change a trigger webhook url',
    setup: async (_v, t) => {
      await t.request('POST', '/schemas/HookTarget', { as: 'master', body: {} });
      await t.request('POST', '/hooks/triggers', {
        as: 'master',
        body: { className: 'HookTarget', triggerName: 'afterDelete', url: 'https://receiver.example/t/a' },
      });
    },
    method: 'PUT',
    path: '/hooks/triggers/HookTarget/afterDelete',
    as: 'master',
    body: { url: 'https://receiver.example/t/b' },
    status: 200,
    events: [['_Hooks', 'update', 1]],
  },
  {
    name: 'delete a trigger webhook',
    setup: async (_v, t) => {
      await t.request('POST', '/schemas/HookTarget', { as: 'master', body: {} });
      await t.request('POST', '/hooks/triggers', {
        as: 'master',
        body: { className: 'HookTarget', triggerName: 'beforeDelete', url: 'https://receiver.example/t/a' },
      });
    },
    method: 'DELETE',
    path: '/hooks/triggers/HookTarget/beforeDelete',
    as: 'master',
    status: 200,
    events: [['_Hooks', 'delete', 1]],
  },
  {
    name: 'run a job: its status row, then its progress and end',
    method: 'POST',
    path: '/jobs/countNotes',
    as: 'master',
    body: {},
    status: 200,
    events: [
      ['_JobStatus', 'create', 1],
      ['_JobStatus', 'update', 3],
    ],
    settle: async (_v, t) => {
      await t.service.jobs.runner.idle();
    },
  },
  {
    name: 'schedule a job',
    method: 'POST',
    path: '/classes/_JobSchedule',
    as: 'master',
    body: { jobName: 'countNotes', cron: '0 0 1 1 *' },
    status: 201,
    events: [['_JobSchedule', 'create', 1]],
  },
  // ---- push, analytics, idempotency ----
  {
    name: 'send a push: its status row, then running, progress and end; the badge incremented',
    service: 'push',
    setup: async (_v, t) => {
      await create(t, '/installations', {
        installationId: 'push-device-1',
        deviceType: 'ios',
        deviceToken: 'apns-token-1',
        badge: 0,
      });
    },
    method: 'POST',
    path: '/push',
    as: 'master',
    body: { where: { installationId: 'push-device-1' }, data: { alert: 'hi', badge: 'Increment' } },
    status: 200,
    events: [
      ['_PushStatus', 'create', 1],
      ['_PushStatus', 'update', 3],
      ['_Installation', 'update', 1],
    ],
    source: 'system',
    settle: async (_v, t, res) => {
      await pushDone(t, res);
    },
  },
  {
    name: 'schedule a push: its status row, scheduled',
    service: 'push',
    method: 'POST',
    path: '/push',
    as: 'master',
    body: { channels: ['later'], data: { alert: 'later' }, push_time: '2099-01-01T00:00:00.000Z' },
    status: 200,
    events: [
      ['_PushStatus', 'create', 1],
      ['_PushStatus', 'update', 1],
    ],
    source: 'system',
  },
  {
    name: 'an analytics event with the default adapter: nothing written',
    method: 'POST',
    path: '/events/AppOpened',
    body: { dimensions: { os: 'ios' } },
    status: 200,
    events: [],
  },
  {
    name: 'an analytics event with the store adapter: one _AnalyticsEvent row',
    service: 'analyticsStore',
    method: 'POST',
    path: '/events/AppOpened',
    body: { dimensions: { os: 'ios' } },
    status: 200,
    events: [['_AnalyticsEvent', 'create', 1]],
    source: 'system',
  },
  {
    name: 'a request id on a guarded path: the _Idempotency claim, then the write',
    service: 'idempotency',
    setup: async (_v, t) => {
      await create(t, '/classes/Order', { title: 'first' });
    },
    method: 'POST',
    path: '/classes/Order',
    as: 'master',
    headers: { 'X-Backend-Request-Id': 'events-req-1' },
    body: { title: 'once' },
    status: 201,
    events: [
      ['_Idempotency', 'create', 1],
      ['Order', 'create', 1],
    ],
  },
  {
    name: 'a repeated request id writes nothing',
    service: 'idempotency',
    setup: async (_v, t) => {
      const first = await t.request('POST', '/classes/Order', {
        as: 'master',
        headers: { 'X-Backend-Request-Id': 'events-req-2' },
        body: { title: 'first' },
      });
      if (first.status !== 201) throw new Error(first.text);
    },
    method: 'POST',
    path: '/classes/Order',
    as: 'master',
    headers: { 'X-Backend-Request-Id': 'events-req-2' },
    body: { title: 'again' },
    status: 400,
    events: [],
  },
  // ---- config, schemas, purge ----
  {
    name: 'change the config',
    method: 'PUT',
    path: '/config',
    as: 'master',
    body: { params: { welcome: 'hi' } },
    status: 200,
    events: [['_GlobalConfig', 'update', 1]],
  },
  {
    name: 'create a class',
    method: 'POST',
    path: '/schemas/Made',
    as: 'master',
    body: { fields: { a: { type: 'String' } } },
    status: 200,
    events: [['_SCHEMA', 'create', 1]],
  },
  {
    name: 'change a class',
    setup: async (_v, t) => {
      await t.request('POST', '/schemas/Changed', { as: 'master', body: {} });
    },
    method: 'PUT',
    path: '/schemas/Changed',
    as: 'master',
    body: { fields: { b: { type: 'Number' } } },
    status: 200,
    events: [['_SCHEMA', 'update', 1]],
  },
  {
    name: 'drop an empty class',
    setup: async (_v, t) => {
      await t.request('POST', '/schemas/Dropped', { as: 'master', body: {} });
    },
    method: 'DELETE',
    path: '/schemas/Dropped',
    as: 'master',
    status: 200,
    events: [['_SCHEMA', 'delete', 1]],
  },
  {
    name: 'purge a class: one event for the class',
    setup: async (_v, t) => {
      await create(t, '/classes/Purged', { n: 1 });
      await create(t, '/classes/Purged', { n: 2 });
    },
    method: 'DELETE',
    path: '/purge/Purged',
    as: 'master',
    status: 200,
    events: [['Purged', 'purge', 1]],
  },
];

describe('every write route emits the pipeline’s events', () => {
  let t: TestService;
  const seen: WriteEvent[] = [];
  const variants = new Map<Variant, TestService>();
  let fakePush: FakePush | undefined;

  /** The service a row runs on: the main one, or a variant started with its options on first use. */
  const serviceFor = async (variant: Variant | undefined): Promise<TestService> => {
    if (!variant) return t;
    let s = variants.get(variant);
    if (!s) {
      let options: Record<string, unknown>;
      if (variant === 'push') {
        fakePush = await startFakePush();
        options = { push: fakePush.options };
      } else if (variant === 'analyticsStore') {
        options = { analytics: { adapter: 'store' } };
      } else {
        options = { idempotency: { paths: ['classes/.*'] } };
      }
      s = await startService(options);
      s.service.core.events.subscribe((e) => seen.push(e));
      variants.set(variant, s);
    }
    return s;
  };

  beforeAll(async () => {
    t = await startService({ requestComplexity: { batchRequestLimit: 100 }, cloud: EVENTS_CLOUD });
    t.service.core.events.subscribe((e) => seen.push(e));
    await create(t, '/classes/Post', { title: 'first' });
  });
  afterAll(async () => {
    await t?.close();
    for (const s of variants.values()) await s.close();
    await fakePush?.close();
  });

  const tally = (events: WriteEvent[]) => {
    const counts = new Map<string, number>();
    for (const e of events)
      counts.set(`${e.className} ${e.op}`, (counts.get(`${e.className} ${e.op}`) ?? 0) + 1);
    return Object.fromEntries([...counts].sort());
  };

  for (const row of rows) {
    it(row.name, async () => {
      const s = await serviceFor(row.service);
      const v: Vars = { code: totp.generate() };
      if (row.setup) await row.setup(v, s);
      // Setup's background work (mail) must not spill into the counted window.
      await new Promise((r) => setTimeout(r, 20));
      seen.length = 0;
      const body = row.body === undefined ? undefined : JSON.parse(fill(JSON.stringify(row.body), v));
      const res: TestResponse = await s.request(row.method, fill(row.path, v), {
        as: row.as,
        body,
        rawBody: row.rawBody === undefined ? undefined : fill(row.rawBody, v),
        headers: row.headers,
        sessionToken: row.sessionToken ? fill(row.sessionToken, v) : undefined,
      });
      expect(res.status, res.text).toBe(row.status);
      if (row.settle) await row.settle(v, s, res);
      const expected = Object.fromEntries(
        row.events
          .filter(([, , n]) => n > 0)
          .map(([c, op, n]) => [`${c} ${op}`, n] as const)
          .sort(),
      );
      expect(tally(seen)).toEqual(expected);
      if (row.source) for (const e of seen) expect(e.source, `${e.className} ${e.op}`).toBe(row.source);
    });
  }

  it('an event carries the rows before and after, never an internal column', async () => {
    const u = await signUp(t, 'shape1', { email: 'shape1@example.com' });
    seen.length = 0;
    await t.request('PUT', `/users/${u.objectId}`, {
      sessionToken: u.sessionToken,
      body: { password: 'pw2' },
    });
    const update = seen.find((e) => e.className === '_User' && e.op === 'update')!;
    expect(update.before).toMatchObject({
      objectId: u.objectId,
      username: 'shape1',
      email: 'shape1@example.com',
    });
    expect(update.after).toMatchObject({ objectId: u.objectId, username: 'shape1' });
    expect(update.caller).toMatchObject({ kind: 'user', user: { objectId: u.objectId } });
    const text = JSON.stringify(seen);
    expect(text).not.toContain('_hashed_password');
    expect(text).not.toContain('pw2');
    expect(text).not.toMatch(/scrypt/);
  });

  it('an event is published only once its transaction commits', async () => {
    const published: string[] = [];
    const off = t.service.core.events.subscribe((e) => published.push(`${e.className} ${e.op}`));
    const { store } = t.service.core;
    const { writes } = t.service.data;
    const { MASTER } = await import('../src/kernel/caller.ts');
    const ctx = { caller: MASTER, source: 'system' as const, context: {} };
    await store.transaction(async () => {
      await writes.create(ctx, 'Post', { title: 'in a transaction' });
      expect(published).toEqual([]);
    });
    expect(published).toEqual(['Post create']);
    published.length = 0;
    await expect(
      store.transaction(async () => {
        await writes.create(ctx, 'Post', { title: 'rolled back' });
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(published).toEqual([]);
    off();
  });
});

describe('the pipeline’s order: authorize, validate, before-triggers, validate again, store', () => {
  let t: TestService;
  const seen: WriteEvent[] = [];
  const reached: string[] = [];
  let ada: { objectId: string; sessionToken: string };
  const MISMATCH = { code: 111, error: 'schema mismatch for count; expected Number but got String' };
  const NO_ADD_FIELD = { code: 119, error: 'Permission denied for action addField on class Typed.' };

  beforeAll(async () => {
    t = await startService();
    t.service.core.events.subscribe((e) => seen.push(e));
    const res = await t.request('POST', '/schemas/Typed', {
      as: 'master',
      body: {
        fields: { title: { type: 'String' }, count: { type: 'Number' } },
        classLevelPermissions: {
          find: { '*': true },
          get: { '*': true },
          count: { '*': true },
          create: { '*': true },
          update: { '*': true },
          delete: { '*': true },
          addField: {},
        },
      },
    });
    expect(res.status, res.text).toBe(200);
    ada = await signUp(t, 'typed-ada');
    // Registered at run time on the service's own cloud registry: the pipeline asks it per write.
    t.service.cloud.registry.definitions().beforeSave('Typed', (req) => {
      const object = req.object!;
      reached.push(String(object.title));
      if (object.title === 'to-a-string') object.count = 'many';
      if (object.title === 'adds-a-field') object.extra = 1;
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  const write = (method: 'POST' | 'PUT', path: string, body: Record<string, unknown>) =>
    t.request(method, path, { sessionToken: ada.sessionToken, body });
  const rowCount = async () =>
    (await t.request('GET', '/classes/Typed', { as: 'master', query: { count: 1, limit: 0 } })).json.count;

  it('a body that fails validation never reaches the before-trigger', async () => {
    reached.length = 0;
    seen.length = 0;
    const res = await write('POST', '/classes/Typed', { title: 'sent-wrong', count: 'many' });
    expect(res.status).toBe(400);
    expect(res.json).toEqual(MISMATCH);
    expect(reached).toEqual([]);
    expect(seen).toEqual([]);
  });

  it('a beforeSave that sets a wrong type is refused like a client sending it (create)', async () => {
    const before = await rowCount();
    reached.length = 0;
    seen.length = 0;
    const res = await write('POST', '/classes/Typed', { title: 'to-a-string', count: 1 });
    expect(res.status).toBe(400);
    expect(res.json).toEqual(MISMATCH);
    expect(reached).toEqual(['to-a-string']);
    expect(seen).toEqual([]);
    expect(await rowCount()).toBe(before);
  });

  it('a beforeSave that sets a wrong type is refused like a client sending it (update)', async () => {
    const created = await write('POST', '/classes/Typed', { title: 'fine', count: 1 });
    expect(created.status, created.text).toBe(201);
    const id = created.json.objectId as string;
    const client = await write('PUT', `/classes/Typed/${id}`, { count: 'many' });
    expect(client.status).toBe(400);
    expect(client.json).toEqual(MISMATCH);
    seen.length = 0;
    const res = await write('PUT', `/classes/Typed/${id}`, { title: 'to-a-string' });
    expect(res.status).toBe(400);
    expect(res.json).toEqual(MISMATCH);
    expect(seen).toEqual([]);
    const row = await t.request('GET', `/classes/Typed/${id}`, { as: 'master' });
    expect(row.json).toMatchObject({ title: 'fine', count: 1 });
  });

  it('a field a beforeSave adds needs addField, as when the client sends it', async () => {
    const client = await write('POST', '/classes/Typed', { title: 'client-adds', extra: 1 });
    expect(client.status).toBe(400);
    expect(client.json).toEqual(NO_ADD_FIELD);
    seen.length = 0;
    const res = await write('POST', '/classes/Typed', { title: 'adds-a-field' });
    expect(res.status).toBe(400);
    expect(res.json).toEqual(NO_ADD_FIELD);
    expect(seen).toEqual([]);
    const schema = await t.request('GET', '/schemas/Typed', { as: 'master' });
    expect(schema.json.fields.extra).toBeUndefined();
  });
});

describe('schema changes, config and purge are authorized in the pipeline itself', () => {
  let t: TestService;
  const seen: WriteEvent[] = [];
  const REFUSED = { code: 119, message: 'unauthorized: master key is required', status: 403 };

  beforeAll(async () => {
    t = await startService();
    await create(t, '/classes/Kept', { n: 1 });
    const config = await t.request('PUT', '/config', { as: 'master', body: { params: { greeting: 'hi' } } });
    expect(config.status, config.text).toBe(200);
    t.service.core.events.subscribe((e) => seen.push(e));
  });
  afterAll(async () => {
    await t?.close();
  });

  const callers = [
    ['an anonymous caller', anonymous()],
    ['a signed-in user', makeCaller({ user: { objectId: 'someUser01' }, sessionToken: 'r:x' })],
    ['an installation', anonymous('device-1')],
  ] as const;

  for (const [name, caller] of callers) {
    it(`${name} is refused 119 by every master-only write, nothing written, no event`, async () => {
      const { writes } = t.service.data;
      seen.length = 0;
      for (const source of ['rest', 'cloud', 'system'] as const) {
        const ctx = ctxOf(caller, source);
        await expect(
          writes.createClass(ctx, 'Sneaky', { fields: { a: { type: 'String' } } }),
        ).rejects.toMatchObject(REFUSED);
        await expect(
          writes.updateClass(ctx, 'Kept', { fields: { b: { type: 'Number' } } }),
        ).rejects.toMatchObject(REFUSED);
        await expect(writes.deleteClass(ctx, 'Kept')).rejects.toMatchObject(REFUSED);
        await expect(writes.purge(ctx, 'Kept')).rejects.toMatchObject(REFUSED);
        await expect(writes.updateConfig(ctx, { greeting: 'pwned' }, {})).rejects.toMatchObject(REFUSED);
      }
      expect(seen).toEqual([]);
      expect(t.service.core.schemas.get('Sneaky')).toBeUndefined();
      expect(Object.keys(t.service.core.schemas.get('Kept')!.fields)).not.toContain('b');
      const rows = await t.request('GET', '/classes/Kept', { as: 'master', query: { count: 1, limit: 0 } });
      expect(rows.json.count).toBe(1);
      const config = await t.request('GET', '/config', { as: 'master' });
      expect(config.json.params).toEqual({ greeting: 'hi' });
    });
  }

  it('the decider: a Verdict like the other layers’, master-only for everyone but the master key', () => {
    expect(decideMasterSurface(anonymous(), 'schema', 'Kept')).toEqual({
      allowed: false,
      layer: 'system',
      rule: 'system.masterOnly',
      code: 119,
      message: 'unauthorized: master key is required',
      reason: 'changing a class schema (Kept) is master-only',
    });
    expect(decideMasterSurface(makeCaller({ user: { objectId: 'u1' } }), 'config')).toMatchObject({
      allowed: false,
      rule: 'system.masterOnly',
      reason: 'changing the config is master-only',
    });
    expect(decideMasterSurface(MASTER, 'purge', 'Kept')).toEqual({
      allowed: true,
      layer: 'master',
      rule: 'master',
      reason: 'purging a class (Kept) is allowed with the master key',
    });
  });

  it('the master key passes the same step', async () => {
    const ctx = ctxOf(MASTER, 'system');
    const { writes } = t.service.data;
    seen.length = 0;
    await writes.createClass(ctx, 'Allowed', {});
    await writes.purge(ctx, 'Allowed');
    await writes.updateConfig(ctx, { greeting: 'hello' }, {});
    await writes.deleteClass(ctx, 'Allowed');
    expect(seen.map((e) => `${e.className} ${e.op}`)).toEqual([
      '_SCHEMA create',
      'Allowed purge',
      '_GlobalConfig update',
      '_SCHEMA delete',
    ]);
  });

  it('the routes answer what they answered before: 403, 119, the master-key text', async () => {
    const cases: Array<[string, string, unknown]> = [
      ['POST', '/schemas/Sneaky', {}],
      ['PUT', '/schemas/Kept', { fields: { b: { type: 'Number' } } }],
      ['DELETE', '/schemas/Kept', undefined],
      ['DELETE', '/purge/Kept', undefined],
      ['PUT', '/config', { params: { greeting: 'pwned' } }],
    ];
    for (const [method, path, body] of cases) {
      const res = await t.request(method, path, { body });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.json, `${method} ${path}`).toEqual({
        code: 119,
        error: 'unauthorized: master key is required',
      });
    }
  });
});
