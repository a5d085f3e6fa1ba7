import { aclCondition } from '../access/acl.ts';
import {
  type ClassFacts,
  type ClassOperation,
  decideClass,
  decideMasterSurface,
  decideOwnAccount,
  MATCH_NOTHING,
  type MasterSurface,
} from '../access/class.ts';
import { type ProtectedView, protectedView } from '../access/protected.ts';
import { MASTER_ONLY_RULE, type Verdict } from '../access/verdict.ts';
import type { Caller } from '../kernel/caller.ts';
import { BdsError, ErrorCode, masterKeyRequired } from '../kernel/errors.ts';
import type { QueryNode } from '../kernel/query.ts';
import type { OrderKey } from '../kernel/records.ts';
import type { ClassSchema } from '../kernel/schema.ts';
import type { Core } from './core.ts';

/**
 * Enforcement: the data layer asks access/'s pure deciders for verdicts, with the facts it holds
 * (the caller, the cached schema), and turns them into errors and row conditions. Nothing here
 * decides a rule; every rule is in access/.
 */

/** The protocol error a denial answers with. */
export function denial(v: Verdict): BdsError {
  if (v.rule === MASTER_ONLY_RULE) return masterKeyRequired();
  return new BdsError(v.code ?? ErrorCode.OPERATION_FORBIDDEN, v.message ?? 'Permission denied.');
}

/** Refuses any caller but the master key on a master-only surface (the decider in access/class.ts). */
export function demandMaster(caller: Caller, surface: MasterSurface, className?: string): void {
  const verdict = decideMasterSurface(caller, surface, className);
  if (!verdict.allowed) throw denial(verdict);
}

export function and(a: QueryNode, b: QueryNode | undefined): QueryNode {
  if (!b) return a;
  if (a.type === 'and' && a.children.length === 0) return b;
  return { type: 'and', children: [a, b] };
}

/** Refuses a `_User` update or delete by anyone but the row's own user (the decider in access/class.ts). */
export function demandOwnAccount(caller: Caller, op: 'update' | 'delete', objectId: string): void {
  const verdict = decideOwnAccount(op, caller, objectId);
  if (!verdict.allowed) throw denial(verdict);
}

/** What the class layer knows of a write: where it entered, and the row it names. */
export type WriteFacts = Pick<ClassFacts, 'source' | 'objectId'>;

/** The class-level verdict for an operation, looked up with the cached schema. */
export function classVerdict(
  core: Core,
  caller: Caller,
  className: string,
  op: ClassOperation,
  reached = false,
  write: WriteFacts = {},
): Verdict {
  return decideClass({ className, schema: core.schemas.get(className), op, caller, reached, ...write });
}

/**
 * The class-level layer for an operation (throws its denial) and the ACL layer as a row condition:
 * what every row the operation touches must meet. `undefined` for master (no condition). A write
 * gives where it entered and the row it names.
 */
export function rowAccess(
  core: Core,
  caller: Caller,
  className: string,
  op: ClassOperation,
  write: WriteFacts = {},
): QueryNode | undefined {
  const verdict = classVerdict(core, caller, className, op, false, write);
  if (!verdict.allowed) throw denial(verdict);
  return rowCondition(verdict, caller, op);
}

/**
 * What a row must meet for an operation the class layer allowed: the verdict's own condition
 * (pointer permissions, an installation's own row) and the ACL the operation needs (read; write
 * for update and delete). `undefined` for master.
 */
export function rowCondition(verdict: Verdict, caller: Caller, op: ClassOperation): QueryNode | undefined {
  if (op === 'create' || op === 'addField') return verdict.condition;
  const acl = aclCondition(caller, op === 'update' || op === 'delete' ? 'write' : 'read');
  return acl ? and(acl, verdict.condition) : verdict.condition;
}

/**
 * The protectedFields views already worked out, per schema object (a changed schema is a new
 * object) and caller (the resolver hands a session's requests one frozen caller; the anonymous
 * caller is shared): the view depends on nothing else but the owner-exemption option, kept with it.
 */
const VIEWS = new WeakMap<ClassSchema, WeakMap<Caller, { ownerExempt: boolean; view: ProtectedView }>>();

export function viewOf(core: Core, caller: Caller, schema: ClassSchema): ProtectedView {
  const ownerExempt = core.options.protectedFieldsOwnerExempt;
  let byCaller = VIEWS.get(schema);
  if (!byCaller) {
    byCaller = new WeakMap();
    VIEWS.set(schema, byCaller);
  }
  const hit = byCaller.get(caller);
  if (hit && hit.ownerExempt === ownerExempt) return hit.view;
  const view = protectedView(schema, caller, { ownerExempt });
  byCaller.set(caller, { ownerExempt, view });
  return view;
}

/**
 * Applies the layers to everything a query touches: protected fields may not be queried or sorted
 * on (119, so their values cannot be learned by probing); `$inQuery`/`$notInQuery`/`$select`/
 * `$dontSelect` need CLP find on their class and get its row condition and its read ACL as part of
 * their where; `$relatedTo` needs CLP get on the owner's class and a readable owner row.
 */
