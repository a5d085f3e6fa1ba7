import ParseSDK from 'parse/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEYS, startService, type TestService } from '../helpers/service.ts';

/**
 * Schemas with the stock `parse` SDK (v8), unchanged, against the real service (the behaviours its
 * integration suite checks against the incumbent), then the exact answers over REST.
 */

// The package's "./node" entry exports the Parse object; its typings leave out initialize(), which on
// Node also takes the master key.
const Parse = ParseSDK as typeof ParseSDK & {
  initialize(applicationId: string, javaScriptKey: string, masterKey?: string): void;
};

let t: TestService;

beforeAll(async () => {
  t = await startService({ allowClientClassCreation: true });
  Parse.initialize(KEYS.appId, KEYS.javascriptKey, KEYS.masterKey);
  Parse.serverURL = t.url;
  // One attempt: a failure must show up as a failure, not as a slow retry.
  Parse.CoreManager.set('REQUEST_ATTEMPT_LIMIT', 1);
});

afterAll(async () => {
  await t?.close();
});

/** What Schema.save answers: the schema document. */
type SchemaDocument = { fields: Record<string, { required?: boolean; defaultValue?: unknown }> };

const classNames = async () =>
  (await Parse.Schema.all()).map((s: { className: string }) => s.className).sort();

describe('schemas with the stock Parse JS SDK', () => {
  it("Schema.all lists the app's classes and the built-in ones apps use, not the service's own", async () => {
    expect(await classNames()).toEqual(['_Installation', '_Role', '_Session', '_User']);
    await new Parse.Schema('SchemaTest').save();
    expect(await classNames()).toEqual(['SchemaTest', '_Installation', '_Role', '_Session', '_User']);
  });

  it('keeps required and defaultValue, and a create without the field gets the default', async () => {
    const schema = new Parse.Schema('Defaults');
    schema.addField('fieldString', 'String', { required: true, defaultValue: 'Hello World' });
    const saved = (await schema.save()) as unknown as SchemaDocument;
    expect(saved.fields.fieldString).toEqual({ type: 'String', required: true, defaultValue: 'Hello World' });
    const object = new Parse.Object('Defaults');
    await object.save();
    expect(object.get('fieldString')).toBe('Hello World');
  });

  it('keeps a pointer default given as an object or as a pointer', async () => {
    const pointer = new Parse.Object('TestObject');
    await pointer.save();
    const schema = new Parse.Schema('PointerDefaults');
    schema
      .addPointer('pointerField', 'TestObject', { required: true, defaultValue: pointer as never })
      .addPointer('pointerJSONField', 'TestObject', { required: true, defaultValue: pointer.toPointer() });
    const saved = (await schema.save()) as unknown as SchemaDocument;
    expect(saved.fields.pointerField).toEqual(saved.fields.pointerJSONField);
    expect(saved.fields.pointerField.defaultValue).toEqual(pointer.toPointer());
    expect(saved.fields.pointerField.required).toBe(true);
  });

  it('sets the defaults of every type on create', async () => {
    const point = new Parse.GeoPoint(44.0, -11.0);
    const polygon = new Parse.Polygon([
      [0, 0],
      [0, 1],
      [1, 1],
      [1, 0],
    ] as never);
    const schema = new Parse.Schema('SchemaFieldTest');
    schema
      .addField('defaultFieldString', 'String', { required: true, defaultValue: 'hello' })
      .addString('stringField', { required: true, defaultValue: 'world' })
      .addNumber('numberField', { required: true, defaultValue: 10 })
      .addBoolean('booleanField', { required: true, defaultValue: false })
      .addDate('dateField', { required: true, defaultValue: new Date('2000-01-01T00:00:00.000Z') })
      .addDate('dateStringField', { required: true, defaultValue: '2000-01-01T00:00:00.000Z' as never })
      .addGeoPoint('geoPointField', { required: true, defaultValue: point })
      .addPolygon('polygonField', { required: true, defaultValue: polygon })
      .addArray('arrayField', { required: true, defaultValue: [1, 2, 3] })
      .addObject('objectField', { required: true, defaultValue: { foo: 'bar' } });
    const saved = (await schema.save()) as unknown as SchemaDocument;
    const date = { __type: 'Date', iso: '2000-01-01T00:00:00.000Z' };
    expect(saved.fields).toEqual({
      objectId: { type: 'String' },
      updatedAt: { type: 'Date' },
      createdAt: { type: 'Date' },
      defaultFieldString: { type: 'String', required: true, defaultValue: 'hello' },
      stringField: { type: 'String', required: true, defaultValue: 'world' },
      numberField: { type: 'Number', required: true, defaultValue: 10 },
      booleanField: { type: 'Boolean', required: true, defaultValue: false },
      dateField: { type: 'Date', required: true, defaultValue: date },
      dateStringField: { type: 'Date', required: true, defaultValue: date },
      geoPointField: { type: 'GeoPoint', required: true, defaultValue: point.toJSON() },
      polygonField: {
        type: 'Polygon',
        required: true,
        defaultValue: {
          __type: 'Polygon',
          coordinates: [
            [0, 0],
            [0, 1],
            [1, 1],
            [1, 0],
            [0, 0],
          ],
        },
      },
      arrayField: { type: 'Array', required: true, defaultValue: [1, 2, 3] },
      objectField: { type: 'Object', required: true, defaultValue: { foo: 'bar' } },
      ACL: { type: 'ACL' },
    });
    const object = new Parse.Object('SchemaFieldTest');
    await object.save();
    const json = object.toJSON() as Record<string, unknown>;
    delete json.createdAt;
    delete json.updatedAt;
    delete json.objectId;
    expect(json).toEqual({
      defaultFieldString: 'hello',
      stringField: 'world',
      numberField: 10,
      booleanField: false,
      dateField: date,
      dateStringField: date,
      geoPointField: point.toJSON(),
      polygonField: {
        __type: 'Polygon',
        coordinates: [
          [0, 0],
          [0, 1],
          [1, 1],
          [1, 0],
          [0, 0],
        ],
      },
      arrayField: [1, 2, 3],
      objectField: { foo: 'bar' },
    });
  });

  it('a create without a required field that has no default is 142', async () => {
    const schema = new Parse.Schema('Strict');
    schema.addString('title', { required: true });
    await schema.save();
    await expect(new Parse.Object('Strict').save()).rejects.toMatchObject({
      code: Parse.Error.VALIDATION_ERROR,
      message: 'title is required',
    });
  });
});

