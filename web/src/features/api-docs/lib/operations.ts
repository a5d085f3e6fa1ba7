/**
 * The operations of one class in the service's API document (GET /openapi.json,
 * docs/protocol.md#openapi) and their ready-to-run examples: curl, this project's TypeScript
 * client (@bds/client) and the stock Parse JavaScript SDK. Credentials are placeholders
 * ($APPLICATION_ID, $REST_API_KEY): the console never holds a key.
 */

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';
export type Kind = 'find' | 'create' | 'get' | 'update' | 'delete';

/** The parts of an OpenAPI document the tab reads. */
export interface ApiDocument {
  servers?: Array<{ url: string }>;
  paths: Record<string, Record<string, any>>;
  components?: { securitySchemes?: Record<string, { name?: string }> };
}

export interface ClassOperation {
  kind: Kind;
  method: Method;
  /** As documented, `{objectId}` included. */
  path: string;
  summary: string;
  /** The example `where` of a find. */
  where?: Record<string, unknown>;
  /** The example body of a create or update. */
  body?: Record<string, unknown>;
}

const KINDS: Array<[Kind, Method, boolean]> = [
  ['find', 'GET', false],
  ['create', 'POST', false],
  ['get', 'GET', true],
  ['update', 'PUT', true],
  ['delete', 'DELETE', true],
];

/** The class's path in the API: the built-in classes have short routes (docs/protocol.md#records). */
export function classPath(className: string): string {
  const builtIn: Record<string, string> = {
    _User: '/users',
    _Role: '/roles',
    _Session: '/sessions',
    _Installation: '/installations',
  };
  return builtIn[className] ?? `/classes/${className}`;
}

/** The class's operations the document holds, in the order find, create, get, update, delete. */
export function classOperations(doc: ApiDocument, className: string): ClassOperation[] {
  const base = classPath(className);
  const out: ClassOperation[] = [];
  for (const [kind, method, one] of KINDS) {
    const path = one ? `${base}/{objectId}` : base;
    const op = doc.paths[path]?.[method.toLowerCase()];
    if (!op) continue;
    const where = op.parameters?.find((p: { name: string }) => p.name === 'where')?.content?.[
      'application/json'
    ]?.example;
    const body = op.requestBody?.content?.['application/json']?.example;
    out.push({
      kind,
      method,
      path,
      summary: String(op.summary ?? ''),
      ...(where ? { where } : {}),
      ...(body ? { body } : {}),
    });
  }
  return out;
}

export const LANGUAGES = ['curl', 'typescript', 'parse'] as const;
export type Language = (typeof LANGUAGES)[number];
export const LANGUAGE_LABELS: Record<Language, string> = {
  curl: 'curl',
  typescript: 'TypeScript client',
  parse: 'Parse JS SDK',
};

const shellQuote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;
const js = (value: unknown) => JSON.stringify(value);

/** The operation's path with a row id in place of `{objectId}`. */
export const concretePath = (op: ClassOperation, objectId: string) => op.path.replace('{objectId}', objectId);

function curl(doc: ApiDocument, op: ClassOperation, objectId: string): string {
  const server = (doc.servers?.[0]?.url ?? '$SERVER_URL').replace(/\/+$/, '');
  const schemes = doc.components?.securitySchemes ?? {};
  const lines = [`curl -X ${op.method} ${shellQuote(`${server}${concretePath(op, objectId)}`)}`];
  // Double quotes: the shell expands the placeholders.
  lines.push(`-H "${schemes.ApplicationId?.name}: $APPLICATION_ID"`);
  lines.push(`-H "${schemes.RestApiKey?.name}: $REST_API_KEY"`);
  if (op.kind === 'find') {
    lines.push('-G');
    if (op.where) lines.push(`--data-urlencode ${shellQuote(`where=${js(op.where)}`)}`);
    lines.push(`--data-urlencode 'limit=10'`);
  }
  if (op.body) {
    lines.push('-H "Content-Type: application/json"');
    lines.push(`--data-raw ${shellQuote(js(op.body))}`);
  }
  return lines.join(' \\\n  ');
}

function typescript(className: string, op: ClassOperation, objectId: string): string {
  const head = [
    "import { createClient } from '@bds/client';",
    '',
    'const client = createClient({',
    '  serverURL: process.env.SERVER_URL!,',
    '  applicationId: process.env.APPLICATION_ID!,',
    '  restAPIKey: process.env.REST_API_KEY!,',
    '});',
  ];
  const c = js(className);
  const id = js(objectId);
  const call = {
    find: `const res = await client.find(${c}, { where: ${js(op.where ?? {})}, limit: 10 });`,
    create: `const res = await client.create(${c}, ${js(op.body ?? {})});`,
    get: `const res = await client.get(${c}, ${id});`,
    update: `const res = await client.update(${c}, ${id}, ${js(op.body ?? {})});`,
    delete: `const res = await client.destroy(${c}, ${id});`,
  }[op.kind];
  return [
    ...head,
    call,
    'if (res.success) console.log(res.data);',
    'else console.error(res.code, res.error);',
  ].join('\n');
}

function parseSdk(className: string, op: ClassOperation, objectId: string): string {
  const head = [
    "import Parse from 'parse/node';",
    '',
    'Parse.initialize(process.env.APPLICATION_ID!, process.env.JAVASCRIPT_KEY!);',
    'Parse.serverURL = process.env.SERVER_URL!;',
  ];
  const c = js(className);
  const sets = (body: Record<string, unknown> | undefined) =>
    Object.entries(body ?? {}).map(([k, v]) => `row.set(${js(k)}, ${js(v)});`);
  const lines = {
    find: [
      `const query = new Parse.Query(${c});`,
      ...Object.entries(op.where ?? {}).map(([k, v]) => `query.equalTo(${js(k)}, ${js(v)});`),
      'query.limit(10);',
      'const rows = await query.find();',
    ],
    create: [`const row = new Parse.Object(${c});`, ...sets(op.body), 'await row.save();'],
    get: [`const row = await new Parse.Query(${c}).get(${js(objectId)});`],
    update: [
      `const row = Parse.Object.fromJSON({ className: ${c}, objectId: ${js(objectId)} });`,
      ...sets(op.body),
      'await row.save();',
    ],
    delete: [
      `const row = Parse.Object.fromJSON({ className: ${c}, objectId: ${js(objectId)} });`,
      'await row.destroy();',
    ],
  }[op.kind];
  return [...head, ...lines].join('\n');
}

/** The example of an operation in a language, with a row id for the operations on one row. */
export function exampleOf(
  doc: ApiDocument,
  className: string,
  op: ClassOperation,
  language: Language,
  objectId: string,
): string {
  if (language === 'curl') return curl(doc, op, objectId);
  if (language === 'typescript') return typescript(className, op, objectId);
  return parseSdk(className, op, objectId);
}

/**
 * The API console's address for an operation, prefilled (web/src/features/api-console reads these
 * parameters): a find also runs at once; a write waits for Send.
 */
export function tryItSearch(
  op: ClassOperation,
  objectId: string,
  as: 'master' | 'anonymous' | 'user',
): string {
  const search = new URLSearchParams({ method: op.method, path: concretePath(op, objectId), as });
  if (op.kind === 'find') search.set('query', js({ ...(op.where ? { where: op.where } : {}), limit: 10 }));
  if (op.body) search.set('body', js(op.body));
  if (op.method === 'GET' && as !== 'user') search.set('run', '1');
  return `?${search.toString()}`;
}
