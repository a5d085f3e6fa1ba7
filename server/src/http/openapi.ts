import { HEADERS } from '@bds/client/protocol';
import { type ClassOperation, decideClass } from '../access/class.ts';
import { protectedView } from '../access/protected.ts';
import type { Caller } from '../kernel/caller.ts';
import { type ClassSchema, DEFAULT_FIELDS, type FieldDef } from '../kernel/schema.ts';
import { byClassName } from '../schema/registry.ts';
import {
  exampleOf,
  type Json,
  readSchema,
  ref,
  VALUE_SCHEMAS,
  WHERE_SCHEMAS,
  writeSchema,
} from './openapi-schemas.ts';

/**
 * `GET /openapi.json` (docs/protocol.md#openapi): the REST API of this app as OpenAPI 3.1, as the
 * caller may use it. Which operations a class keeps is asked of the service's own deciders
 * (access/class.ts `decideClass`, the one the data layer enforces with), and which fields its
 * answers leave out of access/protected.ts `protectedView`: a class the caller may not reach at all
 * is not named; a field hidden from the caller is not in the answers' schemas.
 */

/** What the document is built from: nothing is looked up here. */
export interface OpenApiFacts {
  caller: Caller;
  /** The classes the schema API lists (master-only classes only while they hold rows). */
  schemas: readonly ClassSchema[];
  /** Cloud functions the caller may call by name (`POST /functions/<name>`). */
  functions: readonly string[];
  /** The REST address (`serverURL`, else the local one). */
  serverUrl: string;
  version: string;
}

/** The short routes of the built-in classes (docs/protocol.md#records); others are `/classes/<Class>`. */
const BUILT_IN_PATHS: Record<string, string> = {
  _User: '/users',
  _Role: '/roles',
  _Session: '/sessions',
  _Installation: '/installations',
};

/** A class's row schema in components (`<Class>Row`: no value schema's name ends in Row). */
export const rowName = (className: string): string => `${className}Row`;

export const classPath = (className: string): string => BUILT_IN_PATHS[className] ?? `/classes/${className}`;

/** Fields the service assigns: never written in a body. */
const ASSIGNED = new Set(['objectId', 'createdAt', 'updatedAt']);
/** Fields of built-in classes no answer holds, or only the master key's and the row's own user's. */
const NEVER_ANSWERED: Record<string, readonly string[]> = { _User: ['password'] };

interface ClassDoc {
  schema: ClassSchema;
  path: string;
  may: (op: ClassOperation) => boolean;
  /** Fields left out of answers to this caller. */
  hidden: ReadonlySet<string>;
  /** Whether an answer may hold fields the row schema does not list. */
  open: boolean;
}

const idParam = {
  name: 'objectId',
  in: 'path',
  required: true,
  schema: { type: 'string' },
  description: 'The row id.',
};
const jsonParam = (name: string, schema: Json, description: string, example?: unknown) => ({
  name,
  in: 'query',
  required: false,
  description,
  content: json(schema, example),
});
const queryParam = (name: string, schema: Json, description: string) => ({
  name,
  in: 'query',
  required: false,
  description,
  schema,
});

const json = (schema: Json, example?: unknown) => ({
  'application/json': { schema, ...(example !== undefined ? { example } : {}) },
});
const ok = (description: string, schema: Json) => ({ description, content: json(schema) });
const ERRORS = { default: { $ref: '#/components/responses/Error' } };

function fieldsOf(schema: ClassSchema): Array<[string, FieldDef]> {
  return Object.entries({ ...DEFAULT_FIELDS, ...schema.fields });
}

function rowSchema(c: ClassDoc): Json {
  const properties: Json = {};
  for (const [name, def] of fieldsOf(c.schema)) {
    if (c.hidden.has(name)) continue;
    properties[name] =
      name === 'createdAt' || name === 'updatedAt'
        ? { type: 'string', format: 'date-time' }
        : name === 'objectId'
          ? { type: 'string' }
          : name === 'ACL'
            ? ref('ACL')
            : readSchema(def);
  }
  return { type: 'object', properties, additionalProperties: c.open };
}