describe('class-level permissions with the stock Parse JS SDK: what a CLP leaves out is closed', () => {
  const emptyCLPS = {
    find: {},
    count: {},
    get: {},
    create: {},
    update: {},
    delete: {},
    addField: {},
    protectedFields: {},
  };
  const defaultCLPS = {
    find: { '*': true },
    count: { '*': true },
    get: { '*': true },
    create: { '*': true },
    update: { '*': true },
    delete: { '*': true },
    addField: { '*': true },
    protectedFields: { '*': [] },
  };
  type WithClp = { classLevelPermissions: Record<string, unknown> };

  it('setCLP with reads only: the schema answers every operation, and the SDK cannot write', async () => {
    const schema = new Parse.Schema('ReadsOnly');
    schema.addString('title');
    schema.setCLP({ find: { '*': true }, get: { '*': true } });
    const saved = (await schema.save()) as unknown as WithClp;
    const whole = { ...emptyCLPS, find: { '*': true }, get: { '*': true } };
    expect(saved.classLevelPermissions).toEqual(whole);
    expect(((await schema.get()) as unknown as WithClp).classLevelPermissions).toEqual(whole);
    // A row made with the master key is readable; without it nothing can be written or counted.
    const row = new Parse.Object('ReadsOnly');
    await row.save({ title: 'kept' }, { useMasterKey: true });
    const found = await new Parse.Query('ReadsOnly').find();
    expect(found.map((o) => o.get('title'))).toEqual(['kept']);
    const refused = (op: string) => ({
      code: Parse.Error.OPERATION_FORBIDDEN,
      message: `Permission denied for action ${op} on class ReadsOnly.`,
    });
    await expect(new Parse.Object('ReadsOnly').save({ title: 'new' })).rejects.toMatchObject(
      refused('create'),
    );
    await expect(found[0]!.save({ title: 'changed' })).rejects.toMatchObject(refused('update'));
    await expect(found[0]!.destroy()).rejects.toMatchObject(refused('delete'));
    await expect(new Parse.Query('ReadsOnly').count()).rejects.toMatchObject(refused('count'));
  });

  it('save, then update with a CLP, then with an empty one (the SDK suite sequence)', async () => {
    const clp = {
      get: { requiresAuthentication: true },
      find: {},
      count: {},
      create: { '*': true },
      update: { requiresAuthentication: true },
      delete: {},
      addField: {},
      protectedFields: {},
    };
    const schema = new Parse.Schema('ClpSequence');
    let saved = (await schema.save()) as unknown as WithClp;
    expect(saved.classLevelPermissions).toEqual(defaultCLPS);
    schema.setCLP(clp);
    saved = (await schema.update()) as unknown as WithClp;
    expect(saved.classLevelPermissions).toEqual(clp);
    schema.setCLP({});
    saved = (await schema.update()) as unknown as WithClp;
    expect(saved.classLevelPermissions).toEqual(emptyCLPS);
    await expect(new Parse.Object('ClpSequence').save()).rejects.toMatchObject({
      code: Parse.Error.OPERATION_FORBIDDEN,
      message: 'Permission denied for action create on class ClpSequence.',
    });
  });

  it('a CLP of protectedFields only closes every operation', async () => {
    const schema = new Parse.Schema('HiddenOnly');
    schema.addString('secret');
    schema.setCLP({ protectedFields: { '*': ['secret'] } });
    const saved = (await schema.save()) as unknown as WithClp;
    expect(saved.classLevelPermissions).toEqual({ ...emptyCLPS, protectedFields: { '*': ['secret'] } });
    await expect(new Parse.Query('HiddenOnly').find()).rejects.toMatchObject({
      code: Parse.Error.OPERATION_FORBIDDEN,
      message: 'Permission denied for action find on class HiddenOnly.',
    });
  });
});

