import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_ID_PATTERN, flush, LiveClient, subscribeMarker } from './helpers/live.ts';
import { KEYS, startService, type TestService } from './helpers/service.ts';

let t: TestService;

beforeAll(async () => {
  t = await startService({
    liveQuery: { maxSubscriptionsPerConnection: 3, maxFrameBytes: 1024, classNames: ['*'] },
    allowClientClassCreation: true,
  });
});
afterAll(async () => {
  await t?.close();
});

const err = (code: number, error: string, requestId?: number | string) =>
  requestId === undefined
    ? { op: 'error', code, error, reconnect: false }
    : { op: 'error', code, error, reconnect: false, requestId };

describe('realtime frames: connect', () => {
  it('connect with the application id and REST key answers connected with a clientId', async () => {
    const c = await LiveClient.open(t);
    c.send({ op: 'connect', applicationId: KEYS.appId, restAPIKey: KEYS.restAPIKey });
    const frame = await c.take();
    expect(frame).toEqual({ op: 'connected', clientId: expect.any(Number) });
    c.close();
  });

  it('the JavaScript key works as a client key', async () => {
    const c = await LiveClient.open(t);
    c.send({ op: 'connect', applicationId: KEYS.appId, javascriptKey: KEYS.javascriptKey });
    expect((await c.take()).op).toBe('connected');
    c.close();
  });

  it('a wrong application id, a wrong key, a missing key or a wrong master key: 119 and the socket closes', async () => {
    for (const frame of [
      { applicationId: 'other', restAPIKey: KEYS.restAPIKey },
      { applicationId: KEYS.appId, restAPIKey: 'wrong' },
      { applicationId: KEYS.appId },
      { applicationId: KEYS.appId, masterKey: 'wrong-master' },
    ]) {
      const c = await LiveClient.open(t);
      c.send({ op: 'connect', ...frame });
      expect(await c.take()).toEqual(err(119, 'unauthorized'));
      expect((await c.waitClosed()).code).toBe(1008);
    }
  });

  it('an invalid session token at connect: 209', async () => {
    const c = await LiveClient.open(t);
    c.send({ op: 'connect', applicationId: KEYS.appId, restAPIKey: KEYS.restAPIKey, sessionToken: 'r:nope' });
    expect(await c.take()).toEqual(err(209, 'Invalid session token'));
    await c.waitClosed();
  });

  it('a second connect on a connected socket: 1', async () => {
    const c = await LiveClient.connect(t);
    c.send({ op: 'connect', applicationId: KEYS.appId, restAPIKey: KEYS.restAPIKey });
    expect(await c.take()).toEqual(err(1, 'Malformed frame: this connection is already connected.'));
    c.close();
  });

  it('subscribe, update and unsubscribe before connect: 2 (with the requestId)', async () => {
    const c = await LiveClient.open(t);
    c.send({ op: 'subscribe', requestId: 1, query: { className: 'Post', where: {} } });
    expect(await c.take()).toEqual(err(2, 'Not connected: send a connect frame first.', 1));
    c.send({ op: 'unsubscribe', requestId: 1 });
    expect(await c.take()).toEqual(err(2, 'Not connected: send a connect frame first.', 1));
    c.close();
  });
});