function bodySchema(c: ClassDoc, addField: boolean): { schema: Json; example: Json } {
  const properties: Json = {};
  const example: Json = {};
  const required: string[] = [];
  for (const [name, def] of fieldsOf(c.schema)) {
    if (ASSIGNED.has(name)) continue;
    properties[name] = name === 'ACL' ? ref('ACL') : writeSchema(def);
    if (def.required && def.defaultValue === undefined) required.push(name);
    const value = name === 'ACL' ? undefined : name === 'password' ? 'a-password' : exampleOf(def);
    if (value !== undefined && !(c.schema.className === '_User' && name === 'authData'))
      example[name] = value;
  }
  if (c.schema.className === '_User') {
    example.username = 'a-username';
    delete example.email;
    delete example.emailVerified;
  }
  return {
    schema: {
      type: 'object',
      properties,
      ...(required.length ? { required } : {}),
      additionalProperties: addField,
      ...(addField ? { description: 'Fields not in the schema are added to it (addField).' } : {}),
    },
    example,
  };
}

function classOperations(c: ClassDoc, caller: Caller): Record<string, Json> {
  const { className } = c.schema;
  const tag = [className];
  const paths: Record<string, Json> = {};
  const list: Json = {};
  const one: Json = {};
  const row = ref(rowName(className));
  const fieldNames = fieldsOf(c.schema)
    .map(([n]) => n)
    .filter((n) => !c.hidden.has(n));
  const firstText = fieldsOf(c.schema).find(
    ([n, d]) => d.type === 'String' && !c.hidden.has(n) && !ASSIGNED.has(n),
  );
  const readParams = [
    queryParam(
      'keys',
      { type: 'string' },
      `Fields to answer, separated by commas (${fieldNames.join(', ')}).`,
    ),
    queryParam('excludeKeys', { type: 'string' }, 'Fields to leave out, separated by commas.'),
    queryParam(
      'include',
      { type: 'string' },
      'Pointer fields to replace by their rows (dot paths; * every pointer).',
    ),
  ];
  if (c.may('find')) {
    const count = c.may('count');
    list.get = {
      operationId: `find${className}`,
      summary: `Find ${className} rows`,
      tags: tag,
      parameters: [
        jsonParam(
          'where',
          ref('Where'),
          'A JSON object of constraints (the where language).',
          firstText ? { [firstText[0]]: 'text' } : undefined,
        ),
        queryParam('order', { type: 'string' }, 'Fields separated by commas, - for descending (-createdAt).'),
        queryParam('limit', { type: 'integer', minimum: 0 }, 'Rows to answer: 100 by default.'),
        queryParam('skip', { type: 'integer', minimum: 0 }, 'Rows to leave out first.'),
        ...readParams,
        ...(count
          ? [queryParam('count', { enum: [0, 1] }, '1 adds count, the number of rows the where matches.')]
          : []),
      ],
      responses: {
        '200': ok(`${className} rows`, {
          type: 'object',
          required: ['results'],
          properties: {
            results: { type: 'array', items: row },
            ...(count ? { count: { type: 'integer', minimum: 0 } } : {}),
          },
          additionalProperties: false,
        }),
        ...ERRORS,
      },
    };
  }
  const addField = decideClass({ className, schema: c.schema, op: 'addField', caller }).allowed;
  if (c.may('create')) {
    const body = bodySchema(c, addField);
    const signUp = className === '_User';
    list.post = {
      operationId: `create${className}`,
      summary: signUp ? 'Sign up' : `Create a ${className} row`,
      tags: tag,
      requestBody: {
        required: true,
        content: json(
          signUp ? { ...body.schema, required: ['username', 'password'] } : body.schema,
          body.example,
        ),
      },
      responses: {
        '201': {
          description: 'Created',
          headers: { Location: { description: 'The new row.', schema: { type: 'string' } } },
          content: json({
            type: 'object',
            required: ['objectId', 'createdAt', ...(signUp ? ['sessionToken'] : [])],
            properties: {
              objectId: { type: 'string' },
              createdAt: { type: 'string', format: 'date-time' },
              ...(signUp ? { sessionToken: { type: 'string' } } : {}),
            },
          }),
        },
        ...ERRORS,
      },
    };
  }
  if (c.may('get')) {
    one.get = {
      operationId: `get${className}`,
      summary: `Get a ${className} row`,
      tags: tag,
      parameters: readParams,
      responses: { '200': ok(`The ${className} row`, row), ...ERRORS },
    };
  }
  if (c.may('update')) {
    const body = bodySchema(c, addField);
    one.put = {
      operationId: `update${className}`,
      summary: `Update a ${className} row`,
      tags: tag,
      requestBody: { required: true, content: json(body.schema, body.example) },
      responses: {
        '200': ok('Updated', {
          type: 'object',
          required: ['updatedAt'],
          properties: { updatedAt: { type: 'string', format: 'date-time' } },
        }),
        ...ERRORS,
      },
    };
  }
  if (c.may('delete')) {
    one.delete = {
      operationId: `delete${className}`,
      summary: `Delete a ${className} row`,
      tags: tag,
      responses: { '200': ok('Deleted', { type: 'object', additionalProperties: false }), ...ERRORS },
    };
  }
  if (Object.keys(list).length) paths[c.path] = list;
  if (Object.keys(one).length) paths[`${c.path}/{objectId}`] = { parameters: [idParam], ...one };
  return paths;
}

