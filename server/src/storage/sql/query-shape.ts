import type { QueryNode } from '../../kernel/query.ts';
import type { OrderKey } from '../../kernel/records.ts';
import type { ClassSchema } from '../../kernel/schema.ts';

/**
 * The shape of a find, as an index sees it (docs/protocol.md#performance): the fields compared
 * for equality (`$eq`, `$in`), the field compared by a range (`$lt`..`$gte`) and the sort keys.
 * Only conditions every answer must meet count (the children of the top-level `$and`); an `$or`,
 * a `$regex` or a key below an Object field is left for the engine to filter.
 */
export interface QueryShape {
  className: string;
  equality: string[];
  range: string[];
  sort: Array<{ field: string; descending: boolean }>;
}

/** Field types whose column a plain B-tree index serves as the where compiler compares it. */
const INDEXABLE = new Set(['String', 'Number', 'Date', 'Boolean', 'Pointer']);

/** The most columns of an automatic index. */
export const MAX_INDEX_COLUMNS = 4;

/** A field whose column holds the value compared: top level, of an indexable type, not the primary key. */
function indexable(schema: ClassSchema, path: readonly string[]): string | undefined {
  if (path.length !== 1) return undefined;
  const field = path[0]!;
  if (field === 'objectId') return undefined;
  const type = schema.fields[field]?.type;
  return type && INDEXABLE.has(type) ? field : undefined;
}

/** The shape of a find, or undefined when it has no field an index could serve. */
export function queryShape(
  schema: ClassSchema,
  where: QueryNode,
  order: readonly OrderKey[],
): QueryShape | undefined {
  const equality = new Set<string>();
  const range = new Set<string>();
  const visit = (node: QueryNode): void => {
    if (node.type === 'and') {
      for (const child of node.children) visit(child);
      return;
    }
    if (node.type === 'compare') {
      const field = indexable(schema, node.path);
      if (!field || node.value === null || node.op === 'ne') return;
      if (node.op === 'eq') equality.add(field);
      else range.add(field);
    } else if (node.type === 'in' && !node.not) {
      const field = indexable(schema, node.path);
      if (field && !node.values.includes(null)) equality.add(field);
    }
  };
  visit(where);
  const sort: QueryShape['sort'] = [];
  for (const key of order) {
    const field = indexable(schema, key.path);
    // A sort key the index cannot serve ends the part of the order an index can give.
    if (!field) break;
    sort.push({ field, descending: key.descending });
  }
  if (equality.size === 0 && range.size === 0 && sort.length === 0) return undefined;
  for (const field of equality) range.delete(field);
  return { className: schema.className, equality: [...equality].sort(), range: [...range].sort(), sort };
}

/** A stable text of a shape: one entry per shape in the report. */
export function shapeKey(shape: QueryShape): string {
  const sort = shape.sort.map((s) => (s.descending ? `-${s.field}` : s.field));
  return `${shape.className}|eq:${shape.equality.join(',')}|range:${shape.range.join(',')}|sort:${sort.join(',')}`;
}

/**
 * The keys of the index that serves a shape: equality fields first, then one range field, then
 * the sort keys (each once), at most MAX_INDEX_COLUMNS. Field names are letters, digits and `_`.
 */
export function indexKeysFor(shape: QueryShape): Array<{ field: string; descending: boolean }> {
  const keys: Array<{ field: string; descending: boolean }> = shape.equality.map((field) => ({
    field,
    descending: false,
  }));
  const first = shape.range[0];
  if (first !== undefined) keys.push({ field: first, descending: false });
  // Sort keys serve the order only when no range comes before them (or the range is the first key).
  for (const key of shape.sort) {
    if (first !== undefined && key.field !== first) break;
    if (!keys.some((k) => k.field === key.field)) keys.push(key);
  }
  return keys.slice(0, MAX_INDEX_COLUMNS);
}

/** The fields of a shape. */
export const shapeFields = (shape: QueryShape): string[] => [
  ...new Set([...shape.equality, ...shape.range, ...shape.sort.map((s) => s.field)]),
];