describe('realtime frames: malformed and unknown', () => {
  it('not JSON, not an object, no op, binary: 1; an unknown op: 3; the socket stays usable', async () => {
    const c = await LiveClient.connect(t);
    c.send('{not json');
    expect(await c.take()).toEqual(err(1, 'Malformed frame: it is not valid JSON.'));
    c.send('[1,2]');
    expect(await c.take()).toEqual(err(1, 'Malformed frame: it must be a JSON object.'));
    c.send({ requestId: 1 });
    expect(await c.take()).toEqual(err(1, 'Malformed frame: op is missing.'));
    c.ws.send(Buffer.from('{"op":"connect"}'), { binary: true });
    expect(await c.take()).toEqual(err(1, 'Malformed frame: frames are JSON text.'));
    c.send({ op: 'explode', requestId: 4 });
    expect(await c.take()).toEqual(err(3, 'Unknown op: "explode".', 4));
    c.send('{"op":"subscribe","requestId":1,"query":{"className":"Post","where":{"__proto__":{"x":1}}}}');
    expect(await c.take()).toEqual(err(1, 'Malformed frame: it holds a key named __proto__.'));
    c.send({ op: 'subscribe', requestId: -1, query: { className: 'Post' } });
    expect(await c.take()).toEqual(
      err(
        1,
        'Malformed frame: requestId must be a whole number >= 0 or a non-empty string of at most 128 characters.',
      ),
    );
    c.send({ op: 'subscribe', requestId: 1 });
    expect(await c.take()).toEqual(err(1, 'Malformed frame: query must be an object with a className.', 1));
    expect(await c.subscribe(1, { className: 'Post', where: {} })).toEqual({
      op: 'subscribed',
      clientId: expect.any(Number),
      requestId: 1,
      eventId: expect.stringMatching(EVENT_ID_PATTERN),
    });
    c.close();
  });

  it('an oversized frame: 155, and the connection goes on', async () => {
    const c = await LiveClient.connect(t);
    const big = JSON.stringify({
      op: 'subscribe',
      requestId: 1,
      query: { className: 'Post', where: { x: 'y'.repeat(2000) } },
    });
    c.send(big);
    expect(await c.take()).toEqual(
      err(155, `Frame too large: ${big.length} bytes; the limit is 1024 bytes.`),
    );
    expect((await c.subscribe(2, { className: 'Post' })).op).toBe('subscribed');
    c.close();
  });

  it('a frame far over the limit closes the socket (1009), and the service goes on', async () => {
    const c = await LiveClient.connect(t);
    c.send('x'.repeat(1024 * 17));
    expect((await c.waitClosed()).code).toBe(1009);
    const d = await LiveClient.connect(t);
    d.close();
  });

  it('a reused requestId: 1; an unknown requestId on update and unsubscribe: 2', async () => {
    const c = await LiveClient.connect(t);
    expect((await c.subscribe(7, { className: 'Post' })).op).toBe('subscribed');
    expect(await c.subscribe(7, { className: 'Post' })).toEqual(
      err(1, 'Malformed frame: requestId 7 is already in use on this connection.', 7),
    );
    c.send({ op: 'update', requestId: 8, query: { className: 'Post' } });
    expect(await c.take()).toEqual(err(2, 'Unknown requestId 8.', 8));
    c.send({ op: 'unsubscribe', requestId: 'nine' });
    expect(await c.take()).toEqual(err(2, 'Unknown requestId "nine".', 'nine'));
    c.close();
  });

  it('too many subscriptions on a connection: 155; an unsubscribe frees a place', async () => {
    const c = await LiveClient.connect(t);
    for (const id of [1, 2, 3]) expect((await c.subscribe(id, { className: 'Post' })).op).toBe('subscribed');
    expect(await c.subscribe(4, { className: 'Post' })).toEqual(
      err(155, 'Too many subscriptions: at most 3 per connection.', 4),
    );
    c.send({ op: 'unsubscribe', requestId: 2 });
    expect(await c.take()).toEqual({ op: 'unsubscribed', clientId: expect.any(Number), requestId: 2 });
    expect((await c.subscribe(4, { className: 'Post' })).op).toBe('subscribed');
    c.close();
  });

  it('an invalid where or keys: 4', async () => {
    const c = await LiveClient.connect(t);
    expect(await c.subscribe(1, { className: 'Post', where: { $bogus: 1 } })).toEqual(
      err(4, 'Invalid where: unknown top-level operator $bogus.', 1),
    );
    expect(await c.subscribe(2, { className: 'Post', where: [] })).toEqual(
      err(4, 'Invalid where: it must be a JSON object.', 2),
    );
    const keys = await c.subscribe(3, { className: 'Post', keys: ['ok', '$bad'] });
    expect(keys).toMatchObject({ op: 'error', code: 4, requestId: 3, reconnect: false });
    expect(keys.error).toMatch(/^Invalid keys: "\$bad": /);
    const deep = 'a.b.c.d.e.f.g.h.i.j.k';
    expect(await c.subscribe(5, { className: 'Post' }, { include: [deep] })).toEqual(
      err(4, `Invalid include: "${deep}" nests deeper than 10 levels.`, 5),
    );
    const watch = await c.subscribe(4, { className: 'Post', watch: 'title' });
    expect(watch).toEqual(err(4, 'Invalid watch: it must be a list of at most 100 field names.', 4));
    c.close();
  });

  it('a master key sent with a subscribe is refused (119); the subscription does not exist', async () => {
    const c = await LiveClient.connect(t);
    expect(await c.subscribe(1, { className: 'Post' }, { masterKey: KEYS.masterKey })).toEqual(
      err(
        119,
        'A master key is accepted only in the connect frame; a subscription cannot ask for master authority.',
        1,
      ),
    );
    c.send({ op: 'unsubscribe', requestId: 1 });
    expect(await c.take()).toEqual(err(2, 'Unknown requestId 1.', 1));
    c.close();
  });

  it('a class name that is not valid, or _Session without the master key: 119', async () => {
    const c = await LiveClient.connect(t);
    expect(await c.subscribe(1, { className: 'no-such!' })).toEqual(
      err(119, 'Class no-such! is not open to realtime subscriptions.', 1),
    );
    expect(await c.subscribe(2, { className: '_Session' })).toEqual(
      err(119, 'Permission denied for action find on class _Session.', 2),
    );
    c.close();
  });
});

