import { createRequire } from 'node:module';
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createClass,
  createRow,
  createUser,
  PUBLIC_OPERATIONS,
  type TestUser,
} from './helpers/access-world.ts';
import { CLOUD_MODULE } from './helpers/cloud.ts';
import { type RequestOptions, startService, type TestService } from './helpers/service.ts';

/**
 * GET /openapi.json (docs/protocol.md#openapi): a valid OpenAPI 3.1 document, per caller as the
 * class-level permissions decide, whose every operation of a seeded class answers as documented.
 * Answers are checked against the document's own schemas with the validator's ajv (JSON Schema
 * 2020-12, the dialect of OpenAPI 3.1).
 */

type Doc = Record<string, any>;

// The validator's own ajv and formats (its dependencies), not another copy.
const requireFromValidator = createRequire(import.meta.resolve('@seriousme/openapi-schema-validator'));
const Ajv2020 = requireFromValidator('ajv/dist/2020.js').default;
const addFormats = requireFromValidator('ajv-formats').default;

/** A compiled validator of one schema of the document, by a JSON pointer into it. */
function schemaChecker(doc: Doc) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(doc, 'openapi.json');
  return (pointer: string) => {
    const check = ajv.compile({ $ref: `openapi.json#${pointer}` });
    return (value: unknown) => (check(value) ? [] : check.errors);
  };
}

const escapePointer = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

let t: TestService;
let writer: TestUser;
let reader: TestUser;
const docs: Record<string, Doc> = {};

const POST_FIELDS = {
  title: { type: 'String' },
  score: { type: 'Number' },
  done: { type: 'Boolean' },
  when: { type: 'Date' },
  place: { type: 'GeoPoint' },
  meta: { type: 'Object' },
  tags: { type: 'Array' },
  author: { type: 'Pointer', targetClass: '_User' },
  secret: { type: 'String' },
};

async function docFor(options: RequestOptions): Promise<Doc> {
  const res = await t.request('GET', '/openapi.json', options);
  expect(res.status).toBe(200);
  return res.json;
}

/** `METHOD path` of every operation of a document, in order. */
function operations(doc: Doc): string[] {
  return Object.entries(doc.paths as Record<string, Doc>).flatMap(([path, item]) =>
    ['get', 'post', 'put', 'delete'].filter((m) => item[m]).map((m) => `${m.toUpperCase()} ${path}`),
  );
}
const withoutFunctions = (ops: string[]) => ops.filter((op) => !op.includes(' /functions/'));

beforeAll(async () => {
  t = await startService({ cloud: CLOUD_MODULE });
  writer = await createUser(t, 'writer');
  reader = await createUser(t, 'reader');
  await createClass(t, 'Post', POST_FIELDS, { ...PUBLIC_OPERATIONS, protectedFields: { '*': ['secret'] } });
  // Anyone reads, changes and deletes; only the writer creates.
  await createClass(
    t,
    'Draft',
    { body: { type: 'String' } },
    { ...PUBLIC_OPERATIONS, create: { [writer.id]: true } },
  );
  const signedIn = { requiresAuthentication: true };
  await createClass(
    t,
    'Members',
    { note: { type: 'String' } },
    Object.fromEntries(
      ['find', 'get', 'count', 'create', 'update', 'delete', 'addField'].map((op) => [op, signedIn]),
    ),
  );
  await createClass(t, 'Vault', { gold: { type: 'Number' } }, {});
  await createRow(t, 'Post', {
    title: 'first',
    score: 1,
    secret: 's3cret',
    author: { __type: 'Pointer', className: '_User', objectId: writer.id },
  });
  docs.master = await docFor({ as: 'master' });
  docs.anonymous = await docFor({});
  docs.writer = await docFor({ sessionToken: writer.token });
  docs.reader = await docFor({ sessionToken: reader.token, as: 'js' });
});
afterAll(async () => {
  await t?.close();
});

