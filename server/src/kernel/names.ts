import { CLASS_NAME_PATTERN, PROTOTYPE_NAMES } from '@bds/client/protocol';
import { MASTER_ONLY_CLASSES, SYSTEM_CLASS_FIELDS } from './schema.ts';

/**
 * The service's check of class names, at the edge wherever a name arrives (write bodies, schema
 * documents, where keys, keys/order/include, subqueries, pointers), so no name that could break the
 * store or the service's own objects reaches either. The rules themselves (patterns, lengths, the
 * reserved prototype names, the field and key-path checks) are the protocol's
 * (client/src/protocol/names.ts); what the service adds is its built-in classes and the store's own
 * names.
 */

/** The store's own tables and catalogues: no class may take their names. */
const STORE_CLASS_NAMES = new Set(['_SCHEMA', '_GlobalConfig', '_GraphQLConfig', '_History']);
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

/** The checks of field names and key paths are the protocol's, for every package. */
export { fieldNameProblem, keyPathProblem } from '@bds/client/protocol';
