import { fileURLToPath } from 'node:url';
import ParseSDK from 'parse/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { liveTriggerCalls } from '../fixtures/live-sdk-cloud.ts';
import { createClass, PUBLIC_OPERATIONS } from '../helpers/access-world.ts';
import { EVENT_ID_PATTERN, FRAME_TIMEOUT, flush, LiveClient, subscribeMarker } from '../helpers/live.ts';
import { KEYS, startService, type TestService } from '../helpers/service.ts';

/**
 * Realtime with the stock `parse` SDK (v8): its LiveQueryClient and `query.subscribe()`, unchanged,
 * against the real service, then the exact frames the SDK relies on, over a raw socket.
 */

// The package's "./node" entry exports the Parse object; its typings leave out initialize(), which on
// Node also takes the master key.
const Parse = ParseSDK as typeof ParseSDK & {
  initialize(applicationId: string, javaScriptKey: string, masterKey?: string): void;
};

const CLOUD = fileURLToPath(new URL('../fixtures/live-sdk-cloud.ts', import.meta.url));

/** A promise that fails with `what` instead of hanging when the SDK never gets there. */
function within<T>(promise: Promise<T>, what: string, ms = FRAME_TIMEOUT): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out: ${what}`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** The arguments of the next `event` an SDK emitter emits. */
function next(emitter: { on(event: string, listener: (...args: any[]) => void): unknown }, event: string) {
  return new Promise<any[]>((resolve) => emitter.on(event, (...args: any[]) => resolve(args)));
}

const err = (code: number, error: string, requestId?: number | string, reconnect = false) => ({
  op: 'error',
  code,
  error,
  reconnect,
  ...(requestId === undefined ? {} : { requestId }),
});

const hidden = (field: string, className: string) =>
  `This user is not allowed to query ${field} on class ${className}.`;

describe('realtime with the stock Parse JS SDK', () => {
  let t: TestService;
  let sdkInstallationId: string;
  const clients: any[] = [];
  let user: ParseSDK.User;

  beforeAll(async () => {
    t = await startService({ cloud: CLOUD });
    // No master key: the SDK's default realtime client would otherwise connect with master authority.
    Parse.initialize(KEYS.appId, KEYS.javascriptKey);
    Parse.serverURL = t.url;
    Parse.CoreManager.set('REQUEST_ATTEMPT_LIMIT', 1);
    sdkInstallationId = await Parse.CoreManager.getInstallationController().currentInstallationId();
    await createClass(t, 'Room', {
      name: { type: 'String' },
      score: { type: 'Number' },
      level: { type: 'Number' },
    });
    await createClass(t, 'Narrowed', {
      note: { type: 'String' },
      title: { type: 'String' },
      visible: { type: 'Boolean' },
      extra: { type: 'String' },
    });
    await createClass(t, 'Closed', { name: { type: 'String' } });
    await createClass(t, 'ClosedToPublic', { name: { type: 'String' } }, { find: {}, get: {} });
    await createClass(
      t,
      'Sneaky',
      { secret: { type: 'String' } },
      { ...PUBLIC_OPERATIONS, protectedFields: { '*': ['secret'] } },
    );
    user = new Parse.User();
    user.set('username', 'sdk-live-user');
    user.set('password', 'pw-123456');
    await user.signUp();
  });

  afterAll(async () => {
    const defaultClient = await Parse.CoreManager.getLiveQueryController().getDefaultLiveQueryClient();
    for (const client of [defaultClient, ...clients]) await client.close();
    await t?.close();
  });

  /** A LiveQueryClient of the SDK on the service's `/live` path. */
  function liveClient(options: { sessionToken?: string; installationId?: string } = {}): any {
    const client = new Parse.LiveQueryClient({
      applicationId: KEYS.appId,
      serverURL: `ws://127.0.0.1:${t.port}/live`,
      javascriptKey: KEYS.javascriptKey,
      installationId: options.installationId ?? 'sdk-live-installation',
      sessionToken: options.sessionToken,
    } as any);
    clients.push(client);
    client.open();
    return client;
  }

  async function save(className: string, fields: Record<string, unknown>): Promise<ParseSDK.Object> {
    const object = new Parse.Object(className);
    object.set(fields);
    return object.save();
  }

  it('query.subscribe() connects at the URL the SDK derives from serverURL (ws://host:port/api)', async () => {
    const subscription: any = await within(
      new Parse.Query('Room').equalTo('name', 'derived').subscribe(),
      'subscribe through the default client',
    );
    const client: any = await Parse.CoreManager.getLiveQueryController().getDefaultLiveQueryClient();
    expect(client.serverURL).toBe(`ws://127.0.0.1:${t.port}/api`);
    const [response] = await within(next(subscription, 'open'), 'open');
    expect(response).toEqual({ clientId: expect.any(Number), installationId: sdkInstallationId });
    const created = next(subscription, 'create');
    const row = await save('Room', { name: 'derived' });
    const [object, event] = await within(created, 'create');
    expect(object.id).toBe(row.id);
    expect(event).toEqual({ clientId: expect.any(Number), installationId: sdkInstallationId });
  });

  it('every event carries the installationId the connection gave', async () => {
    const client = liveClient({ installationId: 'events-installation' });
    const subscription = client.subscribe(new Parse.Query('Room').equalTo('name', 'events'));
    await within(subscription.subscribePromise, 'subscribed');
    const seen: Array<[string, any]> = [];
    for (const op of ['create', 'update', 'leave', 'enter', 'delete']) {
      subscription.on(op, (...args: any[]) => seen.push([op, args.at(-1)]));
    }
    const row = await save('Room', { name: 'events', score: 1 });
    row.set('score', 2);
    await row.save();
    row.set('name', 'elsewhere');
    await row.save();
    row.set('name', 'events');
    await row.save();
    await row.destroy();
    await within(
      (async () => {
        while (seen.length < 5) await new Promise((r) => setTimeout(r, 20));
      })(),
      'five events',
    );
    const response = { clientId: expect.any(Number), installationId: 'events-installation' };
    expect(seen).toEqual([
      ['create', response],
      ['update', response],
      ['leave', response],
      ['enter', response],
      ['delete', response],
    ]);
  });

  it('watch: a new row that lacks every watched field is not delivered as create', async () => {
    const client = liveClient();
    const query = new Parse.Query('Room').equalTo('name', 'watched');
    query.watch('score');
    const subscription = client.subscribe(query);
    await within(subscription.subscribePromise, 'subscribed');
    const creates: string[] = [];
    subscription.on('create', (object: ParseSDK.Object) => creates.push(object.id!));
    const updated = next(subscription, 'update');
    const lacking = await save('Room', { name: 'watched', level: 1 });
    const holding = await save('Room', { name: 'watched', score: 3 });
    lacking.set('score', 5);
    await lacking.save();
    const [object, original] = await within(updated, 'update of the watched field');
    expect(object.get('score')).toBe(5);
    expect(original.get('score')).toBeUndefined();
    // Events come in the order of the writes: by the update, every create has come.
    expect(creates).toEqual([holding.id]);
  });

  it('a subscribe whose query has a property the protocol does not know answers 1 and the SDK reconnects', async () => {
    const client = liveClient();
    await within(next(client, 'open'), 'open');
    // The SDK never sends such a query itself: its frame is given one property more, once.
    const socket = client.socket;
    const send = socket.send.bind(socket);
    socket.send = (text: string) => {
      const frame = JSON.parse(text);
      if (frame.op === 'subscribe') {
        frame.query.limit = 5;
        socket.send = send;
      }
      send(JSON.stringify(frame));
    };
    const reopened = next(client, 'open');
    const subscription = client.subscribe(new Parse.Query('Room').equalTo('name', 'after-reconnect'));
    await expect(within(subscription.subscribePromise, 'refused')).rejects.toMatchObject({
      code: 1,
      message: 'Additional properties not allowed',
    });
    // reconnect: true, so the SDK connects again and subscribes again, this time as it always does.
    await within(reopened, 'reconnected');
    const [response] = await within(next(subscription, 'open'), 'subscribed again');
    expect(response.clientId).toEqual(expect.any(Number));
    const created = next(subscription, 'create');
    const row = await save('Room', { name: 'after-reconnect' });
    expect((await within(created, 'create after reconnecting'))[0].id).toBe(row.id);
  });

  it('beforeConnect refuses a connection with 141 and its text', async () => {
    const client = liveClient({ installationId: 'refused-installation' });
    const errors: string[] = [];
    client.on('error', (error: string) => errors.push(error));
    const subscription = client.subscribe(new Parse.Query('Room'));
    await expect(within(subscription.subscribePromise, 'refused')).rejects.toMatchObject({
      code: 141,
      message: 'This installation may not connect.',
    });
    expect(errors).toEqual(['This installation may not connect.']);
  });

  it('beforeConnect runs before the session is refused: it sees a token that resolves to no session', async () => {
    const client = liveClient({
      sessionToken: 'not-a-session-token',
      installationId: 'bad-session-installation',
    });
    const subscription = client.subscribe(new Parse.Query('Room'));
    await expect(within(subscription.subscribePromise, 'refused')).rejects.toMatchObject({
      code: 141,
      message: 'not allowed to connect',
    });
    const [call] = liveTriggerCalls().filter((c) => c.installationId === 'bad-session-installation');
    expect(call).toMatchObject({ sessionToken: 'not-a-session-token', master: false });
    expect(call!.user).toBeUndefined();
  });

  it('beforeConnect gets the incumbent request: event, installationId, useMasterKey, clientKey, sessionToken, user, ip', async () => {
    const sessionToken = user.getSessionToken()!;
    const client = liveClient({ sessionToken, installationId: 'shape-installation' });
    await within(client.subscribe(new Parse.Query('Room')).subscribePromise, 'subscribed');
    const calls = liveTriggerCalls().filter(
      (c) => c.triggerName === 'beforeConnect' && c.installationId === 'shape-installation',
    );
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({
      triggerName: 'beforeConnect',
      event: 'connect',
      installationId: 'shape-installation',
      useMasterKey: false,
      master: false,
      clientKey: KEYS.javascriptKey,
      sessionToken,
      ip: '127.0.0.1',
      user: { className: '_User', objectId: user.id, username: 'sdk-live-user' },
    });
    expect(calls[0]!.user).not.toHaveProperty('password');
  });

  it('beforeSubscribe narrows where and keys, as the incumbent lets query.equalTo and query.select', async () => {
    const sessionToken = user.getSessionToken()!;
    const client = liveClient({ sessionToken, installationId: 'narrowed-installation' });
    const subscription = client.subscribe(new Parse.Query('Narrowed').equalTo('note', 'n'), sessionToken);
    await within(subscription.subscribePromise, 'subscribed');
    const created = next(subscription, 'create');
    await save('Narrowed', { note: 'n', visible: false, title: 'not shown' });
    const shown = await save('Narrowed', { note: 'n', visible: true, title: 'shown', extra: 'x' });
    const [object] = await within(created, 'create');
    expect(object.id).toBe(shown.id);
    expect(object.get('title')).toBe('shown');
    expect(object.get('visible')).toBe(true);
    expect(object.get('extra')).toBeUndefined();
    expect(object.get('note')).toBeUndefined();
    const calls = liveTriggerCalls().filter(
      (c) => c.triggerName === 'beforeSubscribe' && c.installationId === 'narrowed-installation',
    );
    expect(calls).toEqual([
      expect.objectContaining({
        op: 'subscribe',
        requestId: 1,
        query: { className: 'Narrowed', where: { note: 'n' } },
        sessionToken,
        master: false,
        ip: '127.0.0.1',
        user: expect.objectContaining({ objectId: user.id, username: 'sdk-live-user' }),
      }),
    ]);
  });

  it('beforeSubscribe refuses a subscription with 141 and its text', async () => {
    const client = liveClient();
    const subscription = client.subscribe(new Parse.Query('Closed'));
    await expect(within(subscription.subscribePromise, 'refused')).rejects.toMatchObject({
      code: 141,
      message: 'Closed takes no subscriptions.',
    });
  });

  describe('the frames, over a raw socket', () => {
    it('the endpoint answers at the mount path, at liveQuery.path and at the root, on the normal form of the path', async () => {
      const paths = ['/api', '/api/', '//api', '/%61pi', '/api?x=1', '/live', '/live/', '//live', '/', '//'];
      for (const path of paths) {
        const c = await LiveClient.open(t, path);
        c.send({ op: 'connect', applicationId: KEYS.appId, javascriptKey: KEYS.javascriptKey });
        expect(await c.take(), path).toEqual({ op: 'connected', clientId: expect.any(Number) });
        c.close();
      }
      for (const path of ['/api/live', '/apix', '/ap', '/api/%2F', '/%zz']) {
        await expect(LiveClient.open(t, path), path).rejects.toThrow('Unexpected server response: 404');
      }
    });

    it('connected, subscribed, unsubscribed and every event frame carry the installationId of the connect frame', async () => {
      const c = await LiveClient.open(t);
      c.send({
        op: 'connect',
        applicationId: KEYS.appId,
        javascriptKey: KEYS.javascriptKey,
        installationId: 'frames-installation',
      });
      const installationId = 'frames-installation';
      const clientId = expect.any(Number);
      expect(await c.take()).toEqual({ op: 'connected', clientId, installationId });
      expect(await c.subscribe(1, { className: 'Room', where: { name: 'raw' } })).toEqual({
        op: 'subscribed',
        clientId,
        installationId,
        requestId: 1,
        eventId: expect.stringMatching(EVENT_ID_PATTERN),
      });
      const created = await t.request('POST', '/classes/Room', { body: { name: 'raw' } });
      const id = created.json.objectId;
      const object = (fields: Record<string, unknown>) => ({
        className: 'Room',
        objectId: id,
        name: 'raw',
        createdAt: created.json.createdAt,
        updatedAt: expect.any(String),
        ...fields,
      });
      const event = (op: string, fields: Record<string, unknown>) => ({
        op,
        clientId,
        installationId,
        requestId: 1,
        eventId: expect.any(String),
        ...fields,
      });
      expect(await c.take()).toEqual(event('create', { object: object({}) }));
      await t.request('PUT', `/classes/Room/${id}`, { body: { score: 1 } });
      expect(await c.take()).toEqual(event('update', { object: object({ score: 1 }), original: object({}) }));
      await t.request('DELETE', `/classes/Room/${id}`);
      expect(await c.take()).toEqual(event('delete', { object: object({ score: 1 }) }));
      c.send({ op: 'unsubscribe', requestId: 1 });
      expect(await c.take()).toEqual({ op: 'unsubscribed', clientId, installationId, requestId: 1 });
      c.close();
    });

    it('a connection without an installationId gets frames without one', async () => {
      const c = await LiveClient.open(t);
      c.send({ op: 'connect', applicationId: KEYS.appId, javascriptKey: KEYS.javascriptKey });
      expect(await c.take()).toEqual({ op: 'connected', clientId: expect.any(Number) });
      expect(await c.subscribe(1, { className: 'Room', where: { name: 'no-installation' } })).toEqual({
        op: 'subscribed',
        clientId: expect.any(Number),
        requestId: 1,
        eventId: expect.stringMatching(EVENT_ID_PATTERN),
      });
      await t.request('POST', '/classes/Room', { body: { name: 'no-installation' } });
      expect(await c.take()).not.toHaveProperty('installationId');
      c.close();
    });

    it('watch: a create is delivered only when the new row holds a watched field (0 counts, absent does not)', async () => {
      const c = await LiveClient.connect(t);
      await subscribeMarker(c);
      expect(
        (await c.subscribe(1, { className: 'Room', where: { name: 'w' }, watch: ['score', 'level'] })).op,
      ).toBe('subscribed');
      const make = async (body: Record<string, unknown>) =>
        (await t.request('POST', '/classes/Room', { body: { name: 'w', ...body } })).json.objectId as string;
      await make({});
      const withZero = await make({ level: 0 });
      const withScore = await make({ score: 1 });
      const [frames] = await flush(t, c);
      expect(frames.map((f) => `${f.op}:${f.object.objectId}`)).toEqual([
        `create:${withZero}`,
        `create:${withScore}`,
      ]);
      c.close();
    });

    it('a query with a property the protocol does not know answers 1, "Additional properties not allowed", reconnect true', async () => {
      const c = await LiveClient.connect(t);
      const refused = err(1, 'Additional properties not allowed', 1, true);
      expect(await c.subscribe(1, { className: 'Room', where: {}, limit: 5 })).toEqual(refused);
      expect(await c.subscribe(1, { className: 'Room', where: {}, order: 'name' })).toEqual(refused);
      // Nothing was kept: the requestId is free, and the known properties are accepted.
      expect(
        (await c.subscribe(1, { className: 'Room', where: {}, keys: ['name'], watch: ['name'], include: [] }))
          .op,
      ).toBe('subscribed');
      // An update with one is refused the same way and leaves the subscription as it was.
      c.send({ op: 'update', requestId: 1, query: { className: 'Room', where: {}, skip: 1 } });
      expect(await c.take()).toEqual(refused);
      // A master key in the query is still the permission refusal it always was.
      expect(await c.subscribe(2, { className: 'Room', masterKey: KEYS.masterKey })).toEqual(
        err(
          119,
          'A master key is accepted only in the connect frame; a subscription cannot ask for master authority.',
          2,
        ),
      );
      c.close();
    });

    it('beforeConnect: runs after the keys are checked; a refusal answers 141 with its text and closes', async () => {
      const wrong = await LiveClient.open(t);
      wrong.send({
        op: 'connect',
        applicationId: KEYS.appId,
        javascriptKey: 'not-the-key',
        installationId: 'wrong-key-installation',
      });
      expect(await wrong.take()).toEqual(err(119, 'unauthorized'));
      expect(liveTriggerCalls().some((c) => c.installationId === 'wrong-key-installation')).toBe(false);

      const refused = await LiveClient.open(t);
      refused.send({
        op: 'connect',
        applicationId: KEYS.appId,
        javascriptKey: KEYS.javascriptKey,
        installationId: 'refused-installation',
      });
      expect(await refused.take()).toEqual(err(141, 'This installation may not connect.'));
      expect((await refused.waitClosed()).code).toBe(1008);
    });

    it('beforeConnect with a session token that resolves to no session: it runs without a user, then the session is refused (209)', async () => {
      const c = await LiveClient.open(t);
      c.send({
        op: 'connect',
        applicationId: KEYS.appId,
        javascriptKey: KEYS.javascriptKey,
        sessionToken: 'r:0000000000000000000000000000dead',
        installationId: 'bogus-token-installation',
      });
      expect(await c.take()).toEqual(err(209, 'Invalid session token'));
      const calls = liveTriggerCalls().filter((call) => call.installationId === 'bogus-token-installation');
      expect(calls).toEqual([
        expect.objectContaining({ sessionToken: 'r:0000000000000000000000000000dead', user: undefined }),
      ]);
    });

    it('beforeSubscribe with a session token that resolves to no session: it runs without a user, then 209', async () => {
      const c = await LiveClient.connect(t, { installationId: 'bogus-subscribe-installation' });
      const bogus = { sessionToken: 'r:0000000000000000000000000000dead' };
      // Its refusal answers first, as for every check.
      expect(await c.subscribe(1, { className: 'Closed', where: {} }, bogus)).toEqual(
        err(141, 'Closed takes no subscriptions.', 1),
      );
      expect(await c.subscribe(2, { className: 'Narrowed', where: {} }, bogus)).toEqual(
        err(209, 'Invalid session token', 2),
      );
      expect(await c.subscribe(3, { className: 'Room', where: {} }, bogus)).toEqual(
        err(209, 'Invalid session token', 3),
      );
      const calls = liveTriggerCalls().filter(
        (call) =>
          call.triggerName === 'beforeSubscribe' && call.installationId === 'bogus-subscribe-installation',
      );
      expect(calls.map((call) => [call.query?.className, call.user, call.sessionToken])).toEqual([
        ['Closed', undefined, bogus.sessionToken],
        ['Narrowed', undefined, bogus.sessionToken],
      ]);
      c.close();
    });

    it('beforeSubscribe: a refusal answers 141 before the class permissions are asked; its answer is secured as the caller’s own', async () => {
      const c = await LiveClient.connect(t, { installationId: 'raw-subscribe-installation' });
      expect(await c.subscribe(1, { className: 'Closed', where: {} })).toEqual(
        err(141, 'Closed takes no subscriptions.', 1),
      );
      // The class permissions refuse the public (119), but the trigger has answered first.
      expect(await c.subscribe(2, { className: 'ClosedToPublic', where: {} })).toEqual(
        err(141, 'ClosedToPublic takes no subscriptions.', 2),
      );
      // A where it answers on a field hidden from the caller is refused as the caller's own would be.
      expect(await c.subscribe(3, { className: 'Sneaky', where: {} })).toEqual(
        err(4, hidden('secret', 'Sneaky'), 3),
      );
      // An update runs it again, as an update.
      expect((await c.subscribe(4, { className: 'Narrowed', where: {} })).op).toBe('subscribed');
      c.send({ op: 'update', requestId: 4, query: { className: 'Narrowed', where: { note: 'u' } } });
      expect((await c.take()).op).toBe('subscribed');
      const calls = liveTriggerCalls().filter(
        (call) =>
          call.triggerName === 'beforeSubscribe' && call.installationId === 'raw-subscribe-installation',
      );
      expect(calls.map((call) => [call.op, call.requestId, call.query])).toEqual([
        ['subscribe', 1, { className: 'Closed', where: {} }],
        ['subscribe', 4, { className: 'Narrowed', where: {} }],
        ['update', 4, { className: 'Narrowed', where: { note: 'u' } }],
      ]);
      c.close();
    });
  });
});
