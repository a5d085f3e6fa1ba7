import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { FROM_PARSE_PATH, type FromParseRun } from '@bds/client/protocol';
import ParseSDK from 'parse/node';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FromParseOptions, importFromParse } from '../../src/transfer/from-parse.ts';
import { transferFiles } from '../../src/transfer/open.ts';
import { COL } from '../../src/users/shared.ts';
import { testIssuer } from '../helpers/id-tokens.ts';
import { startService, type TestService } from '../helpers/service.ts';
import { INCUMBENT_KEYS, type Incumbent, incumbentUnavailable, startIncumbent } from './incumbent.ts';

const Parse = ParseSDK as typeof ParseSDK & {
  initialize(applicationId: string, javaScriptKey: string, masterKey?: string): void;
};
const MASTER = { useMasterKey: true };
const PASSWORDS = { alice: 'alice-old-pw', bob: 'bob-old-pw', carol: 'carol-old-pw' } as const;

const unavailable = await incumbentUnavailable();
if (unavailable) console.log(`[from-parse] skipped: ${unavailable}`);

/** The SDK pointed at one server (both use the same keys). */
function use(url: string) {
  Parse.initialize(INCUMBENT_KEYS.appId, INCUMBENT_KEYS.javascriptKey, INCUMBENT_KEYS.masterKey);
  Parse.serverURL = url;
  Parse.CoreManager.set('REQUEST_ATTEMPT_LIMIT', 1);
}

const filesOf = (t: TestService) => transferFiles(t.service.options, t.service.data);

/** Seeds the incumbent through the stock SDK: every wire type, users, roles, ACLs, CLPs, files, … */
async function seed(url: string): Promise<void> {
  use(url);
  const tag = new Parse.Schema('Tag');
  tag.addString('label');
  await tag.save();
  const item = new Parse.Schema('Item');
  item
    .addString('title')
    .addNumber('n')
    .addBoolean('flag')
    .addDate('when')
    .addObject('meta')
    .addArray('list')
    .addPointer('owner', '_User')
    .addFile('attachment')
    .addGeoPoint('where')
    .addPolygon('area')
    .addField('raw', 'Bytes')
    .addRelation('tags', 'Tag')
    .addString('secret');
  item.addIndex('n_1', { n: 1 });
  item.setCLP({
    find: { '*': true },
    count: { '*': true },
    get: { '*': true },
    create: { '*': true },
    update: { '*': true },
    delete: { '*': true },
    addField: {},
    protectedFields: { '*': ['secret'] },
  } as never);
  await item.save();

  const users: Record<string, ParseSDK.User> = {};
  for (const [name, password] of Object.entries(PASSWORDS)) {
    const user = new Parse.User();
    user.set('username', name);
    user.set('password', password);
    user.set('email', `${name}@example.com`);
    users[name] = await user.signUp();
  }
  const publicRead = () => {
    const acl = new Parse.ACL();
    acl.setPublicReadAccess(true);
    return acl;
  };
  const editors = new Parse.Role('Editors', publicRead());
  editors.getUsers().add(users.bob!);
  await editors.save(null, MASTER);
  const admins = new Parse.Role('Admins', publicRead());
  admins.getUsers().add(users.alice!);
  await admins.save(null, MASTER);
  // Admins are Editors too: the hierarchy.
  editors.getRoles().add(admins);
  await editors.save(null, MASTER);

  const tags = [];
  for (const label of ['red', 'green', 'blue'])
    tags.push(await new Parse.Object('Tag', { label }).save(null, MASTER));
  const file = await new Parse.File(
    'hello.txt',
    { base64: Buffer.from('hello, world').toString('base64') },
    'text/plain',
  ).save(MASTER);

  const editorsOnly = new Parse.ACL();
  editorsOnly.setRoleReadAccess('Editors', true);
  const carolOnly = new Parse.ACL(users.carol!);
  const full: ParseSDK.Object = new Parse.Object('Item', {
    title: 'everything',
    n: 42.5,
    flag: true,
    when: new Date('2026-01-02T03:04:05.678Z'),
    meta: { nested: { a: [1, 'two', null] } },
    list: [1, 'x', { y: true }],
    owner: users.alice,
    attachment: file,
    where: new Parse.GeoPoint(52.5, 13.4),
    area: new Parse.Polygon([
      [0, 0],
      [0, 1],
      [1, 1],
    ]),
    raw: { __type: 'Bytes', base64: 'AQID' },
    secret: 'hidden',
  });
  full.setACL(publicRead());
  full.relation('tags').add([tags[0]!, tags[2]!]);
  await full.save(null, MASTER);
  const forEditors = new Parse.Object('Item', { title: 'for editors', n: 1 });
  forEditors.setACL(editorsOnly);
  await forEditors.save(null, MASTER);
  const forCarol = new Parse.Object('Item', { title: 'for carol', n: 2 });
  forCarol.setACL(carolOnly);
  await forCarol.save(null, MASTER);

  const res = await fetch(`${url}/installations`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      'X-Parse-Application-Id': INCUMBENT_KEYS.appId,
      'X-Parse-Master-Key': INCUMBENT_KEYS.masterKey,
    },
    body: JSON.stringify({
      installationId: randomUUID(),
      deviceType: 'ios',
      deviceToken: 'abc123',
      channels: ['news'],
    }),
  });
  expect(res.status, await res.text()).toBe(201);
  await Parse.Config.save({ greeting: 'hello', limit: 3 }, { limit: true });
}

