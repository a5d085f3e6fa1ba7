import { fileURLToPath } from 'node:url';
import ParseSDK from 'parse/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FRAME_TIMEOUT } from '../helpers/live.ts';
import { mailbox, waitForMail } from '../helpers/mailbox.ts';
import { type Receiver, startReceiver } from '../helpers/receiver.ts';
import { KEYS, startService, type TestService } from '../helpers/service.ts';

/**
 * Cloud code written for the incumbent (server/test/fixtures/incumbent-cloud.cjs), loaded unchanged
 * through the option parseCloud beside the service's own module (option cloud), driven through the
 * stock `parse` SDK (v8) against the real service (docs/cloud.md#cloud-code-written-for-the-incumbent).
 */

const Parse = ParseSDK as typeof ParseSDK & {
  initialize(applicationId: string, javaScriptKey: string, masterKey?: string): void;
};

const PARSE_CLOUD = fileURLToPath(new URL('../fixtures/incumbent-cloud.cjs', import.meta.url));
const CLOUD = fileURLToPath(new URL('../fixtures/incumbent-cloud-beside.ts', import.meta.url));

let t: TestService;
let receiver: Receiver;
const clients: any[] = [];

async function signUp(username: string, fields: Record<string, unknown> = {}): Promise<ParseSDK.User> {
  const user = new Parse.User();
  user.set({ username, password: 'pw-123456', ...fields });
  await user.signUp();
  return user;
}

/** What a rejected promise rejected with: its code and text. */
async function refusal(promise: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await promise;
  } catch (err) {
    const { code, message } = err as { code: number; message: string };
    return { code, message };
  }
  throw new Error('expected a refusal');
}

async function rows(className: string): Promise<ParseSDK.Object[]> {
  await t.service.cloud.triggers.idle();
  return new Parse.Query(className).ascending('createdAt').find({ useMasterKey: true });
}