/** The routes of the account rules that apply to the caller (docs/protocol.md#users-and-sessions). */
function accountOperations(caller: Caller, user: ClassDoc | undefined): Record<string, Json> {
  const paths: Record<string, Json> = {};
  const tags = ['Users and sessions'];
  const userRow = user ? ref(rowName('_User')) : { type: 'object' };
  const session = [{ ApplicationId: [], SessionToken: [] }];
  paths['/login'] = {
    post: {
      operationId: 'logIn',
      summary: 'Log in: the user row with a new sessionToken',
      tags,
      requestBody: {
        required: true,
        content: json(
          {
            type: 'object',
            required: ['password'],
            properties: {
              username: { type: 'string' },
              email: { type: 'string' },
              password: { type: 'string' },
            },
          },
          { username: 'a-username', password: 'a-password' },
        ),
      },
      responses: {
        '200': ok('The user, signed in', {
          allOf: [
            userRow,
            { type: 'object', required: ['sessionToken'], properties: { sessionToken: { type: 'string' } } },
          ],
        }),
        ...ERRORS,
      },
    },
  };
  paths['/requestPasswordReset'] = {
    post: {
      operationId: 'requestPasswordReset',
      summary: 'Mail a password reset link',
      tags,
      requestBody: {
        required: true,
        content: json({ type: 'object', required: ['email'], properties: { email: { type: 'string' } } }),
      },
      responses: { '200': ok('Asked', { type: 'object', additionalProperties: false }), ...ERRORS },
    },
  };
  if (caller.user) {
    paths['/users/me'] = {
      get: {
        operationId: 'me',
        summary: "The caller's own row, with its sessionToken",
        tags,
        security: session,
        responses: { '200': ok('The user', { type: 'object' }), ...ERRORS },
      },
    };
    paths['/sessions/me'] = {
      get: {
        operationId: 'mySession',
        summary: "The caller's own _Session row",
        tags,
        security: session,
        responses: { '200': ok('The session', { type: 'object' }), ...ERRORS },
      },
    };
    paths['/logout'] = {
      post: {
        operationId: 'logOut',
        summary: "Ends the caller's session",
        tags,
        security: session,
        responses: { '200': ok('Logged out', { type: 'object', additionalProperties: false }), ...ERRORS },
      },
    };
  }
  return paths;
}

function functionOperations(names: readonly string[]): Record<string, Json> {
  const paths: Record<string, Json> = {};
  for (const name of names) {
    paths[`/functions/${encodeURIComponent(name)}`] = {
      post: {
        operationId: `function_${name}`,
        summary: `Run the cloud function ${name}`,
        tags: ['Cloud functions'],
        requestBody: { required: false, content: json({ type: 'object', description: 'The params.' }) },
        responses: {
          '200': ok('Its result: {result}, or {} when it returns nothing', {
            type: 'object',
            properties: { result: {} },
            additionalProperties: false,
          }),
          ...ERRORS,
        },
      },
    };
  }
  return paths;
}

