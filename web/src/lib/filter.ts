/**
 * The filter builder's model and its two-way mapping with the service's `where` JSON.
 * A filter is a tree of groups (and / or / nor) whose leaves are conditions on one field.
 */
import { isPlainObject } from './wire.ts';

export type Where = Record<string, unknown>;

/** A filter saved in the bff: its owner's, or every console user's of the app once shared. */
export interface SavedFilter {
  id: number;
  className: string;
  owner: string;
  name: string;
  where: Where;
  savedAt: string;
  shared: boolean;
}

export const OPERATORS = [
  { op: '$eq', label: 'equals' },
  { op: '$ne', label: 'not equal' },
  { op: '$lt', label: '<' },
  { op: '$lte', label: '<=' },
  { op: '$gt', label: '>' },
  { op: '$gte', label: '>=' },
  { op: '$in', label: 'in list' },
  { op: '$nin', label: 'not in list' },
  { op: '$all', label: 'contains all' },
  { op: '$containedBy', label: 'contained by' },
  { op: '$exists', label: 'exists' },
  { op: '$regex', label: 'matches regex' },
  { op: '$select', label: 'select (key in query)' },
  { op: '$dontSelect', label: "don't select" },
  { op: '$inQuery', label: 'in query' },
  { op: '$notInQuery', label: 'not in query' },
  { op: '$nearSphere', label: 'near' },
  { op: '$within', label: 'within box' },
  { op: '$geoWithin', label: 'within polygon / circle' },
  { op: '$geoIntersects', label: 'polygon contains point' },
  { op: '$relatedTo', label: 'related to (relation of)' },
] as const;

export type Operator = (typeof OPERATORS)[number]['op'];

/** Operators that take a list of values. */
export const LIST_OPERATORS = new Set<string>(['$in', '$nin', '$all', '$containedBy']);
/** Operators whose value is a scalar of the field's type. */
export const SCALAR_OPERATORS = new Set<string>(['$eq', '$ne', '$lt', '$lte', '$gt', '$gte']);

/** Companion keys that live next to a main operator in the same constraint object. */
const COMPANIONS: Record<string, string[]> = {
  $regex: ['$options'],
  $nearSphere: ['$maxDistance', '$maxDistanceInRadians', '$maxDistanceInMiles', '$maxDistanceInKilometers'],
};
const COMPANION_KEYS = new Set(Object.values(COMPANIONS).flat());

export interface Condition {
  kind: 'cond';
  /** Field path (`a.b` for keys inside an object field); empty for `$relatedTo`. */
  field: string;
  op: Operator;
  value: unknown;
  /** Companion keys such as `$options` for `$regex` or `$maxDistanceInKilometers` for `$nearSphere`. */
  extra?: Record<string, unknown>;
  /** Why the value typed in the builder is not usable yet; such a filter is not applied. */
  error?: string;
}

export interface Group {
  kind: 'group';
  op: 'and' | 'or' | 'nor';
  children: Node[];
}

export type Node = Condition | Group;

export const emptyFilter = (): Group => ({ kind: 'group', op: 'and', children: [] });

const KNOWN_OPS = new Set<string>(OPERATORS.map((o) => o.op));

function isOperatorObject(v: unknown): v is Record<string, unknown> {
  if (!isPlainObject(v)) return false;
  const keys = Object.keys(v);
  return keys.length > 0 && keys.every((k) => k.startsWith('$'));
}

/** Reads a where clause into the builder's tree. Throws on an operator the builder doesn't know. */
export function whereToFilter(where: Where | undefined | null): Group {
  const root = emptyFilter();
  if (!where) return root;
  root.children = parseObject(where);
  return root;
}

