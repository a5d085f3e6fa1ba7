import { FILTERED, isObject, isSecretKey, normalPath, scrub } from '@bds/client/protocol';
import type { ConsoleRole } from './context.ts';

/**
 * What each console role may do: the one place that says it. The foundation's guard, the routes'
 * write flag, the API console, the Security API's evaluate, the realtime inspector and the answer
 * of every route ask here; none keeps its own copy.
 *
 * - `write`: change anything, in the console or on the service (the bff holds the master key, so
 *   whatever a console user may send, the service does).
 * - `readSecrets`: see what grants write authority: session tokens, credentials in `authData`,
 *   password reset and verification links, keys, masterKeyOnly config values. Without it, the API
 *   console refuses the service paths that exist to hand them out, every answer is filtered, and
 *   no query may compare a secret field (a `$regex` on `sessionToken` answered row by row would
 *   spell the token out).
 *
 * Every path rule decides on the normal form of the path (`normalPath`): the service routes
 * `/login/`, `//login` and `/%6Cogin` as `/login`.
 */
export type Capability = 'write' | 'readSecrets';

const ROLE_CAPABILITIES: Record<ConsoleRole, ReadonlySet<Capability>> = {
  admin: new Set<Capability>(['write', 'readSecrets']),
  'read-only': new Set<Capability>(),
};

export function roleMay(role: ConsoleRole, capability: Capability): boolean {
  return ROLE_CAPABILITIES[role]?.has(capability) === true;
}

/** The refusal of a change to a role without `write`. */
export const CHANGE_REFUSAL = 'Read-only console users cannot change anything.';

// ---------------------------------------------------------------------------------------------
// The console's own routes

/**
 * POST routes of the console that change nothing whatever their body, open to roles without
 * `write`: the Security API's questions (explain; evaluate, whose writes are dry runs and which
 * refuses them to roles without `write` itself; impact) and the API console (which applies its
 * own rules below). Matched on the normal form of the path under /bff/.
 */
export const READ_ONLY_POSTS: readonly RegExp[] = [
  /^\/apps\/[^/]+\/security\/(?:explain|evaluate|impact)\/?$/,
  /^\/apps\/[^/]+\/api-console(?:\/curl)?\/?$/,
];

/** Methods that change nothing (the CSRF guard lets them through too). */
export const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Why `role` may not send `method path` to the console (a path under /bff/), or `undefined`. */
export function consoleRequestRefusal(role: ConsoleRole, method: string, path: string): string | undefined {
  if (SAFE_METHODS.has(method) || roleMay(role, 'write')) return undefined;
  const normal = normalPath(path);
  if (method === 'POST' && normal !== undefined && READ_ONLY_POSTS.some((route) => route.test(normal)))
    return undefined;
  return CHANGE_REFUSAL;
}

// ---------------------------------------------------------------------------------------------
// The API console: one REST call sent to the service by the bff

/** The API console's refusal of anything but GET to a role without `write`. */
export const READ_ONLY_REFUSAL = 'Read-only console users may send GET requests only.';

/** A service path a GET may not reach without a capability, and why (the refusal names it). */
interface ServicePathRule {
  pattern: RegExp;
  needs: Capability;
  why: string;
}

/** Matched on the normal form of the service path, first match wins. */
const SERVICE_GET_RULES: readonly ServicePathRule[] = [
  // GETs that change something.
  { pattern: /^\/login$/, needs: 'write', why: 'GET /login signs in and creates a session' },
  {
    // A password oracle, whose failures count toward the user's lockout.
    pattern: /^\/verifyPassword$/,
    needs: 'write',
    why: "GET /verifyPassword checks a user's password",
  },
  {
    pattern: /^\/apps\/[^/]+\/verify_email$/,
    needs: 'write',
    why: 'GET /apps/<id>/verify_email spends a verification token',
  },
  // GETs that exist to hand out secrets, or that can move them past the answer filter.
  {
    pattern: /^\/devMailbox$/,
    needs: 'readSecrets',
    why: 'GET /devMailbox answers password reset and verification links',
  },
  {
    // The class in any position (/classes, /aggregate, /live/trace, /schemas ...) and its alias.
    pattern: /^\/sessions(?:\/|$)|\/_Session(?:\/|$)/,
    needs: 'readSecrets',
    why: 'GET of the _Session class (/sessions, /classes/_Session and the like) answers session tokens',
  },
  {
    // A pipeline's $project or $group can put any field, secrets included, under another name.
    pattern: /^\/aggregate(?:\/|$)/,
    needs: 'readSecrets',
    why: 'GET /aggregate/<C> can copy secret fields under other names',
  },
];

/**
 * Why `role` may not send this API console call, or `undefined`. Checked before the call's shape
 * (so a missing or malformed body is refused as a non-GET). A path without a normal form (a
 * malformed %-escape) is never sent: the call's own check refuses it.
 */