describe('realtime frames: events', () => {
  it('create, update, delete, enter and leave, with object, original and increasing eventIds', async () => {
    const c = await LiveClient.connect(t);
    await subscribeMarker(c);
    expect(await c.subscribe(1, { className: 'Item', where: { n: { $gte: 10 } } })).toEqual({
      op: 'subscribed',
      clientId: expect.any(Number),
      requestId: 1,
      eventId: expect.stringMatching(EVENT_ID_PATTERN),
    });
    const created = await t.request('POST', '/classes/Item', { body: { n: 10, label: 'a' } });
    const id = created.json.objectId;
    const create = await c.take();
    expect(create).toEqual({
      op: 'create',
      clientId: expect.any(Number),
      requestId: 1,
      eventId: expect.any(String),
      object: {
        className: 'Item',
        objectId: id,
        n: 10,
        label: 'a',
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      },
    });
    await t.request('PUT', `/classes/Item/${id}`, { body: { label: 'b' } });
    const update = await c.take();
    expect(update).toMatchObject({
      op: 'update',
      requestId: 1,
      object: { objectId: id, label: 'b', n: 10 },
      original: { objectId: id, label: 'a', n: 10 },
    });
    await t.request('PUT', `/classes/Item/${id}`, { body: { n: 5 } });
    const leave = await c.take();
    expect(leave).toMatchObject({ op: 'leave', object: { objectId: id, n: 5 }, original: { n: 10 } });
    await t.request('PUT', `/classes/Item/${id}`, { body: { label: 'c' } });
    await t.request('PUT', `/classes/Item/${id}`, { body: { n: 20 } });
    const enter = await c.take();
    expect(enter).toMatchObject({
      op: 'enter',
      object: { objectId: id, n: 20, label: 'c' },
      original: { n: 5 },
    });
    await t.request('DELETE', `/classes/Item/${id}`);
    const del = await c.take();
    expect(del).toMatchObject({ op: 'delete', requestId: 1, object: { objectId: id, n: 20 } });
    expect(del.original).toBeUndefined();
    const ids = [create, update, leave, enter, del].map((f) => f.eventId);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(5);
    const [rest] = await flush(t, c);
    expect(rest).toEqual([]);
    c.close();
  });

  it('keys narrow object and original; watch delivers updates only when a watched field changes', async () => {
    const c = await LiveClient.connect(t);
    await subscribeMarker(c);
    await c.subscribe(1, { className: 'Watched', keys: ['a'], watch: ['a'] });
    const { json } = await t.request('POST', '/classes/Watched', { body: { a: 1, b: 1 } });
    expect((await c.take()).object).toEqual({
      className: 'Watched',
      objectId: json.objectId,
      a: 1,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    await t.request('PUT', `/classes/Watched/${json.objectId}`, { body: { b: 2 } });
    await t.request('PUT', `/classes/Watched/${json.objectId}`, { body: { a: 2 } });
    const frame = await c.take();
    expect(frame).toMatchObject({ op: 'update', object: { a: 2 }, original: { a: 1 } });
    expect(frame.object.b).toBeUndefined();
    c.close();
  });

  it('update replaces the query of a subscription; unsubscribe stops its events', async () => {
    const c = await LiveClient.connect(t);
    await subscribeMarker(c);
    await c.subscribe(1, { className: 'Swap', where: { k: 'a' } });
    c.send({ op: 'update', requestId: 1, query: { className: 'Swap', where: { k: 'b' } } });
    expect(await c.take()).toEqual({
      op: 'subscribed',
      clientId: expect.any(Number),
      requestId: 1,
      eventId: expect.stringMatching(EVENT_ID_PATTERN),
    });
    await t.request('POST', '/classes/Swap', { body: { k: 'a' } });
    const b = await t.request('POST', '/classes/Swap', { body: { k: 'b' } });
    expect(await c.take()).toMatchObject({
      op: 'create',
      requestId: 1,
      object: { objectId: b.json.objectId },
    });
    c.send({ op: 'unsubscribe', requestId: 1 });
    expect(await c.take()).toEqual({ op: 'unsubscribed', clientId: expect.any(Number), requestId: 1 });
    await t.request('POST', '/classes/Swap', { body: { k: 'b' } });
    const [rest] = await flush(t, c);
    expect(rest).toEqual([]);
    c.close();
  });

  it('each subscriber gets its own copy of the object', async () => {
    const a = await LiveClient.connect(t);
    const b = await LiveClient.connect(t);
    await a.subscribe(1, { className: 'Shared' });
    await a.subscribe(2, { className: 'Shared' });
    await b.subscribe(1, { className: 'Shared', keys: ['x'] });
    await t.request('POST', '/classes/Shared', { body: { x: { deep: [1] }, y: 2 } });
    const [fa1, fa2, fb] = [await a.take(), await a.take(), await b.take()];
    expect(fa1.object).toMatchObject({ x: { deep: [1] }, y: 2 });
    expect(fa2.object).toMatchObject({ x: { deep: [1] }, y: 2 });
    expect(fb.object.y).toBeUndefined();
    a.close();
    b.close();
  });
});

describe('liveQuery options', () => {
  it('defaults, and a bad option is refused naming it', async () => {
    const { validateOptions } = await import('../src/config/options.ts');
    const base = { appId: 'a', masterKey: 'master-key-0123456789', dataDir: t.dataDir };
    expect(validateOptions(base).liveQuery).toEqual({
      path: '/live',
      classNames: ['*'],
      maxSubscriptionsPerConnection: 100,
      maxFrameBytes: 65536,
      retentionMs: 300000,
      retentionMaxEvents: 10000,
      pingIntervalMs: 30000,
      idleTimeoutMs: 600000,
      traceSize: 100,
    });
    expect(() => validateOptions({ ...base, liveQuery: { maxFrameBytes: 1 } })).toThrow(
      /liveQuery\.maxFrameBytes/,
    );
    expect(() => validateOptions({ ...base, liveQuery: { path: 'live' } })).toThrow(/liveQuery\.path/);
    expect(() => validateOptions({ ...base, liveQuery: { bogus: 1 } })).toThrow(/liveQuery/);
  });
});
