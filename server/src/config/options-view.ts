import { createHash, createPublicKey, type JsonWebKey } from 'node:crypto';
import type { AuthProviderRow, OptionRow, ServerOptionsView } from '@bds/client/protocol';
import { FILTERED, isObject } from '@bds/client/protocol';
import { z } from 'zod';
import { type SecretKind, secretOptions } from './option-values.ts';
import { optionsSchema, type ServiceOptions } from './options.ts';

/**
 * The service's effective options as the master key may read them (GET /serverInfo/options, the
 * console's Server page): every option of the schema with its description and value, except what
 * grants authority. What is hidden is decided here only, from the marks of `secretOptions` in
 * options.ts: `hidden` options answer only that they are set, `url` ones lose their password and
 * secret parameters, `publicKeys` ones answer each key's id and digest. A value whose type this
 * walk cannot look into is hidden too.
 */

/** The groups the console lists options under, in its order. */
const GROUPS = [
  ['service', 'Service'],
  ['keys', 'Keys'],
  ['storage', 'Storage'],
  ['accounts', 'Accounts'],
  ['email', 'Email'],
  ['access', 'Data access'],
  ['limits', 'Limits'],
  ['files', 'Files'],
  ['realtime', 'Realtime'],
  ['cloud', 'Cloud code and webhooks'],
  ['jobs', 'Jobs'],
  ['push', 'Push'],
  ['analytics', 'Analytics'],
] as const;

export type OptionGroup = (typeof GROUPS)[number][0];

/** Each option's group; over every option, so a new option does not compile until it has one. */
const OPTION_GROUPS: Record<keyof ServiceOptions, OptionGroup> = {
  appId: 'service',
  serverURL: 'service',
  mountPath: 'service',
  port: 'service',
  host: 'service',
  trustProxy: 'service',
  dataDir: 'service',
  logLevel: 'service',
  requestLogSize: 'service',
  shutdownGraceMs: 'service',
  masterKey: 'keys',
  restAPIKey: 'keys',
  javascriptKey: 'keys',
  clientKey: 'keys',
  webhookKey: 'keys',
  databaseURI: 'storage',
  databasePoolSize: 'storage',
  sqliteSynchronous: 'storage',
  sqliteMmapMB: 'storage',
  rowCacheMB: 'storage',
  autoIndex: 'storage',
  history: 'storage',
  redisURL: 'storage',
  redis: 'storage',
  verifyUserEmails: 'accounts',
  preventLoginWithUnverifiedEmail: 'accounts',
  revokeSessionOnPasswordReset: 'accounts',
  auth: 'accounts',
  sessionLength: 'accounts',
  passwordHashCost: 'accounts',
  emailVerifyTokenValidity: 'accounts',
  passwordResetTokenValidity: 'accounts',
  accountLockout: 'accounts',
  email: 'email',
  allowClientClassCreation: 'access',
  allowCustomObjectId: 'access',
  protectedFieldsOwnerExempt: 'access',
  protectedFieldsSaveResponseExempt: 'access',
  rateLimit: 'limits',
  maxLimit: 'limits',
  requestComplexity: 'limits',
  idempotency: 'limits',
  aggregate: 'limits',
  files: 'files',
  fileUpload: 'files',
  maxUploadSize: 'files',
  liveQuery: 'realtime',
  cloud: 'cloud',
  parseCloud: 'cloud',
  hooks: 'cloud',
  jobs: 'jobs',
  push: 'push',
  analytics: 'analytics',
};

export type { AuthProviderRow, OptionRow } from '@bds/client/protocol';

export type OptionsView = ServerOptionsView<OptionGroup>;

/** What `shown` answers for a value that must not be answered. */
const HIDDEN: unique symbol = Symbol('hidden');
type Shown = unknown | typeof HIDDEN;

type Schema = z.core.$ZodType;

/** The schema a wrapper (default, optional, a pipe, ...) wraps, or undefined for any other. */
function wrapped(schema: Schema): Schema | undefined {
  const def = schema._zod.def as unknown as Record<string, unknown> & { type: string };
  switch (def.type) {
    case 'default':
    case 'prefault':
    case 'optional':
    case 'nonoptional':
    case 'nullable':
    case 'readonly':
    case 'catch':
      return def.innerType as Schema;
    case 'pipe':
      return def.in as Schema;
    case 'lazy':
      return (def.getter as () => Schema)();
    default:
      return undefined;
  }
}