export function apiConsoleRefusal(role: ConsoleRole, method: unknown, path: unknown): string | undefined {
  if (method !== 'GET' && !roleMay(role, 'write')) return READ_ONLY_REFUSAL;
  const normal = typeof path === 'string' ? normalPath(path) : undefined;
  if (normal === undefined) return undefined;
  const rule = SERVICE_GET_RULES.find((r) => r.pattern.test(normal));
  if (rule && !roleMay(role, rule.needs)) return `${rule.why}: read-only console users cannot send it.`;
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Queries: no comparison of a secret field

/** Operators whose `key` member names a field of another class (`$select: {query, key}`). */
const KEY_OPERATORS = new Set(['$select', '$dontSelect', '$relatedTo']);

const secretIn = (fieldPath: string): string | undefined =>
  fieldPath
    .replace(/^-/, '')
    .split('.')
    .find((segment) => isSecretKey(segment));

/** The first secret field a `where` (an object, or its JSON text) names, at any depth. */
function secretFieldOfWhere(where: unknown): string | undefined {
  if (typeof where === 'string') {
    try {
      return secretFieldOfWhere(JSON.parse(where));
    } catch {
      return undefined; // not JSON: the service refuses it unread
    }
  }
  if (Array.isArray(where)) {
    for (const item of where) {
      const found = secretFieldOfWhere(item);
      if (found) return found;
    }
    return undefined;
  }
  if (!isObject(where)) return undefined;
  for (const [key, value] of Object.entries(where)) {
    const found =
      (key.startsWith('$') ? undefined : secretIn(key)) ??
      (KEY_OPERATORS.has(key) && isObject(value) && typeof value.key === 'string'
        ? secretIn(value.key)
        : undefined) ??
      secretFieldOfWhere(value);
    if (found) return found;
  }
  return undefined;
}

/**
 * The first secret field that query parameters compare or sort on: `where` (its keys at any depth,
 * subqueries included) and `order`.
 */
export function secretFieldOfQuery(params: unknown): string | undefined {
  if (!isObject(params)) return undefined;
  const order = Array.isArray(params.order) ? params.order.join(',') : params.order;
  const sorted = typeof order === 'string' ? order.split(',').map((f) => secretIn(f.trim())) : [];
  return secretFieldOfWhere(params.where) ?? sorted.find((f) => f !== undefined);
}

/** Why `role` may not send a query with these parameters, or `undefined`. */
export function queryRefusal(role: ConsoleRole, params: unknown): string | undefined {
  if (roleMay(role, 'readSecrets')) return undefined;
  const field = secretFieldOfQuery(params);
  return field ? `Read-only console users cannot filter or sort on secret fields (${field}).` : undefined;
}

// ---------------------------------------------------------------------------------------------
// Answers

/** `name=value` in a URL's query whose name is a secret key (a reset link's `token=`). */
const URL_PARAMETER = /([?&;](?:amp;)?)([A-Za-z_][A-Za-z0-9_]*)=([^&#\s"'<>]+)/g;

/**
 * A string without secrets: JSON embedded in it is scrubbed (the protocol's `scrub`), and the
 * value of a URL parameter named as a secret key (`?token=...` of a reset or verification link)
 * becomes `[FILTERED]`.
 */
function stringWithoutSecrets(text: string): string {
  const scrubbed = scrub(text) as string;
  return scrubbed.replace(URL_PARAMETER, (whole, lead: string, name: string) =>
    isSecretKey(name) ? `${lead}${name}=${FILTERED}` : whole,
  );
}

/**
 * A schema document (`{className, fields, classLevelPermissions, ...}`) names fields and their
 * types, never values: its field names (`sessionToken`, `authData`) stay as they are.
 */
const isSchemaDocument = (value: Record<string, unknown>) =>
  typeof value.className === 'string' &&
  isObject(value.fields) &&
  isObject(value.classLevelPermissions) &&
  !('objectId' in value);

/** A config document (`{params, masterKeyOnly}`), in an answer or an audit entry. */
const isConfigDocument = (value: Record<string, unknown>) =>
  isObject(value.params) && isObject(value.masterKeyOnly);

/**
 * A config document without what a non-master reader is never shown (the values of masterKeyOnly
 * parameters) nor a secret-named parameter's value; the masterKeyOnly flags stay.
 */
function configWithoutSecrets(doc: Record<string, unknown>): Record<string, unknown> {
  const { params, masterKeyOnly, ...rest } = doc as {
    params: Record<string, unknown>;
    masterKeyOnly: Record<string, unknown>;
  };
  const shown: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(params)) {
    shown[name] = masterKeyOnly[name] === true ? FILTERED : valueWithoutSecrets(name, value);
  }
  const flags: Record<string, unknown> = {};
  for (const [name, flag] of Object.entries(masterKeyOnly)) {
    flags[name] = typeof flag === 'boolean' ? flag : valueWithoutSecrets(name, flag);
  }
  return { ...(withoutSecrets(rest) as Record<string, unknown>), params: shown, masterKeyOnly: flags };
}

/**
 * A copy of `value` with nothing that grants write authority: the value of every key the protocol
 * names secret (`isSecretKey`: sessionToken, authData, password, token, masterKey, apiKey, ...) at
 * any depth, secret URL parameters and JSON inside strings, and the masterKeyOnly values of config
 * documents (in answers and in audit entries). Schema documents pass whole. Long numeric arrays
 * stay as they are (unlike the log scrub, which shortens them): they are data the console shows.
 */
export function withoutSecrets(value: unknown): unknown {
  if (typeof value === 'string') return stringWithoutSecrets(value);
  if (Array.isArray(value)) return value.map(withoutSecrets);
  if (!isObject(value) || isSchemaDocument(value)) return value;
  if (isConfigDocument(value)) return configWithoutSecrets(value);
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) out[key] = valueWithoutSecrets(key, v);
  return out;
}

/** The value of `key` as shown without secrets: all of it hidden when the key names a secret. */
const valueWithoutSecrets = (key: string, value: unknown): unknown =>
  isSecretKey(key) ? FILTERED : withoutSecrets(value);

/** What a role is shown of an answer: all of it with `readSecrets`, else `withoutSecrets`. */
export function answerFor(role: ConsoleRole | undefined, value: unknown): unknown {
  return role !== undefined && roleMay(role, 'readSecrets') ? value : withoutSecrets(value);
}