const BATCH = {
  post: {
    operationId: 'batch',
    summary: 'Run several requests of the operations above, in order (transaction: true for all or none)',
    tags: ['Batch'],
    requestBody: {
      required: true,
      content: json({
        type: 'object',
        required: ['requests'],
        properties: {
          requests: {
            type: 'array',
            items: {
              type: 'object',
              required: ['method', 'path'],
              properties: {
                method: { enum: ['GET', 'POST', 'PUT', 'DELETE'] },
                path: { type: 'string' },
                body: { type: 'object' },
              },
            },
          },
          transaction: { type: 'boolean' },
        },
      }),
    },
    responses: {
      '200': ok('One answer per request', {
        type: 'array',
        items: {
          oneOf: [
            { type: 'object', required: ['success'], properties: { success: {} } },
            { type: 'object', required: ['error'], properties: { error: ref('Error') } },
          ],
        },
      }),
      ...ERRORS,
    },
  },
};

/** The security schemes: the credential headers of docs/protocol.md#credentials. */
const SECURITY_SCHEMES = {
  ApplicationId: { type: 'apiKey', in: 'header', name: HEADERS.applicationId },
  RestApiKey: { type: 'apiKey', in: 'header', name: HEADERS.restAPIKey },
  JavaScriptKey: { type: 'apiKey', in: 'header', name: HEADERS.javascriptKey },
  ClientKey: { type: 'apiKey', in: 'header', name: HEADERS.clientKey },
  SessionToken: { type: 'apiKey', in: 'header', name: HEADERS.sessionToken },
  MasterKey: { type: 'apiKey', in: 'header', name: HEADERS.masterKey },
};

const BUILT_IN_ORDER = Object.keys(BUILT_IN_PATHS);
/** The built-in classes of the SDKs first, in a fixed order, then the others by name. */
function byListing(a: ClassSchema, b: ClassSchema): number {
  const rank = (s: ClassSchema) => {
    const i = BUILT_IN_ORDER.indexOf(s.className);
    return i < 0 ? BUILT_IN_ORDER.length : i;
  };
  return rank(a) - rank(b) || byClassName(a, b);
}

/** The document for one caller. */
export function openApiDocument(facts: OpenApiFacts): Json {
  const { caller } = facts;
  const classes: ClassDoc[] = [];
  for (const schema of [...facts.schemas].sort(byListing)) {
    const { className } = schema;
    const may = (op: ClassOperation) => decideClass({ className, schema, op, caller }).allowed;
    if (!(['find', 'get', 'create', 'update', 'delete'] as const).some(may)) continue;
    const view = protectedView(schema, caller, { ownerExempt: false });
    const hidden = new Set([...view.unqueryable, ...(NEVER_ANSWERED[className] ?? [])]);
    // A row's own user sees more of a _User row; userField groups hide fields on some rows only.
    const open = className === '_User' || view.fixedHidden === undefined;
    classes.push({ schema, path: classPath(className), may, hidden, open });
  }
  const schemas: Json = { ...VALUE_SCHEMAS, ...WHERE_SCHEMAS };
  let paths: Record<string, Json> = {};
  for (const c of classes) {
    schemas[rowName(c.schema.className)] = rowSchema(c);
    paths = { ...paths, ...classOperations(c, caller) };
  }
  const user = classes.find((c) => c.schema.className === '_User');
  paths = {
    ...paths,
    ...accountOperations(caller, user),
    ...functionOperations(facts.functions),
    '/batch': BATCH,
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'REST API',
      version: facts.version,
      description: caller.isMaster
        ? 'Every class, as the master key reaches it.'
        : `The classes and operations this caller (${caller.user ? 'a signed-in user' : 'anonymous'}) may use, by the class-level permissions.`,
    },
    servers: [{ url: facts.serverUrl }],
    security: [
      { ApplicationId: [], RestApiKey: [] },
      { ApplicationId: [], JavaScriptKey: [] },
      { ApplicationId: [], ClientKey: [] },
      { ApplicationId: [], MasterKey: [] },
      { ApplicationId: [] },
    ],
    tags: [
      ...classes.map((c) => ({ name: c.schema.className })),
      { name: 'Users and sessions' },
      ...(facts.functions.length ? [{ name: 'Cloud functions' }] : []),
      { name: 'Batch' },
    ],
    paths,
    components: {
      schemas,
      responses: { Error: { description: 'An error: {code, error}', content: json(ref('Error')) } },
      securitySchemes: SECURITY_SCHEMES,
    },
  };
}