/** A promise that fails with `what` instead of hanging when the SDK never gets there. */
function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out: ${what}`)), FRAME_TIMEOUT);
    }),
  ]).finally(() => clearTimeout(timer));
}

beforeAll(async () => {
  receiver = await startReceiver();
  receiver.on('/data?q=x', () => ({ json: { answer: 42 } }));
  t = await startService({
    cloud: CLOUD,
    parseCloud: PARSE_CLOUD,
    hooks: { allowInsecureUrls: true },
    liveQuery: { classNames: ['Note', 'Chat'] },
  });
  Parse.initialize(KEYS.appId, KEYS.javascriptKey, KEYS.masterKey);
  Parse.serverURL = t.url;
  Parse.CoreManager.set('REQUEST_ATTEMPT_LIMIT', 1);
  // Users write notes: the class exists (only the master key creates classes).
  await new Parse.Schema('Note').addString('text').save();
  const open = { '*': true };
  await new Parse.Schema('Chat')
    .addString('text')
    .addString('secret')
    .setCLP({
      find: open,
      get: open,
      count: open,
      create: open,
      update: open,
      delete: open,
      addField: {},
      protectedFields: { '*': ['secret'] },
    } as any)
    .save();
});

afterAll(async () => {
  for (const client of clients) await client.close();
  await t?.close();
  await receiver?.close();
});

describe('functions and validators written for the incumbent', () => {
  it('runs a function; a validator refuses with 142 and the incumbent text', async () => {
    expect(await Parse.Cloud.run('hello', { name: 'Ann' })).toBe('Hello Ann');
    expect(await refusal(Parse.Cloud.run('hello', {}))).toEqual({
      code: 142,
      message: 'Validation failed. Please specify data for name.',
    });
    expect(await refusal(Parse.Cloud.run('hello', { name: 5 }))).toEqual({
      code: 142,
      message: 'Validation failed. Invalid type for name. Expected: string',
    });
    expect(await Parse.Cloud.run('paint', { color: 'red' })).toBe('2 coats of red');
    expect(await refusal(Parse.Cloud.run('paint', { color: 'green' }))).toEqual({
      code: 142,
      message: 'Validation failed. Invalid option for color. Expected: red, blue',
    });
  });

  it('requireUser, requireMaster and requireUserKeys', async () => {
    expect(await refusal(Parse.Cloud.run('members', {}))).toEqual({
      code: 142,
      message: 'Validation failed. Please login to continue.',
    });
    expect(await refusal(Parse.Cloud.run('admins', {}))).toEqual({
      code: 142,
      message: 'Validation failed. Master key is required to complete this request.',
    });
    expect(await Parse.Cloud.run('admins', {}, { useMasterKey: true })).toBe('welcome');
    const plain = await signUp('plain-user');
    const sessionToken = plain.getSessionToken()!;
    expect(await Parse.Cloud.run('members', {}, { sessionToken })).toBe('welcome');
    expect(await refusal(Parse.Cloud.run('nicknamed', {}, { sessionToken }))).toEqual({
      code: 142,
      message: 'Validation failed. Please set data for nickname on your account.',
    });
    const nick = await signUp('nick-user', { nickname: 'Nicky' });
    expect(await Parse.Cloud.run('nicknamed', {}, { sessionToken: nick.getSessionToken()! })).toBe('Nicky');
  });

  it("a validator's rateLimit limits calls of its function (155 with its text)", async () => {
    expect(await Parse.Cloud.run('limited', {})).toBe('ok');
    expect(await Parse.Cloud.run('limited', {})).toBe('ok');
    expect(await refusal(Parse.Cloud.run('limited', {}))).toEqual({
      code: 155,
      message: 'Too many calls of limited.',
    });
  });

  it('a thrown Parse.Error answers its code and text; anything else 141 without a stack', async () => {
    expect(await refusal(Parse.Cloud.run('parseError', {}))).toEqual({ code: 101, message: 'Nothing here.' });
    expect(await refusal(Parse.Cloud.run('plainError', {}))).toEqual({ code: 141, message: 'It broke.' });
  });

  it("the request has the incumbent's shape", async () => {
    const user = await signUp('shape-user');
    expect(
      await Parse.Cloud.run(
        'whoAmI',
        {},
        { sessionToken: user.getSessionToken()!, installationId: 'inst-1' },
      ),
    ).toEqual({
      username: 'shape-user',
      isUser: true,
      sessionToken: 'string',
      master: false,
      installationId: 'inst-1',
      functionName: 'whoAmI',
      hasLog: true,
    });
    expect(await Parse.Cloud.run('whoAmI', {}, { useMasterKey: true })).toMatchObject({
      username: null,
      master: true,
    });
  });

  it("the service's own module loads beside it: its functions answer too", async () => {
    expect(await Parse.Cloud.run('nativeHello', {})).toBe('from the service module');
  });
});

describe('the SDK inside handlers: the one write pipeline, as the caller unless useMasterKey', () => {
  it('saves and queries as the caller: triggers, ACLs and both modules apply', async () => {
    const ann = await signUp('note-ann');
    const bob = await signUp('note-bob');
    const note = (await Parse.Cloud.run(
      'addNote',
      { text: 'a1' },
      { sessionToken: ann.getSessionToken()! },
    )) as ParseSDK.Object;
    expect(note).toBeInstanceOf(Parse.Object);
    expect(note.get('text')).toBe('a1');
    expect(note.get('length')).toBe(2);
    // The service's module ran first, then the incumbent-style one; the handler's context reached beforeSave.
    expect(note.get('steps')).toEqual(['cloud', 'parseCloud']);
    expect(note.get('contextFrom')).toBe('addNote');
    await Parse.Cloud.run('addNote', { text: 'b1' }, { sessionToken: bob.getSessionToken()! });
    expect(await Parse.Cloud.run('myNotes', {}, { sessionToken: ann.getSessionToken()! })).toEqual(['a1']);
    expect(await Parse.Cloud.run('myNotes', {})).toEqual([]);
    expect(await Parse.Cloud.run('countAllNotes', {})).toBe(2);
    const log = await rows('NoteLog');
    expect(log.map((r) => [r.get('noteId'), r.get('event'), r.get('by')])).toEqual([
      [note.id, 'create', 'note-ann'],
      [expect.any(String), 'create', 'note-bob'],
    ]);
  });

  it('before-save refusals: its Parse.Error code, 141 for an Error, 142 from its validator', async () => {
    const save = (fields: Record<string, unknown>) => new Parse.Object('Note', fields).save();
    expect(await refusal(save({ text: 'forbidden' }))).toEqual({
      code: 119,
      message: 'That text is not allowed.',
    });
    expect(await refusal(save({ text: 'crash' }))).toEqual({ code: 141, message: 'beforeSave crashed.' });
    expect(await refusal(save({ other: 1 }))).toEqual({
      code: 142,
      message: 'Validation failed. Please specify data for text.',
    });
  });

  it('an update keeps the operations the trigger made; delete and find triggers apply', async () => {
    const note: ParseSDK.Object<any> = await new Parse.Object('Note', { text: 'public' }).save();
    note.set('text', 'public!');
    await note.save();
    await note.fetch();
    expect(note.get('edits')).toBe(1);
    expect(note.get('length')).toBe(7);
    await new Parse.Object('Note', { text: 'secret', hidden: true }).save();
    const found = await new Parse.Query('Note').find();
    expect(found.map((n) => [n.get('text'), n.get('seenBy')])).toEqual([['public!', 'nobody']]);
    const pinned = await new Parse.Object('Note', { text: 'pinned', pinned: true }).save();
    expect(await refusal(pinned.destroy())).toEqual({ code: 141, message: 'A pinned note stays.' });
    await note.destroy();
    const log = await rows('NoteLog');
    expect(log.filter((r) => r.get('noteId') === note.id).map((r) => r.get('event'))).toEqual([
      'create',
      'update',
      'delete',
    ]);
  });

  it('Parse.Config and a job', async () => {
    await Parse.Config.save({ greeting: 'hi there' }, {});
    expect(await Parse.Cloud.run('greeting', {})).toBe('hi there');
    const jobId = await Parse.Cloud.startJob('countNotes', {});
    await t.service.jobs.runner.idle();
    const status = await Parse.Cloud.getJobStatus(jobId);
    expect([status.get('status'), status.get('message')]).toEqual(['succeeded', 'counting']);
    const [report] = await rows('JobReport');
    expect(report!.get('count')).toBe(await new Parse.Query('Note').count({ useMasterKey: true }));
  });

  it("Parse.Cloud.httpRequest goes by the service's outgoing-call rules", async () => {
    expect(await Parse.Cloud.run('fetch', { url: `${receiver.url}/data` })).toEqual({
      status: 200,
      data: { answer: 42 },
    });
    expect(receiver.calls.at(-1)!.path).toBe('/data?q=x');
    expect(await refusal(Parse.Cloud.run('fetch', { url: 'ftp://example.com/file' }))).toEqual({
      code: 141,
      message: 'The request to ftp://example.com/file was not sent: url must use https, not ftp.',
    });
  });
});

describe('account and realtime triggers written for the incumbent', () => {
  it('beforeLogin refuses with its code; afterLogin and afterLogout run', async () => {
    await signUp('banned-user', { banned: true });
    await Parse.User.logOut();
    expect(await refusal(Parse.User.logIn('banned-user', 'pw-123456'))).toEqual({
      code: 119,
      message: 'Banned.',
    });
    await signUp('login-user');
    const user = await Parse.User.logIn('login-user', 'pw-123456');
    expect(user.getUsername()).toBe('login-user');
    // No current user on Node: the logout is sent with the session, as the SDK's logOut sends it.
    await Parse.CoreManager.getRESTController().request(
      'POST',
      'logout',
      {},
      {
        sessionToken: user.getSessionToken()!,
      },
    );
    const log = await rows('LoginLog');
    expect(log.map((r) => [r.get('event'), r.get('username') ?? null, r.get('isSession') ?? null])).toEqual([
      ['login', 'login-user', null],
      ['logout', null, true],
    ]);
  });

  it('beforePasswordResetRequest refusing stops the mail; the answer stays {}', async () => {
    await signUp('no-reset', { email: 'no-reset@example.com', noReset: true });
    await signUp('may-reset', { email: 'may-reset@example.com' });
    await Parse.User.requestPasswordReset('no-reset@example.com');
    await Parse.User.requestPasswordReset('may-reset@example.com');
    expect((await waitForMail(t, 'may-reset@example.com')).subject).toBe(`Password reset for ${KEYS.appId}`);
    const resets = (await mailbox(t)).filter((m) => m.subject.startsWith('Password reset'));
    expect(resets.map((m) => m.to)).toEqual(['may-reset@example.com']);
  });

  function liveClient(options: { sessionToken?: string; installationId: string }): any {
    const client = new Parse.LiveQueryClient({
      applicationId: KEYS.appId,
      serverURL: `ws://127.0.0.1:${t.port}/live`,
      javascriptKey: KEYS.javascriptKey,
      ...options,
    } as any);
    clients.push(client);
    client.open();
    return client;
  }

  it("beforeConnect and beforeSubscribe refuse with a thrown Parse.Error's code and text, else 141; they narrow the subscription", async () => {
    const refused = liveClient({ installationId: 'refused-installation' });
    await expect(
      within(refused.subscribe(new Parse.Query('Note')).subscribePromise, 'refused'),
    ).rejects.toMatchObject({ code: 141, message: 'Not this installation.' });
    const forbidden = liveClient({ installationId: 'forbidden-installation' });
    await expect(
      within(forbidden.subscribe(new Parse.Query('Note')).subscribePromise, 'forbidden'),
    ).rejects.toMatchObject({ code: 119, message: 'This installation may not connect.' });
    const anonymous = liveClient({ installationId: 'anonymous-installation' });
    await expect(
      within(anonymous.subscribe(new Parse.Query('Note')).subscribePromise, 'refused'),
    ).rejects.toMatchObject({ code: 119, message: 'Log in to subscribe.' });
    // Another thrown error: 141 with its message, without a stack.
    const closed = anonymous.subscribe(new Parse.Query('Chat').equalTo('room', 'closed'));
    await expect(within(closed.subscribePromise, 'closed room')).rejects.toMatchObject({
      code: 141,
      message: 'The room is closed.',
    });
    const user = await signUp('live-user');
    const client = liveClient({ sessionToken: user.getSessionToken()!, installationId: 'live-installation' });
    const subscription = client.subscribe(new Parse.Query('Note'));
    await within(subscription.subscribePromise, 'subscribed');
    const created = new Promise<any>((resolve) => subscription.on('create', resolve));
    await new Parse.Object('Note', { text: 'not live' }).save();
    const live = await new Parse.Object('Note', { text: 'live' }).save();
    expect((await within(created, 'create')).id).toBe(live.id);
  });

  /** The events a subscription receives, in order: [kind, object]. */
  function record(subscription: any): Array<[string, any]> {
    const seen: Array<[string, any]> = [];
    for (const kind of ['create', 'update', 'enter', 'leave', 'delete']) {
      subscription.on(kind, (object: any) => seen.push([kind, object]));
    }
    return seen;
  }

  async function untilCount(list: unknown[], n: number, what: string): Promise<void> {
    await within(
      (async () => {
        while (list.length < n) await new Promise((r) => setTimeout(r, 10));
      })(),
      what,
    );
  }

  it('afterLiveQueryEvent runs for each subscriber the event passed, with the incumbent request; it may change or withhold the event, never widen it', async () => {
    const ann = await signUp('chat-ann');
    const bob = await signUp('chat-bob');
    const annClient = liveClient({ sessionToken: ann.getSessionToken()!, installationId: 'chat-ann' });
    const annSub = annClient.subscribe(new Parse.Query('Chat'));
    await within(annSub.subscribePromise, 'ann subscribed');
    const masterClient: any = new Parse.LiveQueryClient({
      applicationId: KEYS.appId,
      serverURL: `ws://127.0.0.1:${t.port}/live`,
      javascriptKey: KEYS.javascriptKey,
      masterKey: KEYS.masterKey,
    } as any);
    clients.push(masterClient);
    masterClient.open();
    const masterSub = masterClient.subscribe(new Parse.Query('Chat'));
    await within(masterSub.subscribePromise, 'master subscribed');
    const annSeen = record(annSub);
    const masterSeen = record(masterSub);

    const chat: ParseSDK.Object<any> = await new Parse.Object('Chat', { text: 'hello', secret: 's1' }).save(
      null,
      { useMasterKey: true },
    );
    await untilCount(annSeen, 1, 'ann: create');
    await untilCount(masterSeen, 1, 'master: create');
    const [kind, object] = annSeen[0]!;
    expect([kind, object.id, object.get('text')]).toEqual(['create', chat.id, 'hello']);
    // The service's own module ran first, then the incumbent-style one.
    expect(object.get('steps')).toEqual(['cloud', 'parseCloud']);
    expect(object.get('seen')).toEqual({
      event: 'create',
      isObject: true,
      original: null,
      user: 'chat-ann',
      isUser: true,
      sessionToken: 'string',
      useMasterKey: false,
      master: false,
      installationId: 'chat-ann',
      clients: 'number',
      subscriptions: 'number',
      sawSecret: true,
    });
    // Cloud code saw the protected field; ann's frame does not carry it, the master's does.
    expect(object.has('secret')).toBe(false);
    expect(masterSeen[0]![1].get('secret')).toBe('s1');
    expect(masterSeen[0]![1].get('seen')).toMatchObject({ user: null, useMasterKey: true, master: true });

    chat.set('text', 'hello again');
    await chat.save(null, { useMasterKey: true });
    await untilCount(annSeen, 2, 'ann: update');
    expect([annSeen[1]![0], annSeen[1]![1].get('seen').event, annSeen[1]![1].get('seen').original]).toEqual([
      'update',
      'update',
      'hello',
    ]);

    // request.sendEvent = false: nobody gets it; a throw: that subscriber gets nothing (logged);
    // a row only bob may read: the hook never runs for ann. What cloud code sets on a protected
    // field is stripped as any protected field. Each subscriber's next event is the next one.
    chat.set('text', 'muted');
    await chat.save(null, { useMasterKey: true });
    chat.set('text', 'crash');
    await chat.save(null, { useMasterKey: true });
    const hidden = new Parse.Object('Chat', { text: 'for bob' });
    hidden.setACL(new Parse.ACL(bob));
    await hidden.save(null, { useMasterKey: true });
    chat.set('text', 'reveal');
    await chat.save(null, { useMasterKey: true });
    await chat.destroy({ useMasterKey: true });
    await untilCount(annSeen, 4, 'ann: reveal and delete');
    await untilCount(masterSeen, 5, 'master: the rest');
    const texts = (list: Array<[string, any]>) => list.map(([k, o]) => [k, o.get('text')]);
    expect(texts(annSeen)).toEqual([
      ['create', 'hello'],
      ['update', 'hello again'],
      ['update', 'reveal'],
      ['delete', 'reveal'],
    ]);
    expect(texts(masterSeen)).toEqual([
      ['create', 'hello'],
      ['update', 'hello again'],
      ['create', 'for bob'],
      ['update', 'reveal'],
      ['delete', 'reveal'],
    ]);
    expect(annSeen[2]![1].has('secret')).toBe(false);
    expect(masterSeen[3]![1].get('secret')).toBe('set by cloud code');
    expect(annSeen[3]![1].get('seen')).toMatchObject({ event: 'delete', original: null });

    // The delivery trace says why: `cloud` for each subscriber cloud code withheld the event from.
    const trace = await t.request('GET', '/live/trace/Chat', { as: 'master' });
    const filtered = (trace.json.results as Array<{ filtered: Record<string, number> }>).map(
      (entry) => entry.filtered.cloud,
    );
    expect(filtered).toEqual([0, 0, 2, 2, 0, 0, 0]);
  });
});