describe('GET /openapi.json', () => {
  it('lists the cloud functions whose rules the caller passes, and no other', async () => {
    const functions = (doc: Doc) =>
      operations(doc)
        .filter((op) => op.startsWith('POST /functions/'))
        .map((op) => op.slice('POST /functions/'.length));
    expect(functions(docs.master!)).toContain('mastersOnly');
    expect(functions(docs.master!)).toContain('admins');
    expect(functions(docs.master!)).toContain('strict');
    // Signed in, without the Admin role: the user-only function, neither the role's nor the master's.
    expect(functions(docs.writer!)).toContain('strict');
    expect(functions(docs.writer!)).not.toContain('admins');
    expect(functions(docs.writer!)).not.toContain('mastersOnly');
    // Anonymous: none of the three is named.
    for (const name of ['strict', 'admins', 'mastersOnly'])
      expect(functions(docs.anonymous!)).not.toContain(name);
    expect(functions(docs.anonymous!)).toContain('hello');
  });

  it('is a valid OpenAPI 3.1 document for every caller', async () => {
    for (const [who, doc] of Object.entries(docs)) {
      const validator = new Validator();
      const res = await validator.validate(doc);
      expect({ who, ...res }).toEqual({ who, valid: true });
      expect(validator.version).toBe('3.1');
      expect(doc.openapi).toBe('3.1.0');
      // The public address: option serverURL, else localhost with the port and mount path.
      expect(doc.servers).toEqual([{ url: t.url.replace('127.0.0.1', 'localhost') }]);
    }
  });

  it('names the credential headers as security schemes and the errors as {code, error}', () => {
    const { components } = docs.anonymous!;
    expect(components.securitySchemes).toEqual({
      ApplicationId: { type: 'apiKey', in: 'header', name: 'X-Backend-Application-Id' },
      RestApiKey: { type: 'apiKey', in: 'header', name: 'X-Backend-REST-API-Key' },
      JavaScriptKey: { type: 'apiKey', in: 'header', name: 'X-Backend-JavaScript-Key' },
      ClientKey: { type: 'apiKey', in: 'header', name: 'X-Backend-Client-Key' },
      SessionToken: { type: 'apiKey', in: 'header', name: 'X-Backend-Session-Token' },
      MasterKey: { type: 'apiKey', in: 'header', name: 'X-Backend-Master-Key' },
    });
    expect(components.schemas.Error.required).toEqual(['code', 'error']);
    expect(components.schemas.Error.properties.code.enum).toContain(119);
    expect(components.schemas.Error.properties.code.enum).toContain(209);
    expect(Object.keys(components.schemas.Where.properties)).toEqual(['$or', '$and', '$nor', '$relatedTo']);
    expect(components.schemas.Constraint.propertyNames.enum).toContain('$regex');
  });

  it('gives the master key every class the schema API lists, with all its operations', () => {
    const ops = withoutFunctions(operations(docs.master!));
    expect(ops).toEqual([
      'GET /users',
      'POST /users',
      'GET /users/{objectId}',
      'PUT /users/{objectId}',
      'DELETE /users/{objectId}',
      'GET /roles',
      'POST /roles',
      'GET /roles/{objectId}',
      'PUT /roles/{objectId}',
      'DELETE /roles/{objectId}',
      'GET /sessions',
      'POST /sessions',
      'GET /sessions/{objectId}',
      'PUT /sessions/{objectId}',
      'DELETE /sessions/{objectId}',
      'GET /installations',
      'POST /installations',
      'GET /installations/{objectId}',
      'PUT /installations/{objectId}',
      'DELETE /installations/{objectId}',
      'GET /classes/Draft',
      'POST /classes/Draft',
      'GET /classes/Draft/{objectId}',
      'PUT /classes/Draft/{objectId}',
      'DELETE /classes/Draft/{objectId}',
      'GET /classes/Members',
      'POST /classes/Members',
      'GET /classes/Members/{objectId}',
      'PUT /classes/Members/{objectId}',
      'DELETE /classes/Members/{objectId}',
      'GET /classes/Post',
      'POST /classes/Post',
      'GET /classes/Post/{objectId}',
      'PUT /classes/Post/{objectId}',
      'DELETE /classes/Post/{objectId}',
      'GET /classes/Vault',
      'POST /classes/Vault',
      'GET /classes/Vault/{objectId}',
      'PUT /classes/Vault/{objectId}',
      'DELETE /classes/Vault/{objectId}',
      'POST /login',
      'POST /requestPasswordReset',
      'POST /batch',
    ]);
    expect(operations(docs.master!)).toContain('POST /functions/hello');
    expect(Object.keys(docs.master!.components.schemas.PostRow.properties)).toEqual([
      'objectId',
      'createdAt',
      'updatedAt',
      'ACL',
      ...Object.keys(POST_FIELDS),
    ]);
  });

  it('gives an anonymous caller with keys only the public classes and what it may do on them', () => {
    expect(withoutFunctions(operations(docs.anonymous!))).toEqual([
      'GET /users',
      'POST /users',
      'GET /users/{objectId}',
      'GET /roles',
      'GET /roles/{objectId}',
      'POST /installations',
      'GET /installations/{objectId}',
      'PUT /installations/{objectId}',
      'GET /classes/Draft',
      'GET /classes/Draft/{objectId}',
      'PUT /classes/Draft/{objectId}',
      'DELETE /classes/Draft/{objectId}',
      'GET /classes/Post',
      'POST /classes/Post',
      'GET /classes/Post/{objectId}',
      'PUT /classes/Post/{objectId}',
      'DELETE /classes/Post/{objectId}',
      'POST /login',
      'POST /requestPasswordReset',
      'POST /batch',
    ]);
    const text = JSON.stringify(docs.anonymous);
    for (const name of ['Members', 'Vault', '_Session']) expect(text).not.toContain(name);
    // The protected field is left out of the answers' schemas (and so may not be in an answer).
    const row = docs.anonymous!.components.schemas.PostRow;
    expect(Object.keys(row.properties)).not.toContain('secret');
    expect(row.additionalProperties).toBe(false);
    expect(Object.keys(docs.anonymous!.components.schemas._UserRow.properties)).toEqual([
      'objectId',
      'createdAt',
      'updatedAt',
      'ACL',
      'username',
      'emailVerified',
    ]);
  });

  it('gives a user without the create permission of a class no POST for it; the granted user has it', () => {
    const reader = operations(docs.reader!);
    const writer = operations(docs.writer!);
    expect(reader.filter((op) => op.includes('/classes/Draft'))).toEqual([
      'GET /classes/Draft',
      'GET /classes/Draft/{objectId}',
      'PUT /classes/Draft/{objectId}',
      'DELETE /classes/Draft/{objectId}',
    ]);
    expect(writer.filter((op) => op.includes('/classes/Draft'))).toEqual([
      'GET /classes/Draft',
      'POST /classes/Draft',
      'GET /classes/Draft/{objectId}',
      'PUT /classes/Draft/{objectId}',
      'DELETE /classes/Draft/{objectId}',
    ]);
    // Signed in: the class that requires authentication, the own account and the session routes.
    expect(
      withoutFunctions(reader).filter(
        (op) => !op.includes('/classes/Draft') && !op.includes('/classes/Post'),
      ),
    ).toEqual([
      'GET /users',
      'POST /users',
      'GET /users/{objectId}',
      'PUT /users/{objectId}',
      'DELETE /users/{objectId}',
      'GET /roles',
      'GET /roles/{objectId}',
      'GET /sessions',
      'GET /sessions/{objectId}',
      'DELETE /sessions/{objectId}',
      'POST /installations',
      'GET /installations/{objectId}',
      'PUT /installations/{objectId}',
      'GET /classes/Members',
      'POST /classes/Members',
      'GET /classes/Members/{objectId}',
      'PUT /classes/Members/{objectId}',
      'DELETE /classes/Members/{objectId}',
      'POST /login',
      'POST /requestPasswordReset',
      'GET /users/me',
      'GET /sessions/me',
      'POST /logout',
      'POST /batch',
    ]);
    expect(JSON.stringify(docs.reader)).not.toContain('Vault');
  });

  it('answers every operation of a seeded class as documented (status and the response schema)', async () => {
    for (const [who, options] of [
      ['master', { as: 'master' }],
      ['anonymous', {}],
    ] as const) {
      const doc = docs[who]!;
      const check = schemaChecker(doc);
      const seeded = await createRow(t, 'Post', { title: 'text', secret: 'hidden', score: 2 });
      let created: string | undefined;
      const order = ['get', 'post', 'put', 'delete'];
      const ops = Object.entries(doc.paths as Record<string, Doc>)
        .filter(([path]) => path.startsWith('/classes/Post'))
        .flatMap(([path, item]) =>
          order.filter((m) => item[m]).map((m) => ({ path, method: m, op: item[m] })),
        )
        // Created before it is changed and deleted.
        .sort((a, b) => Number(a.path.includes('{')) - Number(b.path.includes('{')));
      expect(ops.map((o) => `${o.method} ${o.path}`)).toEqual([
        'get /classes/Post',
        'post /classes/Post',
        'get /classes/Post/{objectId}',
        'put /classes/Post/{objectId}',
        'delete /classes/Post/{objectId}',
      ]);
      for (const { path, method, op } of ops) {
        const query: Record<string, unknown> = {};
        for (const p of op.parameters ?? []) {
          const example = p.content?.['application/json'].example;
          if (example !== undefined) query[p.name] = example;
        }
        const body = op.requestBody?.content['application/json'].example;
        const id = method === 'delete' ? created! : seeded;
        const res = await t.request(method.toUpperCase(), path.replace('{objectId}', id), {
          ...options,
          query,
          body,
        });
        const documented = Object.keys(op.responses).filter((s) => s !== 'default');
        expect({ who, method, path, status: String(res.status) }).toEqual({
          who,
          method,
          path,
          status: documented[0],
        });
        const pointer = `/paths/${escapePointer(path)}/${method}/responses/${res.status}/content/application~1json/schema`;
        expect({ who, method, path, errors: check(pointer)(res.json) }).toEqual({
          who,
          method,
          path,
          errors: [],
        });
        if (method === 'post') created = res.json.objectId;
        if (method === 'get' && !path.includes('{')) expect(res.json.results.length).toBeGreaterThan(0);
      }
      // The find's example where matches the rows the example create made.
      expect(
        docs.master!.paths['/classes/Post'].get.parameters[0].content['application/json'].example,
      ).toEqual({
        title: 'text',
      });
    }
  });

  it("answers a signed-in user's own routes as documented", async () => {
    const check = schemaChecker(docs.reader!);
    for (const path of ['/users/me', '/sessions/me', '/classes/Members']) {
      const res = await t.request('GET', path, { sessionToken: reader.token });
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
      const pointer = `/paths/${escapePointer(path)}/get/responses/200/content/application~1json/schema`;
      expect({ path, errors: check(pointer)(res.json) }).toEqual({ path, errors: [] });
    }
    expect(docs.reader!.paths['/users/me'].get.security).toEqual([{ ApplicationId: [], SessionToken: [] }]);
  });

  it("checks answers with the caller's schema: a row with a field hidden from anonymous does not fit it", async () => {
    const id = await createRow(t, 'Post', { title: 't', secret: 'x' });
    const asMaster = (await t.request('GET', `/classes/Post/${id}`, { as: 'master' })).json;
    expect(asMaster.secret).toBe('x');
    const pointer = `/components/schemas/PostRow`;
    expect(schemaChecker(docs.master!)(pointer)(asMaster)).toEqual([]);
    expect(schemaChecker(docs.anonymous!)(pointer)(asMaster)).toEqual([
      expect.objectContaining({ keyword: 'additionalProperties', params: { additionalProperty: 'secret' } }),
    ]);
  });

  it('answers an error of the documented shape for a refused operation', async () => {
    const res = await t.request('POST', '/classes/Draft', {
      sessionToken: reader.token,
      body: { body: 'x' },
    });
    expect(res.status).toBe(400);
    expect(res.json).toEqual({ code: 119, error: 'Permission denied for action create on class Draft.' });
    expect(schemaChecker(docs.reader!)('/components/schemas/Error')(res.json)).toEqual([]);
  });

  it('needs the application keys like any route', async () => {
    const res = await t.request('GET', '/openapi.json', { as: 'none' });
    expect(res.status).toBe(403);
    expect(res.json).toEqual({ code: 119, error: 'unauthorized' });
  });
});