/** What the stock SDK sees on one server, as each user, anonymously and as the master. */
async function observe(url: string) {
  use(url);
  const seen: Record<string, unknown> = {};
  const itemView = (o: ParseSDK.Object) => {
    const json = o.toJSON() as Record<string, unknown>;
    const attachment = o.get('attachment') as ParseSDK.File | undefined;
    delete json.attachment;
    delete json.tags;
    return { ...json, attachment: attachment?.name() };
  };
  for (const [name, password] of Object.entries(PASSWORDS)) {
    const user = await Parse.User.logIn(name, password);
    const sessionToken = user.getSessionToken() ?? undefined;
    const items = await new Parse.Query('Item').ascending('title').find({ sessionToken });
    const roles = await new Parse.Query(Parse.Role)
      .equalTo('users', user)
      .ascending('name')
      .find({ sessionToken });
    seen[name] = {
      id: user.id,
      email: user.get('email'),
      items: items.map(itemView),
      roles: roles.map((r) => r.get('name')),
    };
  }
  seen.anonymous = (await new Parse.Query('Item').ascending('title').find()).map(itemView);
  const all = await new Parse.Query('Item').ascending('title').find(MASTER);
  seen.master = all.map(itemView);
  const full = all.find((o) => o.get('title') === 'everything')!;
  seen.tags = (await full.relation('tags').query().ascending('label').find(MASTER)).map((t) =>
    t.get('label'),
  );
  const attachment = full.get('attachment') as ParseSDK.File;
  seen.fileBytes = await (await fetch(attachment.url()!)).text();
  const admins = await new Parse.Query(Parse.Role).equalTo('name', 'Admins').first(MASTER);
  seen.adminsIn = (await new Parse.Query(Parse.Role).equalTo('roles', admins).find(MASTER)).map((r) =>
    r.get('name'),
  );
  const installations = await new Parse.Query(Parse.Installation).find(MASTER);
  seen.installations = installations.map((i) => [
    i.get('deviceType'),
    i.get('deviceToken'),
    i.get('channels'),
  ]);
  seen.config = (await Parse.Config.get()).attributes;
  const schema = await new Parse.Schema('Item').get();
  seen.protectedFields = (schema.classLevelPermissions as Record<string, unknown>).protectedFields;
  seen.fieldTypes = Object.fromEntries(
    Object.entries(schema.fields as Record<string, { type: string; targetClass?: string }>)
      .filter(([name]) => !['objectId', 'createdAt', 'updatedAt', 'ACL'].includes(name))
      .map(([name, def]) => [name, def.targetClass ? `${def.type}<${def.targetClass}>` : def.type]),
  );
  return seen;
}

