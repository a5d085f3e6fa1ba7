import { invalidQuery } from '../kernel/errors.ts';
import type { QueryNode } from '../kernel/query.ts';
import type { ClassSchema } from '../kernel/schema.ts';
import { queryFieldDef } from './fields.ts';

/**
 * A dot path into an Array field (`{"items.name": "x"}`) reads the elements, as the incumbent
 * (MongoDB) does: the condition holds when some element is an object whose value at the keys
 * below matches (`$ne`, `$nin`, `$exists: false` and equality with null: when no element does).
 * Below the element, keys are read as below an Object field (an array there is one value, not
 * its elements). The SQL compiler (storage/sql/where.ts) and the in-memory matcher (match.ts)
 * both decide such a node from `elementCondition`, so they agree (server/test/query-cases.ts).
 */

/** The name an element is read under: the one field of `ELEMENT_SCHEMA`, an Object. */
export const ELEMENT = 'element';

/** The schema of one element: a condition below it reads keys as below an Object field. */
export const ELEMENT_SCHEMA: ClassSchema = {
  className: '',
  fields: { [ELEMENT]: { type: 'Object' } },
  classLevelPermissions: {},
  indexes: {},
};

/** Some element satisfies `test` (`none`: no element does); `test` reads paths below `ELEMENT`. */
export interface ElementTerm {
  none: boolean;
  test: QueryNode;
}

/** A condition on the elements of Array field `field`: all `terms` hold (`all`) or one does. */
export interface ElementCondition {
  field: string;
  all: boolean;
  terms: ElementTerm[];
}

/**
 * The element condition a node asks, or `undefined` when its path does not go below an Array
 * field of the schema. Operators other than comparisons, `$in`, `$nin`, `$exists` and `$regex`
 * are refused on such a path (102).
 */
export function elementCondition(schema: ClassSchema, node: QueryNode): ElementCondition | undefined {
  if (!('path' in node) || node.path.length < 2) return undefined;
  const [field, ...keys] = node.path as [string, ...string[]];
  if (queryFieldDef(schema, field)?.type !== 'Array') return undefined;
  const path = [ELEMENT, ...keys];
  const some = (test: QueryNode): ElementTerm => ({ none: false, test });
  const none = (test: QueryNode): ElementTerm => ({ none: true, test });
  const present: QueryNode = { type: 'exists', path, exists: true };
  const one = (term: ElementTerm): ElementCondition => ({ field, all: true, terms: [term] });
  switch (node.type) {
    case 'compare':
      if (node.op === 'eq') return one(node.value === null ? none(present) : some({ ...node, path }));
      if (node.op === 'ne')
        return one(node.value === null ? some(present) : none({ ...node, path, op: 'eq' }));
      return one(some({ ...node, path }));
    case 'exists':
      return one(node.exists ? some(present) : none(present));
    case 'regex':
      return one(some({ ...node, path }));
    case 'in': {
      const values = node.values.filter((v) => v !== null);
      const listed: QueryNode = { type: 'in', path, values, not: false };
      const withNull = node.values.length > values.length;
      if (!node.not) {
        // Some element holds a listed value, or (null listed) no element holds a value.
        return { field, all: false, terms: [some(listed), ...(withNull ? [none(present)] : [])] };
      }
      return { field, all: true, terms: [none(listed), ...(withNull ? [some(present)] : [])] };
    }
    default:
      throw invalidQuery(
        `Invalid where: ${node.path.join('.')} reaches into the elements of Array field ${field}; only comparisons, $in, $nin, $exists and $regex read them.`,
      );
  }
}