describe('request.headers', () => {
  it("are the request's headers with lower-case names; secret headers are [FILTERED]", async () => {
    const user = await signUp('headers-user');
    Parse.CoreManager.set('REQUEST_HEADERS', {
      'X-Sent-By': 'sdk-test',
      'X-Parse-Session-Token': user.getSessionToken()!,
    });
    try {
      const headers = (await Parse.Cloud.run('headers', {})) as Record<string, string>;
      expect(headers['x-sent-by']).toBe('sdk-test');
      expect(headers['x-parse-session-token']).toBe('[FILTERED]');
      expect(JSON.stringify(headers)).not.toContain(user.getSessionToken()!);
      // Triggers get them too: the before-save and after-save of a write.
      const note: ParseSDK.Object<any> = await new Parse.Object('Note', { text: 'with headers' }).save();
      await note.fetch({ useMasterKey: true });
      expect(note.get('sentBy')).toBe('sdk-test');
      const log = await rows('NoteLog');
      expect(log.find((r) => r.get('noteId') === note.id)!.get('sentBy')).toBe('sdk-test');
    } finally {
      Parse.CoreManager.set('REQUEST_HEADERS', {});
    }
    const res = await t.request('POST', '/functions/headers', { as: 'master', body: {} });
    expect(res.status).toBe(200);
    expect(res.json.result['x-parse-master-key'] ?? res.json.result['x-backend-master-key']).toBe(
      '[FILTERED]',
    );
    expect(JSON.stringify(res.json)).not.toContain(KEYS.masterKey);
    expect(Object.keys(res.json.result).every((name) => name === name.toLowerCase())).toBe(true);
  });
});