function parseObject(where: Where): Node[] {
  const out: Node[] = [];
  for (const [key, value] of Object.entries(where)) {
    if (key === '$and' || key === '$or' || key === '$nor') {
      if (!Array.isArray(value)) throw new Error(`${key} takes an array`);
      const op = key.slice(1) as Group['op'];
      const children: Node[] = value.map((item) => {
        if (!isPlainObject(item)) throw new Error(`${key} items must be objects`);
        const nodes = parseObject(item);
        return nodes.length === 1 ? nodes[0]! : { kind: 'group', op: 'and', children: nodes };
      });
      if (op === 'and')
        out.push(...children.flatMap((c) => (c.kind === 'group' && c.op === 'and' ? c.children : [c])));
      else out.push({ kind: 'group', op, children });
    } else if (key === '$relatedTo') {
      out.push({ kind: 'cond', field: '', op: '$relatedTo', value });
    } else if (key.startsWith('$')) {
      throw new Error(`unknown top-level operator ${key}`);
    } else if (isOperatorObject(value)) {
      for (const [op, operand] of Object.entries(value)) {
        if (COMPANION_KEYS.has(op)) continue;
        if (!KNOWN_OPS.has(op) || op === '$relatedTo') throw new Error(`unknown operator ${op} on ${key}`);
        const cond: Condition = { kind: 'cond', field: key, op: op as Operator, value: operand };
        const companions = COMPANIONS[op];
        if (companions) {
          const extra: Record<string, unknown> = {};
          for (const c of companions) if (c in value) extra[c] = value[c];
          if (Object.keys(extra).length) cond.extra = extra;
        }
        out.push(cond);
      }
    } else {
      out.push({ kind: 'cond', field: key, op: '$eq', value });
    }
  }
  return out;
}

/** A bare value can stand for `$eq` when it isn't itself mistakable for an operator object. */
const bareEqOk = (v: unknown): boolean => !isOperatorObject(v);

/** The where clause of a filter tree. Conditions with no field (except `$relatedTo`) are skipped. */
export function filterToWhere(node: Group): Where {
  return groupToWhere(node);
}

function groupToWhere(group: Group): Where {
  const parts = group.children.map(nodeToWhere).filter((w) => Object.keys(w).length > 0);
  if (group.op === 'and') return mergeAnd(parts);
  if (parts.length === 0) return {};
  if (parts.length === 1 && group.op === 'or') return parts[0]!;
  return { [`$${group.op}`]: parts };
}

function nodeToWhere(node: Node): Where {
  if (node.kind === 'group') return groupToWhere(node);
  if (node.op === '$relatedTo') return { $relatedTo: node.value };
  if (!node.field) return {};
  if (node.op === '$eq' && bareEqOk(node.value) && !node.extra) return { [node.field]: node.value };
  return { [node.field]: { [node.op]: node.value, ...(node.extra ?? {}) } };
}

/** Merges AND-ed parts into one object when no key collides, else an `$and` list. */
function mergeAnd(parts: Where[]): Where {
  if (parts.length === 0) return {};
  if (parts.length === 1) return parts[0]!;
  const merged: Where = {};
  for (const part of parts) {
    for (const [k, v] of Object.entries(part)) {
      if (!(k in merged)) {
        merged[k] = v;
        continue;
      }
      const prev = merged[k];
      if (k.startsWith('$') || !isOperatorObject(prev) || !isOperatorObject(v)) return { $and: parts };
      if (Object.keys(v).some((op) => op in prev)) return { $and: parts };
      merged[k] = { ...prev, ...v };
    }
  }
  return merged;
}

/** The first condition of a tree whose typed value is not usable, as "field: why". */
export function firstProblem(node: Node): string | null {
  if (node.kind === 'cond') return node.error ? `${node.field || node.op}: ${node.error}` : null;
  for (const child of node.children) {
    const p = firstProblem(child);
    if (p) return p;
  }
  return null;
}

/** A one-line description of a condition for chips and titles. */
export function describe(node: Node): string {
  if (node.kind === 'group') return `${node.op}(${node.children.map(describe).join(', ')})`;
  const label = OPERATORS.find((o) => o.op === node.op)?.label ?? node.op;
  return `${node.field} ${label} ${JSON.stringify(node.value)}`;
}