/** The schema and every schema it wraps, outermost first. */
function layers(schema: Schema): Schema[] {
  const out = [schema];
  for (let inner = wrapped(schema); inner; inner = wrapped(inner)) out.push(inner);
  return out;
}

const secretKindOf = (schema: Schema): SecretKind | undefined =>
  layers(schema)
    .map((layer) => secretOptions.get(layer)?.secret)
    .find((kind) => kind !== undefined);

const descriptionOf = (schema: Schema): string =>
  layers(schema)
    .map((layer) => z.globalRegistry.get(layer)?.description)
    .find((d) => d !== undefined) ?? '';

const core = (schema: Schema): Schema => layers(schema).at(-1)!;

/** Whether a secret mark sits anywhere in `schema` (a union holding one is hidden whole). */
function holdsSecret(schema: Schema, seen = new Set<Schema>()): boolean {
  if (seen.has(schema)) return false;
  seen.add(schema);
  if (secretKindOf(schema) !== undefined) return true;
  const inner = core(schema);
  const def = inner._zod.def as unknown as Record<string, unknown> & { type: string };
  const children: Schema[] = [];
  if (def.type === 'object') children.push(...Object.values(def.shape as Record<string, Schema>));
  if (def.type === 'record') children.push(def.keyType as Schema, def.valueType as Schema);
  if (def.type === 'array') children.push(def.element as Schema);
  if (def.type === 'union') children.push(...(def.options as Schema[]));
  if (def.type === 'intersection') children.push(def.left as Schema, def.right as Schema);
  if (def.type === 'tuple') children.push(...(def.items as Schema[]));
  if (def.type === 'pipe') children.push(def.in as Schema, def.out as Schema);
  return children.some((child) => holdsSecret(child, seen));
}

/** Types whose values are shown as they are (nothing inside them can be marked). */
const PLAIN = new Set(['string', 'number', 'boolean', 'enum', 'literal', 'bigint', 'date', 'null']);

/** URL parameters whose values are hidden (a PostgreSQL URI's `password`, `sslpassword`, ...). */
const SECRET_PARAMETER = /pass|secret|key|token|auth|cred/i;

/** An address without its password and secret parameters; hidden when it does not parse. */
function urlWithoutSecrets(text: unknown): Shown {
  if (typeof text !== 'string') return HIDDEN;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return HIDDEN;
  }
  const password = url.password;
  const secretParameters = [...url.searchParams.keys()].filter((name) => SECRET_PARAMETER.test(name));
  if (!password && secretParameters.length === 0) return text;
  url.password = '';
  for (const name of secretParameters) url.searchParams.set(name, FILTERED);
  const shown = url.toString().replaceAll(encodeURIComponent(FILTERED), FILTERED);
  // A password spelled again elsewhere in the address (its path, another parameter): all of it hidden.
  if (password && (shown.includes(password) || shown.includes(decodeURIComponent(password)))) return HIDDEN;
  return shown;
}

/** The members of a JWK that name it, never key material. */
const JWK_NAMES = ['kid', 'kty', 'alg', 'use', 'crv'] as const;

/** A public key as its names and the SHA-256 of its SubjectPublicKeyInfo (never the text given). */
function keyDigest(key: unknown): unknown {
  try {
    const pub =
      typeof key === 'string'
        ? createPublicKey(key)
        : createPublicKey({ key: key as JsonWebKey, format: 'jwk' });
    const names: Record<string, string> = {};
    if (isObject(key))
      for (const name of JWK_NAMES) if (typeof key[name] === 'string') names[name] = key[name];
    const der = pub.export({ type: 'spki', format: 'der' });
    return {
      ...names,
      type: pub.asymmetricKeyType,
      sha256: createHash('sha256').update(der).digest('base64url'),
    };
  } catch {
    return FILTERED;
  }
}

