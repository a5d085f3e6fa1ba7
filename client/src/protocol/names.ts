/**
 * The names the service accepts, and their lengths (docs/protocol.md#wire-values). The service
 * enforces them; the client library, the bff and the console check the same rules before they
 * send, so a name is refused in one way wherever it is typed. Nobody keeps a copy
 * (server/test/protocol-rules.test.ts fails on one).
 */

/** The longest class name. */
export const MAX_CLASS_NAME = 120;

/** A class a caller creates: a letter, then letters, digits and `_`, at most MAX_CLASS_NAME characters. */
export const CLASS_NAME_PATTERN = /* @__PURE__ */ new RegExp(
  `^[A-Za-z][A-Za-z0-9_]{0,${MAX_CLASS_NAME - 1}}$`,
);

/**
 * Any class a request may name, the built-in ones (`_User`, `_Role`, …) included: a user class's
 * name, or one with a `_` before it. What an edge checks before the service, which knows its
 * built-in classes, decides.
 */
export const ANY_CLASS_NAME_PATTERN = /* @__PURE__ */ new RegExp(
  `^_?[A-Za-z][A-Za-z0-9_]{0,${MAX_CLASS_NAME - 1}}$`,
);

/** The longest field name: PostgreSQL's identifier limit (each field is a column). */
export const MAX_FIELD_NAME = 63;

/** A top-level field: a letter, then letters, digits and `_` (at most MAX_FIELD_NAME characters). */
export const FIELD_NAME_PATTERN = /^[A-Za-z][A-Za-z0-9_]*$/;

/**
 * A key below an Object field (`address.city`: `city`), and a name of an analytics event's
 * dimension (a key below its `dimensions`): letters, digits and `_`.
 */
export const KEY_BELOW_FIELD_PATTERN = /^[A-Za-z0-9_]+$/;

/**
 * One segment of a field reference in an aggregation pipeline (`"$a.b"`: `a`, then `b`;
 * docs/protocol.md#push-analytics-and-aggregation): letters, digits and `_`, not starting with a
 * digit. A leading `_` is allowed, for `_id` (the row's objectId) and the stored names of built-in fields.
 */
export const AGGREGATE_PATH_SEGMENT_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Names of JavaScript's own object members: a field, sub-key or class named like one would reach
 * the prototype of a plain object wherever a name is looked up.
 */
export const PROTOTYPE_NAMES: ReadonlySet<string> = new Set([
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'toLocaleString',
  'valueOf',
  'hasOwnProperty',
  'isPrototypeOf',
  'propertyIsEnumerable',
  '__defineGetter__',
  '__defineSetter__',
  '__lookupGetter__',
  '__lookupSetter__',
]);

/** Why `name` cannot be a top-level field (a phrase), or `undefined` when it can. */
export function fieldNameProblem(name: string): string | undefined {
  if (!FIELD_NAME_PATTERN.test(name))
    return 'field names start with a letter and hold only letters, digits and _';
  if (name.length > MAX_FIELD_NAME) return `field names are at most ${MAX_FIELD_NAME} characters`;
  if (PROTOTYPE_NAMES.has(name)) return `${name} is a reserved name`;
  return undefined;
}

/** Why a dotted path (`field.sub.key`) cannot be read or written, or `undefined` when it can. */
export function keyPathProblem(path: string): string | undefined {
  const [field, ...keys] = path.split('.');
  const problem = fieldNameProblem(field!);
  if (problem) return problem;
  for (const key of keys) {
    if (!KEY_BELOW_FIELD_PATTERN.test(key)) return 'keys below a field hold only letters, digits and _';
    if (key.length > MAX_FIELD_NAME) return `keys are at most ${MAX_FIELD_NAME} characters`;
    if (PROTOTYPE_NAMES.has(key)) return `${key} is a reserved name`;
  }
  return undefined;
}

/**
 * An objectId the service accepts: the ones it makes (10 characters of `[A-Za-z0-9]`) and the ones
 * a caller may choose (a master key, or `allowCustomObjectId`): 1 to 64 letters, digits, `_` or `-`.
 */
export const OBJECT_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** `_Role.name`: letters, digits, `_`, `-` and spaces (139 otherwise). */
export const ROLE_NAME_PATTERN = /^[0-9A-Za-z_\- ]+$/;

/** The longest name of a cloud function or job. */
export const MAX_FUNCTION_NAME = 128;

/** A cloud function's or job's name (and a webhook's): a letter, then letters, digits, `_`, `.` and `-`. */
export const FUNCTION_NAME_PATTERN = /* @__PURE__ */ new RegExp(
  `^[A-Za-z][A-Za-z0-9_.-]{0,${MAX_FUNCTION_NAME - 1}}$`,
);

/** An analytics event's name (`POST /events/<name>`; 160 otherwise): word characters, `-` and `.`. */
export const EVENT_NAME_PATTERN = /^[\w\-.]+$/;

/** A parameter of the application config (`PUT /config`; 105 otherwise). */
export const CONFIG_PARAMETER_NAME_PATTERN = /^[A-Za-z0-9_.-]{1,200}$/;

/** A schema index's name: letters, digits and `_`. */
export const INDEX_NAME_PATTERN = /^[A-Za-z0-9_]+$/;

/** Whether `name` may name an index a caller adds (`_id_` is the built-in index's). */
export const isIndexName = (name: string): boolean => INDEX_NAME_PATTERN.test(name) && name !== '_id_';

/** A sign-in provider's name (a key of `authData`): a letter, then letters, digits or `_`, 64 at most. */
export const AUTH_PROVIDER_NAME_PATTERN = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;

/** A label that scopes the client library's response cache (`withCacheTenant`). */
export const CACHE_TENANT_PATTERN = /^[A-Za-z0-9_-]{1,256}$/;