describe('loading', () => {
  it('an ES module loads too, afresh for each service', async () => {
    const esm = fileURLToPath(new URL('../fixtures/incumbent-cloud-esm.mjs', import.meta.url));
    for (let i = 0; i < 2; i++) {
      const other = await startService({ parseCloud: esm });
      try {
        const res = await other.request('POST', '/functions/esmHello', { as: 'js', body: { name: 'esm' } });
        expect([res.status, res.json]).toEqual([200, { result: { hello: 'esm', count: 0 } }]);
      } finally {
        await other.close();
      }
    }
  });

  it('a missing file stops the start', async () => {
    await expect(startService({ parseCloud: '/no/such/main.js' })).rejects.toThrow(
      'Invalid option "parseCloud": no such file: /no/such/main.js',
    );
  });

  it('a function defined by both modules stops the start, naming the option', async () => {
    const beside = fileURLToPath(new URL('../fixtures/sdk-cloud.ts', import.meta.url));
    const clash = fileURLToPath(new URL('../fixtures/incumbent-cloud-clash.cjs', import.meta.url));
    await expect(startService({ cloud: beside, parseCloud: clash })).rejects.toThrow(
      `Invalid option "parseCloud": ${clash} failed to load: cloud.define: function bar is defined twice.`,
    );
  });
});