/** Keys given as `{keys: [...]}` (a JWKS) or a list (PEM texts), each as its digest. */
function keyDigests(value: unknown): Shown {
  if (Array.isArray(value)) return value.map(keyDigest);
  if (isObject(value) && Array.isArray(value.keys)) return { keys: value.keys.map(keyDigest) };
  return HIDDEN;
}

/** `value` of `schema` as the options view answers it, or HIDDEN. */
function shown(schema: Schema, value: unknown): Shown {
  const kind = secretKindOf(schema);
  if (kind === 'hidden') return HIDDEN;
  if (kind === 'url') return urlWithoutSecrets(value);
  if (kind === 'publicKeys') return keyDigests(value);
  const inner = core(schema);
  const def = inner._zod.def as unknown as Record<string, unknown> & { type: string };
  const part = (child: Schema, v: unknown) => {
    const s = shown(child, v);
    return s === HIDDEN ? FILTERED : s;
  };
  if (PLAIN.has(def.type)) return value;
  if (def.type === 'object' && isObject(value)) {
    const shape = def.shape as Record<string, Schema>;
    const out: Record<string, unknown> = {};
    // Only the schema's own fields: anything else in the value is not an option and not shown.
    for (const [name, field] of Object.entries(shape))
      if (value[name] !== undefined) out[name] = part(field, value[name]);
    return out;
  }
  if (def.type === 'record' && isObject(value)) {
    const out: Record<string, unknown> = {};
    for (const [name, v] of Object.entries(value)) out[name] = part(def.valueType as Schema, v);
    return out;
  }
  if (def.type === 'array' && Array.isArray(value)) return value.map((v) => part(def.element as Schema, v));
  if (def.type === 'union') return holdsSecret(inner) ? HIDDEN : value;
  // Anything else (unknown, any, a type added later) cannot be looked into: not shown.
  return HIDDEN;
}

/** The rows of one option: itself, then the fields of an object option. */
function rowsOf(name: string, schema: Schema, value: unknown, out: OptionRow[]): void {
  const description = descriptionOf(schema);
  if (value === undefined) {
    out.push({ name, description, set: false });
    return;
  }
  const view = shown(schema, value);
  if (view === HIDDEN) {
    out.push({ name, description, set: true, hidden: true });
    return;
  }
  const inner = core(schema);
  if (inner._zod.def.type === 'object' && isObject(value)) {
    out.push({ name, description, set: true, object: true });
    const shape = (inner as z.ZodObject).shape as Record<string, Schema>;
    for (const [field, fieldSchema] of Object.entries(shape))
      rowsOf(`${name}.${field}`, fieldSchema, value[field], out);
    return;
  }
  out.push({ name, description, set: true, value: view });
}

/** The sign-in providers: the built-in anonymous one, the option `auth`'s, and the cloud module's. */
function authProvidersOf(options: ServiceOptions, cloudProviders: readonly string[]): AuthProviderRow[] {
  return [
    {
      name: 'anonymous',
      kind: 'anonymous',
      description: 'Built in: a client-made id signs up and logs in an anonymous user.',
    },
    ...Object.keys(options.auth)
      .sort()
      .map((name) => ({
        name,
        kind: 'idToken' as const,
        description: 'OpenID Connect ID tokens, checked offline against the keys of the option auth.',
      })),
    ...[...cloudProviders].sort().map((name) => ({
      name,
      kind: 'cloud' as const,
      description: 'An adapter the cloud code module registers (cloud.authProvider).',
    })),
  ];
}

/** The effective options without their secrets, grouped, and the sign-in providers. */
export function describeOptions(
  options: ServiceOptions,
  cloudProviders: readonly string[] = [],
): OptionsView {
  const shape = optionsSchema.shape as Record<keyof ServiceOptions, Schema>;
  const groups = GROUPS.map(([name, title]) => ({ name, title, options: [] as OptionRow[] }));
  const byName = new Map(groups.map((g) => [g.name, g]));
  for (const [name, schema] of Object.entries(shape) as Array<[keyof ServiceOptions, Schema]>) {
    rowsOf(name, schema, options[name], byName.get(OPTION_GROUPS[name])!.options);
  }
  return { groups, authProviders: authProvidersOf(options, cloudProviders) };
}
