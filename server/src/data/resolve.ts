import type { Caller } from '../kernel/caller.ts';
import { invalidQuery } from '../kernel/errors.ts';
import type { QueryNode } from '../kernel/query.ts';
import type { ClassSchema } from '../kernel/schema.ts';
import { checkInQueryField, resolvePath } from '../query/fields.ts';
import { type RelationNode, replaceNodes, type UnresolvedNode, unresolvedNodes } from '../query/match.ts';
import { secureQuery } from './authorize.ts';
import type { Core } from './core.ts';

/** Most rows a subquery may stand for when a where is decided in memory. */
export const MAX_RESOLVED_ROWS = 100_000;

/**
 * A where ready for the in-memory matcher (realtime, triggers, explanations): the layers applied
 * as for a find by `caller` (protected fields refused, each subquery's class checked and its ACL
 * and pointer-permission conditions added), then every node the matcher cannot decide for one row
 * ($inQuery, $select, $relatedTo) answered by a store lookup and replaced by the `in` list it
 * stands for. The caller's own row conditions are not part of it: add them as for a find.
 */
export async function resolveForMemory(
  core: Core,
  caller: Caller,
  schema: ClassSchema,
  where: QueryNode,
): Promise<QueryNode> {
  const secured = await secureQuery(core, caller, schema, where, []);
  const answers = new Map<UnresolvedNode | RelationNode, QueryNode>();
  for (const pending of unresolvedNodes(secured, schema))
    answers.set(pending, await lookup(core, schema, pending));
  return replaceNodes(secured, (pending) => answers.get(pending)!, schema);
}

async function lookup(
  core: Core,
  schema: ClassSchema,
  node: UnresolvedNode | RelationNode,
): Promise<QueryNode> {
  const { store, schemas } = core;
  const rowsOf = async (target: ClassSchema, where: QueryNode) => {
    const rows = await store.find(
      target,
      { where, order: [], limit: MAX_RESOLVED_ROWS + 1, skip: 0 },
      schemas.lookup,
    );
    if (rows.length > MAX_RESOLVED_ROWS) {
      throw invalidQuery(`A subquery here may match at most ${MAX_RESOLVED_ROWS} rows.`);
    }
    return rows;
  };
  if (node.type === 'relatedTo' || node.type === 'compare' || node.type === 'in') {
    // The rows of this class the owner's relation holds (the owner's readability was checked), or
    // whose relation holds the given pointers.
    const rows = await rowsOf(schema, node);
    return { type: 'in', path: ['objectId'], values: rows.map((r) => r.objectId), not: false };
  }
  // The checks the SQL compiler makes of these operators, so both answer the same 102.
  if (node.type === 'inQuery') checkInQueryField(resolvePath(schema, node.path), node.path);
  const inner = schemas.get(node.query.className);
  if (!inner) return { type: 'in', path: node.path, values: [], not: node.not };
  if (node.type === 'select') resolvePath(inner, node.key.split('.'));
  const rows = await rowsOf(inner, node.query.where);
  if (node.type === 'inQuery') {
    const values = rows.map((r) => ({ __type: 'Pointer', className: inner.className, objectId: r.objectId }));
    return { type: 'in', path: node.path, values, not: node.not };
  }
  const values = rows
    .map((r) =>
      node.key.split('.').reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], r),
    )
    .filter((v) => v !== undefined && v !== null);
  return { type: 'in', path: node.path, values, not: node.not };
}