/** A digest of every table of the incumbent's database: it must not change by an import. */
async function incumbentDigest(databaseURI: string): Promise<string> {
  const client = new pg.Client({ connectionString: databaseURI });
  await client.connect();
  try {
    const { rows: tables } = await client.query(
      `SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`,
    );
    const parts: string[] = [];
    for (const { tablename } of tables as Array<{ tablename: string }>) {
      const { rows } = await client.query(
        `SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) AS d FROM "${tablename}" t`,
      );
      parts.push(`${tablename}:${rows[0].d}`);
    }
    return parts.join('\n');
  } finally {
    await client.end();
  }
}

describe.skipIf(unavailable !== undefined)('import --from-parse, from a running parse-server', () => {
  let incumbent: Incumbent;
  let before: Awaited<ReturnType<typeof observe>>;
  const targets: TestService[] = [];
  const dir = mkdtempSync(path.join(tmpdir(), 'bds-from-parse-'));

  beforeAll(async () => {
    incumbent = await startIncumbent();
    await seed(incumbent.url);
    before = await observe(incumbent.url);
    // Rows seeded before the first run are older than its start on the incumbent's clock.
    await new Promise((resolve) => setTimeout(resolve, 1200));
  }, 120_000);

  afterAll(async () => {
    for (const t of targets) await t.close();
    await incumbent?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function target(): Promise<TestService> {
    const t = await startService({ passwordHashCost: 12 });
    targets.push(t);
    return t;
  }
  const sourceOf = (name: string): Omit<FromParseOptions, 'progress'> => ({
    serverURL: incumbent.url,
    appId: INCUMBENT_KEYS.appId,
    masterKey: INCUMBENT_KEYS.masterKey,
    postgresURL: incumbent.databaseURI,
    stateFile: path.join(dir, `${name}.json`),
  });

  it('a full import gives the same answers to the same SDK calls, and every user logs in with the old password', async () => {
    const t = await target();
    // A run starts from the incumbent's clock read a second early, in whole seconds (its Date
    // header): rows written in the two seconds before the first run are read again by the second
    // (a harmless re-import). Waiting them out lets the second run's counts below be exact.
    await new Promise((resolve) => setTimeout(resolve, 2_100));
    const digest = await incumbentDigest(incumbent.databaseURI);
    const summary = await importFromParse(t.service.data, filesOf(t), sourceOf('full'));
    expect(summary).toMatchObject({ since: null, resumed: false, files: 1, passwords: 3, relations: 5 });
    // 3 users, 2 roles, 3 tags, 3 items, 1 installation.
    expect(summary.rows).toBe(12);
    expect(await incumbentDigest(incumbent.databaseURI)).toBe(digest);

    const hashes = await t.service.data.lookups.internal('_User', 'username', 'alice', [COL.hash]);
    expect(hashes[0]![COL.hash]).toMatch(/^\$2[aby]\$/);
    const after = await observe(t.url);
    expect(after).toEqual(before);
    // observe logged every user in: the imported hash is replaced by the service's own.
    const replaced = await t.service.data.lookups.internal('_User', 'username', 'alice', [COL.hash]);
    expect(replaced[0]![COL.hash]).toMatch(/^scrypt\$/);
    use(t.url);
    await expect(Parse.User.logIn('alice', 'wrong')).rejects.toMatchObject({ code: 101 });

    // The second run reads only what changed on the incumbent since the first started.
    use(incumbent.url);
    const everything = await new Parse.Query('Item').equalTo('title', 'everything').first(MASTER);
    everything!.set('n', 43);
    const green = await new Parse.Query('Tag').equalTo('label', 'green').first(MASTER);
    everything!.relation('tags').add(green!);
    await everything!.save(null, MASTER);
    await new Parse.Object('Item', { title: 'later', n: 9 }).save(null, MASTER);
    const changed = await observe(incumbent.url);
    const second = await importFromParse(t.service.data, filesOf(t), sourceOf('full'));
    expect(second.since).toMatch(/^\d{4}-/);
    expect(second).toMatchObject({ resumed: false, rows: 2, relations: 3, files: 0 });
    expect(await observe(t.url)).toEqual(changed);
  }, 120_000);

  it('an interrupted import goes on where it stopped; hashes from a mongoexport file of _User', async () => {
    const t = await target();
    // The _User collection as mongoexport writes it, from the incumbent's own rows.
    const client = new pg.Client({ connectionString: incumbent.databaseURI });
    await client.connect();
    const { rows } = await client.query(`SELECT "objectId", username, "_hashed_password" FROM "_User"`);
    await client.end();
    const usersFile = path.join(dir, 'users.json');
    writeFileSync(
      usersFile,
      rows
        .map((r) =>
          JSON.stringify({ _id: r.objectId, username: r.username, _hashed_password: r._hashed_password }),
        )
        .join('\n'),
    );
    const options = { ...sourceOf('resumed'), postgresURL: undefined, usersFile, pageSize: 1 };
    let pages = 0;
    await expect(
      importFromParse(t.service.data, filesOf(t), {
        ...options,
        progress: ({ className, total, done }) => {
          // After the second page (the class's start, with its total, is no page).
          if (className === 'Item' && !done && total === undefined && ++pages === 2)
            throw new Error('interrupted');
        },
      }),
    ).rejects.toThrow('interrupted');
    const items = await t.request('GET', '/classes/Item', { as: 'master' });
    expect(items.json.results).toHaveLength(2);
    const rest = await importFromParse(t.service.data, filesOf(t), options);
    expect(rest).toMatchObject({ since: null, resumed: true });
    use(incumbent.url);
    const now = await observe(incumbent.url);
    expect(await observe(t.url)).toEqual(now);
  }, 120_000);

  it("authData: users of the providers the service supports keep it and sign in with it; others' are counted per provider", async () => {
    const signUp = async (body: Record<string, unknown>) => {
      const res = await fetch(`${incumbent.url}/users`, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          'X-Parse-Application-Id': INCUMBENT_KEYS.appId,
          'X-Parse-REST-API-Key': INCUMBENT_KEYS.restAPIKey,
        },
        body: JSON.stringify(body),
      });
      expect(res.status, JSON.stringify(body)).toBe(201);
      return ((await res.json()) as { objectId: string }).objectId;
    };
    const anonymousId = randomUUID();
    const anon = await signUp({ authData: { anonymous: { id: anonymousId } } });
    const dora = await signUp({ username: 'dora', authData: { acme: { id: 'acme-dora', token: 't' } } });
    const eve = await signUp({
      username: 'eve',
      password: 'eve-old-pw',
      authData: { acme: { id: 'acme-eve' }, legacy: { id: 'legacy-eve' } },
    });
    const frank = await signUp({ username: 'frank', authData: { legacy: { id: 'legacy-frank' } } });

    const acme = await testIssuer('https://acme.test', 'acme-app');
    const t = await startService({
      passwordHashCost: 12,
      auth: { acme: { issuer: acme.issuer, audience: acme.audience, jwks: acme.jwks } },
    });
    targets.push(t);
    const summary = await importFromParse(t.service.data, filesOf(t), sourceOf('auth-data'));
    expect(summary.authDataNotImported).toEqual({ legacy: 2 });

    const authDataOf = async (objectId: string) =>
      (await t.request('GET', `/users/${objectId}`, { as: 'master' })).json.authData;
    expect(await authDataOf(dora)).toEqual({ acme: { id: 'acme-dora', token: 't' } });
    expect(await authDataOf(eve)).toEqual({ acme: { id: 'acme-eve' } });
    expect(await authDataOf(frank)).toBeUndefined();
    const signIn = async (authData: Record<string, unknown>) => {
      const res = await t.request('POST', '/users', { body: { authData } });
      return { status: res.status, objectId: (res.json as { objectId?: string }).objectId };
    };
    expect(await signIn({ anonymous: { id: anonymousId } })).toEqual({ status: 200, objectId: anon });
    for (const [id, objectId] of [
      ['acme-dora', dora],
      ['acme-eve', eve],
    ] as const) {
      expect(await signIn({ acme: { id, id_token: await acme.token(id) } })).toEqual({
        status: 200,
        objectId,
      });
    }
  }, 120_000);

  it('with sessions, a session token of the incumbent works here (its installationId and createdWith kept), an expired one does not come; without, none does', async () => {
    use(incumbent.url);
    const installationId = randomUUID();
    const login = await fetch(`${incumbent.url}/login`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        'X-Parse-Application-Id': INCUMBENT_KEYS.appId,
        'X-Parse-REST-API-Key': INCUMBENT_KEYS.restAPIKey,
        'X-Parse-Installation-Id': installationId,
      },
      body: JSON.stringify({ username: 'bob', password: PASSWORDS.bob }),
    });
    expect(login.status).toBe(200);
    const { sessionToken, objectId: bobId } = (await login.json()) as Record<string, string>;
    expect(sessionToken).toMatch(/^r:/);
    // A second session of bob's, expired there (in the incumbent's own table): it does not come.
    const second = await fetch(`${incumbent.url}/login`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        'X-Parse-Application-Id': INCUMBENT_KEYS.appId,
        'X-Parse-REST-API-Key': INCUMBENT_KEYS.restAPIKey,
      },
      body: JSON.stringify({ username: 'bob', password: PASSWORDS.bob }),
    });
    const expiredToken = ((await second.json()) as Record<string, string>).sessionToken!;
    const db = new pg.Client({ connectionString: incumbent.databaseURI });
    await db.connect();
    const expired = await db.query(
      `UPDATE "_Session" SET "expiresAt" = now() - interval '1 day' WHERE "sessionToken" = $1`,
      [expiredToken],
    );
    await db.end();
    expect(expired.rowCount).toBe(1);
    // A condition: without one, the incumbent's count on PostgreSQL is the planner's estimate.
    const sessionsThere = await new Parse.Query(Parse.Session).exists('sessionToken').count(MASTER);
    expect(sessionsThere).toBeGreaterThan(2);

    const without = await target();
    const plain = await importFromParse(without.service.data, filesOf(without), sourceOf('no-sessions'));
    expect(plain.sessions).toBe(0);
    const refused = await without.request('GET', '/users/me', { sessionToken });
    expect(refused.status).toBe(400);
    expect(refused.json).toEqual({ code: 209, error: 'Invalid session token' });

    const t = await target();
    const summary = await importFromParse(t.service.data, filesOf(t), {
      ...sourceOf('sessions'),
      sessions: true,
    });
    expect(summary.sessions).toBe(sessionsThere - 1);
    const stale = await t.request('GET', '/users/me', { sessionToken: expiredToken });
    expect(stale.status).toBe(400);
    expect(stale.json).toEqual({ code: 209, error: 'Invalid session token' });
    const me = await t.request('GET', '/users/me', { sessionToken });
    expect(me.status, me.text).toBe(200);
    expect(me.json).toMatchObject({ objectId: bobId, username: 'bob', sessionToken });
    const session = await t.request('GET', '/sessions/me', { sessionToken });
    expect(session.json).toMatchObject({
      sessionToken,
      installationId,
      user: { __type: 'Pointer', className: '_User', objectId: bobId },
      createdWith: { action: 'login', authProvider: 'password' },
    });
    // The incumbent's schema of _Session is not brought: the service's own is kept.
    const schema = await t.request('GET', '/schemas/_Session', { as: 'master' });
    expect(Object.keys(schema.json.fields).sort()).toEqual([
      'ACL',
      'createdAt',
      'createdWith',
      'expiresAt',
      'installationId',
      'objectId',
      'sessionToken',
      'updatedAt',
      'user',
    ]);
  }, 120_000);

  it('a second run deletes here the rows and sessions deleted on the incumbent since the first, a page at a time', async () => {
    use(incumbent.url);
    const doomed = await new Parse.Object('Item', { title: 'doomed', n: 7 }).save(null, MASTER);
    const tag = await new Parse.Object('Tag', { label: 'doomed too' }).save(null, MASTER);
    const carol = await Parse.User.logIn('carol', PASSWORDS.carol);
    const sessionToken = carol.getSessionToken()!;
    const t = await target();
    // Pages of two: the objectIds here are asked about in several pages per class.
    const options = { ...sourceOf('deletions'), sessions: true, pageSize: 2 };
    const first = await importFromParse(t.service.data, filesOf(t), options);
    expect(first.deleted).toBe(0);
    expect((await t.request('GET', '/users/me', { sessionToken })).status).toBe(200);

    await doomed.destroy(MASTER);
    await tag.destroy(MASTER);
    // carol's session, ended on the incumbent.
    const logout = await fetch(`${incumbent.url}/logout`, {
      method: 'POST',
      headers: {
        'X-Parse-Application-Id': INCUMBENT_KEYS.appId,
        'X-Parse-REST-API-Key': INCUMBENT_KEYS.restAPIKey,
        'X-Parse-Session-Token': sessionToken,
      },
    });
    expect(logout.status).toBe(200);
    // Over REST this time ($in queries), without the incumbent's database.
    const second = await importFromParse(t.service.data, filesOf(t), { ...options, postgresURL: undefined });
    expect(second.deleted).toBe(3);
    const gone = await t.request('GET', `/classes/Item/${doomed.id}`, { as: 'master' });
    expect(gone.status).toBe(404);
    expect(gone.json).toEqual({ code: 101, error: 'Object not found.' });
    const refused = await t.request('GET', '/users/me', { sessionToken });
    expect(refused.json).toEqual({ code: 209, error: 'Invalid session token' });
    const ids = async (url: string, className: string) => {
      use(url);
      const query = new Parse.Query(className).ascending('objectId').limit(1000);
      // Sessions expired on the incumbent (one, from an earlier test) are not brought.
      if (className === '_Session') query.greaterThan('expiresAt', new Date());
      return (await query.find(MASTER)).map((o) => o.id);
    };
    for (const className of ['Item', 'Tag', '_Session']) {
      expect(await ids(t.url, className), className).toEqual(await ids(incumbent.url, className));
    }
    // A third run (from the incumbent's database) with nothing gone deletes nothing.
    const third = await importFromParse(t.service.data, filesOf(t), options);
    expect(third.deleted).toBe(0);
  }, 120_000);

  it("the service's endpoint (master only) runs the same import in the background: progress per class, the summary, never the key", async () => {
    const t = await target();
    const start = (body: unknown, as: 'master' | 'rest' = 'master') =>
      t.request('POST', FROM_PARSE_PATH, { as, body });
    const valid = {
      serverURL: incumbent.url,
      appId: INCUMBENT_KEYS.appId,
      masterKey: INCUMBENT_KEYS.masterKey,
      postgresURL: incumbent.databaseURI,
      sessions: true,
    };
    const notMaster = await start(valid, 'rest');
    expect(notMaster.status).toBe(403);
    expect(notMaster.json).toEqual({ code: 119, error: 'unauthorized: master key is required' });
    const refusals: Array<[unknown, string]> = [
      [[], 'The body must be a JSON object.'],
      [{ ...valid, serverURL: 'old.example.com' }, 'serverURL must be the http(s) URL of parse-server.'],
      [{ ...valid, appId: '' }, 'appId must be the application id of parse-server.'],
      [{ ...valid, masterKey: 3 }, 'masterKey must be the master key of parse-server.'],
      [
        { ...valid, postgresURL: 'mysql://x' },
        'postgresURL must be a postgres:// URL of the database of parse-server.',
      ],
      [{ ...valid, sessions: 'yes' }, 'sessions must be true or false.'],
      [
        { ...valid, stateFile: '/tmp/x' },
        'Unknown field stateFile: an import takes serverURL, appId, masterKey, postgresURL, sessions.',
      ],
    ];
    for (const [body, error] of refusals) {
      const res = await start(body);
      expect(res.status, error).toBe(400);
      expect(res.json).toEqual({ code: 107, error });
    }

    const started = await start(valid);
    expect(started.status).toBe(202);
    expect(started.json).toMatchObject({
      status: 'running',
      serverURL: incumbent.url,
      appId: INCUMBENT_KEYS.appId,
      sessions: true,
      postgres: true,
      summary: null,
      error: null,
    });
    const id = started.json.id as string;
    // One at a time.
    const second = await start(valid);
    expect(second.status).toBe(409);
    expect(second.json).toEqual({
      code: 119,
      error: `An import from parse-server is running (${id}); start another once it ends.`,
    });
    let run = started.json as FromParseRun;
    const answers: string[] = [started.text];
    for (let i = 0; i < 600 && run.status === 'running'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      const res = await t.request('GET', `${FROM_PARSE_PATH}/${id}`, { as: 'master' });
      expect(res.status).toBe(200);
      answers.push(res.text);
      run = res.json as FromParseRun;
    }
    expect(run.status).toBe('done');
    expect(run.error).toBeNull();
    expect(run.finishedAt).toMatch(/^\d{4}-/);
    use(incumbent.url);
    const items = await new Parse.Query('Item').exists('objectId').count(MASTER);
    expect(run.classes.find((c) => c.className === 'Item')).toEqual({
      className: 'Item',
      rows: items,
      total: items,
      done: true,
    });
    expect(run.classes.at(-1)!.className).toBe('_Session');
    for (const c of run.classes) expect(c.rows, c.className).toBe(c.total);
    expect(run.summary).toMatchObject({
      since: null,
      resumed: false,
      passwords: expect.any(Number),
      deleted: 0,
    });
    expect(run.summary!.rows).toBe(
      run.classes.filter((c) => c.className !== '_Session').reduce((n, c) => n + c.rows, 0),
    );
    // The key and the database URL are in no answer and not in the state file.
    const stateFile = readFileSync(path.join(t.dataDir, 'from-parse-state.json'), 'utf8');
    for (const text of [...answers, stateFile]) {
      expect(text).not.toContain(INCUMBENT_KEYS.masterKey);
      expect(text).not.toContain(incumbent.databaseURI);
    }
    // The same state file as the CLI's default: the next run reads only the changes.
    const next = await start(valid);
    expect(next.status).toBe(202);
    const unknown = await t.request('GET', `${FROM_PARSE_PATH}/nope`, { as: 'master' });
    expect(unknown.status).toBe(404);
    expect(unknown.json).toEqual({ code: 101, error: 'No import from parse-server nope.' });
    run = next.json as FromParseRun;
    for (let i = 0; i < 600 && run.status === 'running'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      run = (await t.request('GET', `${FROM_PARSE_PATH}/${next.json.id}`, { as: 'master' }))
        .json as FromParseRun;
    }
    expect(run.summary!.since).toMatch(/^\d{4}-/);

    // A refusal of the incumbent ends the run as failed, with the answer named and no key.
    const wrong = await start({ ...valid, masterKey: 'not-the-master-key', postgresURL: undefined });
    expect(wrong.status).toBe(202);
    run = wrong.json as FromParseRun;
    for (let i = 0; i < 600 && run.status === 'running'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      run = (await t.request('GET', `${FROM_PARSE_PATH}/${wrong.json.id}`, { as: 'master' }))
        .json as FromParseRun;
    }
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(/^parse-server answered 403 to GET \/schemas: /);
    expect(run.error).not.toContain('not-the-master-key');
  }, 120_000);
});