export async function secureQuery(
  core: Core,
  caller: Caller,
  schema: ClassSchema,
  where: QueryNode,
  order: readonly OrderKey[],
): Promise<QueryNode> {
  if (caller.isMaster) return where;
  // Most wheres have no subquery and no $relatedTo: nothing to rewrite, only the protected fields
  // of the class itself to refuse, checked without building a copy of the tree.
  if (!hasSubquery(where)) {
    const { unqueryable } = viewOf(core, caller, schema);
    if (unqueryable.size > 0) {
      for (const key of order) refuseUnqueryable(schema, unqueryable, key.path[0]);
      refusePlain(schema, unqueryable, where);
    }
    return where;
  }
  const views = new Map<string, ProtectedView>();
  const check = (s: ClassSchema, field: string | undefined) => {
    if (field === undefined) return;
    let view = views.get(s.className);
    if (!view) {
      view = viewOf(core, caller, s);
      views.set(s.className, view);
    }
    if (view.unqueryable.has(field)) {
      throw new BdsError(
        ErrorCode.OPERATION_FORBIDDEN,
        `This user is not allowed to query ${field} on class ${s.className}.`,
      );
    }
  };
  const readable = (className: string, op: ClassOperation): QueryNode | undefined => {
    // Decided before the class is looked up: a master-only class answers the same whether it exists.
    const verdict = classVerdict(core, caller, className, op, true);
    if (!verdict.allowed) throw denial(verdict);
    return and(aclCondition(caller, 'read')!, verdict.condition);
  };
  for (const key of order) check(schema, key.path[0]);
  const walk = async (node: QueryNode, s: ClassSchema): Promise<QueryNode> => {
    switch (node.type) {
      case 'and':
      case 'or':
      case 'nor': {
        const children: QueryNode[] = [];
        for (const c of node.children) children.push(await walk(c, s));
        return { ...node, children };
      }
      case 'inQuery':
      case 'select': {
        check(s, node.path[0]);
        const access = readable(node.query.className, 'find');
        const inner = core.schemas.get(node.query.className);
        if (!inner) return node;
        if (node.type === 'select') check(inner, node.key.split('.')[0]);
        // The access condition first: a costly test (a $regex) never runs on rows the caller cannot read.
        const where = await walk(node.query.where, inner);
        const innerWhere = access ? and(access, where) : where;
        return { ...node, query: { ...node.query, where: innerWhere } };
      }
      case 'relatedTo': {
        const access = readable(node.owner.className, 'get');
        const owner = core.schemas.get(node.owner.className);
        if (!owner) return node;
        check(owner, node.key);
        const byId: QueryNode = { type: 'compare', path: ['objectId'], op: 'eq', value: node.owner.objectId };
        const found = await core.store.find(
          owner,
          { where: and(byId, access), order: [], limit: 1, skip: 0 },
          core.schemas.lookup,
        );
        return found.length > 0 ? node : MATCH_NOTHING;
      }
      case 'acl':
        // Built by the service, never parsed from a request.
        return node;
      default:
        check(s, node.path[0]);
        return node;
    }
  };
  return walk(where, schema);
}

/**
 * Refuses, as a where on them is refused, any of `fields` (top-level names, or the first segment of
 * a dotted path) that protectedFields may hide from the caller on this class: naming a field to
 * watch, pick or include would reveal as much as querying it (realtime's keys, watch and include).
 */
export function refuseHiddenFields(
  core: Core,
  caller: Caller,
  schema: ClassSchema,
  fields: Iterable<string>,
): void {
  if (caller.isMaster) return;
  const { unqueryable } = viewOf(core, caller, schema);
  if (unqueryable.size === 0) return;
  for (const path of fields) refuseUnqueryable(schema, unqueryable, path.split('.')[0]);
}

/** Whether a where holds a subquery (`$inQuery`, `$select`...) or `$relatedTo`. */
function hasSubquery(node: QueryNode): boolean {
  switch (node.type) {
    case 'and':
    case 'or':
    case 'nor':
      for (const c of node.children) if (hasSubquery(c)) return true;
      return false;
    case 'inQuery':
    case 'select':
    case 'relatedTo':
      return true;
    default:
      return false;
  }
}

function refuseUnqueryable(
  schema: ClassSchema,
  unqueryable: ReadonlySet<string>,
  field: string | undefined,
): void {
  if (field !== undefined && unqueryable.has(field)) {
    throw new BdsError(
      ErrorCode.OPERATION_FORBIDDEN,
      `This user is not allowed to query ${field} on class ${schema.className}.`,
    );
  }
}

/** The protected-field check of secureQuery's walk, on a where without subqueries. */
function refusePlain(schema: ClassSchema, unqueryable: ReadonlySet<string>, node: QueryNode): void {
  switch (node.type) {
    case 'and':
    case 'or':
    case 'nor':
      for (const c of node.children) refusePlain(schema, unqueryable, c);
      return;
    case 'acl':
    case 'inQuery':
    case 'select':
    case 'relatedTo':
      return;
    default:
      refuseUnqueryable(schema, unqueryable, node.path[0]);
  }
}

/**
 * The row condition for rows of a class reached by include: CLP get of that class (a denial
 * answers `undefined`: the pointers stay bare), its ACL read and pointer permissions.
 */
export function includeAccess(core: Core, caller: Caller, className: string): QueryNode | null | undefined {
  const verdict = classVerdict(core, caller, className, 'get', true);
  if (!verdict.allowed) return null;
  const acl = aclCondition(caller, 'read');
  return acl ? and(acl, verdict.condition) : verdict.condition;
}
