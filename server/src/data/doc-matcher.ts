import { isObject } from '@bds/client/protocol';
import type { QueryNode } from '../kernel/query.ts';
import type { Row } from '../kernel/records.ts';
import type { FieldDef } from '../kernel/schema.ts';
import { instantOf } from '../query/fields.ts';
import { compileMatcher, type RowMatcher } from '../query/match.ts';

/** Where a streamed document's id is matched: its `objectId` may hold a group key of any type. */
const DOC_ID = '\u0000id';

/** The where with `objectId` paths moved to `DOC_ID` (so they are typed by value, not as the String column). */
function moveIdPaths(node: QueryNode): QueryNode {
  switch (node.type) {
    case 'and':
    case 'or':
    case 'nor':
      return { ...node, children: node.children.map(moveIdPaths) };
    case 'relatedTo':
    case 'acl':
      return node;
    default: {
      const [head, ...tail] = node.path;
      return head === 'objectId' ? { ...node, path: [DOC_ID, ...tail] } : node;
    }
  }
}

/** The top-level fields a where reads, and those it compares with a date (a string there reads as one). */
function fieldsRead(node: QueryNode, read: Set<string>, dated: Set<string>): void {
  switch (node.type) {
    case 'and':
    case 'or':
    case 'nor':
      for (const child of node.children) fieldsRead(child, read, dated);
      return;
    case 'relatedTo':
    case 'acl':
      return;
    default: {
      const field = node.path[0]!;
      read.add(field);
      const values = node.type === 'compare' ? [node.value] : 'values' in node ? node.values : [];
      if (node.path.length === 1 && values.some((v) => isObject(v) && v.__type === 'Date')) dated.add(field);
    }
  }
}

/** The field type a document's value stands for; `undefined` for null or absent (the field is missing). */
function typeOfValue(value: unknown, dated: boolean): FieldDef | undefined {
  if (value === undefined || value === null) return undefined;
  if (Array.isArray(value)) return { type: 'Array' };
  switch (typeof value) {
    case 'number':
      return { type: 'Number' };
    case 'boolean':
      return { type: 'Boolean' };
    case 'string':
      return { type: dated && instantOf(value) !== undefined ? 'Date' : 'String' };
  }
  if (isObject(value)) {
    switch (value.__type) {
      case 'Date':
      case 'File':
      case 'GeoPoint':
      case 'Polygon':
      case 'Bytes':
        return { type: value.__type };
      case 'Pointer':
      case 'Relation':
        return { type: value.__type, targetClass: String(value.className) };
    }
    return { type: 'Object' };
  }
  return { type: 'Object' };
}

/**
 * Compiles a resolved where for streamed documents: a document has no class schema, so each one is
 * typed by the values of the fields the where reads, and the matcher compiled for that typing
 * (once per distinct typing; a where on a field holding an array where an object is expected
 * answers the same 102 as on a class).
 */
export function docMatcher(where: QueryNode): (doc: Row) => boolean {
  const node = moveIdPaths(where);
  const read = new Set<string>();
  const dated = new Set<string>();
  fieldsRead(node, read, dated);
  const fields = [...read];
  const movesId = read.has(DOC_ID);
  const compiled = new Map<string, RowMatcher>();
  return (doc) => {
    const view: Row = movesId ? { ...doc, [DOC_ID]: doc.objectId } : doc;
    const defs: Record<string, FieldDef> = {};
    let signature = '';
    for (const field of fields) {
      const def = typeOfValue(Object.hasOwn(view, field) ? view[field] : undefined, dated.has(field));
      if (def) defs[field] = def;
      signature += `${def?.type ?? ''}${def?.targetClass ? `<${def.targetClass}>` : ''}\u0000`;
    }
    let test = compiled.get(signature);
    if (!test) {
      test = compileMatcher(node, { className: '', fields: defs, classLevelPermissions: {}, indexes: {} });
      compiled.set(signature, test);
    }
    return test(view);
  };
}
