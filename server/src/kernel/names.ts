import { MASTER_ONLY_CLASSES, SYSTEM_CLASS_FIELDS } from './schema.ts';

/**
 * The one rule for class and field names, checked at the edge wherever a name arrives (write
 * bodies, schema documents, where keys, keys/order/include, subqueries, pointers), so no name
 * that could break the store or the service's own objects reaches either.
 */

/** `^[A-Za-z][A-Za-z0-9_]{0,119}$`: user classes; built-in classes start with `_` and are listed. */
export const CLASS_NAME_PATTERN = /^[A-Za-z][A-Za-z0-9_]{0,119}$/;
export const MAX_CLASS_NAME = 120;

/** `^[A-Za-z][A-Za-z0-9_]*$`, at most 63 characters (PostgreSQL's identifier limit, one column each). */
export const FIELD_NAME_PATTERN = /^[A-Za-z][A-Za-z0-9_]*$/;
export const MAX_FIELD_NAME = 63;
/** A key below an Object field (`address.city`): letters, digits and `_`. */
const SUB_KEY_PATTERN = /^[A-Za-z0-9_]+$/;

/**
 * Names of JavaScript's own object members: a field, sub-key or class named like one would reach
 * the prototype of a plain object wherever the service looks a name up.
 */
const PROTOTYPE_NAMES = new Set([
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

/** The store's own tables and catalogues: no class may take their names. */
const STORE_CLASS_NAMES = new Set(['_SCHEMA', '_GlobalConfig', '_GraphQLConfig']);
const STORE_PREFIXES = /^(sqlite_|pg_)/i;

const isBuiltIn = (name: string) => Object.hasOwn(SYSTEM_CLASS_FIELDS, name) || MASTER_ONLY_CLASSES.has(name);

/** Class names found good (see classNameProblem), at most MAX_GOOD_CLASS_NAMES. */
const GOOD_CLASS_NAMES = new Set<string>();
const MAX_GOOD_CLASS_NAMES = 1024;

/** Why `name` cannot be a class (a sentence), or `undefined` when it can. */
export function classNameProblem(name: string): string | undefined {
  // Every request names a class: the names found good are remembered (a bounded set, since they
  // come from callers), so the patterns run once per name.
  if (GOOD_CLASS_NAMES.has(name)) return undefined;
  if (STORE_CLASS_NAMES.has(name) || STORE_PREFIXES.test(name) || PROTOTYPE_NAMES.has(name)) {
    return `The name ${name} is reserved.`;
  }
  if (!isBuiltIn(name) && !CLASS_NAME_PATTERN.test(name)) {
    return 'Class names start with a letter and hold only letters, digits and _.';
  }
  if (GOOD_CLASS_NAMES.size >= MAX_GOOD_CLASS_NAMES) GOOD_CLASS_NAMES.clear();
  GOOD_CLASS_NAMES.add(name);
  return undefined;
}

export const isValidClassName = (name: string): boolean => classNameProblem(name) === undefined;

/** Why `name` cannot be a top-level field, or `undefined` when it can. */
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
    if (!SUB_KEY_PATTERN.test(key)) return 'keys below a field hold only letters, digits and _';
    if (key.length > MAX_FIELD_NAME) return `keys are at most ${MAX_FIELD_NAME} characters`;
    if (PROTOTYPE_NAMES.has(key)) return `${key} is a reserved name`;
  }
  return undefined;
}