describe('schemas over REST: exact codes and texts', () => {
  const master = { as: 'master' as const };

  it('internal classes are listed once they hold rows', async () => {
    const listed = async () =>
      ((await t.request('GET', '/schemas', master)).json.results as Array<{ className: string }>).map(
        (s) => s.className,
      );
    expect(await listed()).not.toContain('_Hooks');
    const hook = await t.request('POST', '/hooks/functions', {
      ...master,
      body: { functionName: 'listed', url: 'https://hooks.example.com/listed' },
    });
    expect(hook.status, hook.text).toBe(201);
    expect(await listed()).toContain('_Hooks');
    for (const hidden of ['_Idempotency', '_JobSchedule', '_JobStatus', '_PushStatus']) {
      expect(await listed()).not.toContain(hidden);
    }
    // Each class is still there by name.
    expect((await t.request('GET', '/schemas/_JobStatus', master)).status).toBe(200);
  });

  it('required and defaultValue: kept, enforced on create and update, through batch too', async () => {
    const created = await t.request('POST', '/schemas/Ticket', {
      ...master,
      body: {
        fields: {
          title: { type: 'String', required: true },
          state: { type: 'String', defaultValue: 'open' },
          when: { type: 'Date', defaultValue: '2001-02-03T04:05:06.000Z' },
        },
      },
    });
    expect(created.status, created.text).toBe(200);
    expect(created.json.fields).toMatchObject({
      title: { type: 'String', required: true },
      state: { type: 'String', defaultValue: 'open' },
      when: { type: 'Date', defaultValue: { __type: 'Date', iso: '2001-02-03T04:05:06.000Z' } },
    });
    for (const body of [{}, { title: null }, { title: '' }, { title: { __op: 'Delete' } }]) {
      const res = await t.request('POST', '/classes/Ticket', { ...master, body });
      expect(res.status).toBe(400);
      expect(res.json).toEqual({ code: 142, error: 'title is required' });
    }
    const ok = await t.request('POST', '/classes/Ticket', { as: 'rest', body: { title: 'a' } });
    expect(ok.status, ok.text).toBe(201);
    const row = await t.request('GET', `/classes/Ticket/${ok.json.objectId}`, master);
    expect(row.json).toMatchObject({
      title: 'a',
      state: 'open',
      when: { __type: 'Date', iso: '2001-02-03T04:05:06.000Z' },
    });
    const given = await t.request('POST', '/classes/Ticket', {
      as: 'rest',
      body: { title: 'b', state: 'closed' },
    });
    expect((await t.request('GET', `/classes/Ticket/${given.json.objectId}`, master)).json.state).toBe(
      'closed',
    );
    const cleared = await t.request('PUT', `/classes/Ticket/${ok.json.objectId}`, {
      ...master,
      body: { title: null },
    });
    expect(cleared.status).toBe(400);
    expect(cleared.json).toEqual({ code: 142, error: 'title is required' });
    const batch = await t.request('POST', '/batch', {
      as: 'rest',
      body: {
        requests: [
          { method: 'POST', path: '/classes/Ticket', body: {} },
          { method: 'POST', path: '/classes/Ticket', body: { title: 'c' } },
        ],
      },
    });
    expect(batch.json[0]).toEqual({ error: { code: 142, error: 'title is required' } });
    expect(batch.json[1].success.objectId).toMatch(/^[A-Za-z0-9]{10}$/);

    // PUT /schemas adds a field with the options; GET answers them.
    const put = await t.request('PUT', '/schemas/Ticket', {
      ...master,
      body: { fields: { priority: { type: 'Number', required: true, defaultValue: 3 } } },
    });
    expect(put.status, put.text).toBe(200);
    const got = await t.request('GET', '/schemas/Ticket', master);
    expect(got.json.fields.priority).toEqual({ type: 'Number', required: true, defaultValue: 3 });
  });

  it('a default of another type, and options on a Relation, are 111 in the incumbent words', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [
        { n: { type: 'Number', defaultValue: 'ten' } },
        'schema mismatch for Bad.n default value; expected Number but got String',
      ],
      [
        {
          p: {
            type: 'Pointer',
            targetClass: 'Ticket',
            defaultValue: { __type: 'Pointer', className: 'Other', objectId: 'x' },
          },
        },
        'schema mismatch for Bad.p default value; expected Pointer<Ticket> but got Pointer<Other>',
      ],
      [
        { r: { type: 'Relation', targetClass: 'Ticket', defaultValue: 1 } },
        "The 'default value' option is not applicable for Relation<Ticket>",
      ],
      [
        { r: { type: 'Relation', targetClass: 'Ticket', required: true } },
        "The 'required' option is not applicable for Relation<Ticket>",
      ],
    ];
    for (const [fields, error] of cases) {
      const res = await t.request('POST', '/schemas/Bad', { ...master, body: { fields } });
      expect(res.status, JSON.stringify(fields)).toBe(400);
      expect(res.json).toEqual({ code: 111, error });
    }
    expect((await t.request('GET', '/schemas/Bad', master)).status).toBe(400);
  });
});
