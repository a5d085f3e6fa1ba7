import { roleResolver, withRoles } from '../auth/roles.ts';
import { type Auth, principalsOf } from '../data/auth.ts';
import type { Core } from '../data/core.ts';
import type { ParsedWrite } from '../data/write-body.ts';
import { BdsError, ErrorCode } from '../errors.ts';
import type { QueryNode } from '../query/ast.ts';
import { type ClassSchema, MASTER_ONLY_CLASSES } from '../schema/types.ts';
import type { OrderKey, Row } from '../storage/adapter.ts';
import { type ClpOperation, clpVerdict, permissionDenied } from './clp.ts';
import { type ProtectedView, protectedView } from './protected.ts';
import {
  installationCreateVerdict,
  installationImmutableVerdict,
  roleCycleDenied,
  roleNameVerdict,
  roleUpdateVerdict,
} from './rules.ts';
import { allow, deny, type Verdict } from './verdict.ts';

/**
 * The glue between the pure access decisions (clp.ts, protected.ts, rules.ts) and the record
 * pipeline (data/records.ts): it looks up schemas, roles and options, asks for a verdict, and
 * throws the verdict's error when it is a denial.
 */

export const MATCH_NOTHING: QueryNode = { type: 'in', path: ['objectId'], values: [], not: false };

export function raise(v: Verdict): never {
  throw new BdsError(v.code ?? ErrorCode.OPERATION_FORBIDDEN, v.message ?? 'Permission denied.', v.status);
}

export function and(a: QueryNode, b: QueryNode | undefined): QueryNode {
  return b ? { type: 'and', children: [a, b] } : a;
}

const masterOnly = (reason: string) =>
  deny('system', ErrorCode.OPERATION_FORBIDDEN, 'unauthorized: master key is required', reason, 403);

/**
 * Class-level decision for one operation: the built-in classes' own rules, then CLP. CLP on the
 * master-only system classes is ignored (they are master-only at REST).
 */
export function classVerdict(core: Core, auth: Auth, className: string, op: ClpOperation): Verdict {
  if (auth.isMaster) return allow('master', 'the master key bypasses class-level permissions');
  if (MASTER_ONLY_CLASSES.has(className) || className.startsWith('_Join:')) {
    return masterOnly(`${className} is master-only`);
  }
  if (className === '_Installation') {
    if (op === 'find' || op === 'delete') return masterOnly(`${op} on _Installation is master-only`);
    if (op === 'create') return allow('installation', 'installations are created by their device');
    if (op === 'update') {
      const id = auth.installationId;
      return allow(
        'installation',
        'an installation is updated by the device whose X-Backend-Installation-Id it holds',
        id ? { type: 'compare', path: ['installationId'], op: 'eq', value: id } : MATCH_NOTHING,
      );
    }
  }
  const schema = core.schemas.get(className);
  if (!schema) return allow('clp', `${className} does not exist yet`);
  return clpVerdict(schema, op, auth);
}

/** Classes reached from another class's query (subqueries, $relatedTo, include). */
function reachedClassVerdict(core: Core, auth: Auth, className: string, op: ClpOperation): Verdict {
  if (!auth.isMaster && className === '_Session') {
    return deny(
      'system',
      ErrorCode.OPERATION_FORBIDDEN,
      permissionDenied(op, className),
      'sessions are not reachable',
    );
  }
  return classVerdict(core, auth, className, op);
}

/** Resolves the caller's roles and applies the class-level layer; the condition restricts rows. */
export async function guard(
  core: Core,
  auth: Auth,
  className: string,
  op: ClpOperation,
): Promise<{ auth: Auth; condition?: QueryNode }> {
  const resolved = await withRoles(core.store, auth);
  const verdict = classVerdict(core, resolved, className, op);
  if (!verdict.allowed) raise(verdict);
  return verdict.rowCondition ? { auth: resolved, condition: verdict.rowCondition } : { auth: resolved };
}

function viewOf(core: Core, auth: Auth, schema: ClassSchema): ProtectedView {
  return protectedView(schema, auth, { ownerExempt: core.options.protectedFieldsOwnerExempt });
}

/**
 * Applies the layers to everything a query touches: protected fields may not be queried or sorted
 * on (119, so their values cannot be learned by probing); `$inQuery`/`$notInQuery`/`$select`/
 * `$dontSelect` need CLP find on their class and get its pointer-permission condition (their ACL is
 * applied in SQL); `$relatedTo` needs CLP get on the owner's class and a readable owner row.
 */
export async function secureQuery(
  core: Core,
  auth: Auth,
  schema: ClassSchema,
  where: QueryNode,
  order: readonly OrderKey[],
): Promise<QueryNode> {
  if (auth.isMaster) return where;
  const views = new Map<string, ProtectedView>();
  const check = (s: ClassSchema, field: string | undefined) => {
    if (field === undefined) return;
    let view = views.get(s.className);
    if (!view) {
      view = viewOf(core, auth, s);
      views.set(s.className, view);
    }
    if (view.unqueryable.has(field)) {
      throw new BdsError(
        ErrorCode.OPERATION_FORBIDDEN,
        `This user is not allowed to query ${field} on class ${s.className}.`,
      );
    }
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
        // Decided before the class is looked up: a master-only class answers the same whether it exists.
        const verdict = reachedClassVerdict(core, auth, node.query.className, 'find');
        if (!verdict.allowed) raise(verdict);
        const inner = core.schemas.get(node.query.className);
        if (!inner) return node;
        if (node.type === 'select') check(inner, node.key.split('.')[0]);
        const innerWhere = and(await walk(node.query.where, inner), verdict.rowCondition);
        return { ...node, query: { ...node.query, where: innerWhere } };
      }
      case 'relatedTo': {
        const verdict = reachedClassVerdict(core, auth, node.owner.className, 'get');
        if (!verdict.allowed) raise(verdict);
        const owner = core.schemas.get(node.owner.className);
        if (!owner) return node;
        check(owner, node.key);
        const byId: QueryNode = { type: 'compare', path: ['objectId'], op: 'eq', value: node.owner.objectId };
        const readable = await core.store.find(
          owner,
          {
            where: and(byId, verdict.rowCondition),
            order: [],
            limit: 1,
            skip: 0,
            readers: principalsOf(auth),
          },
          core.schemas.lookup,
        );
        return readable.length > 0 ? node : MATCH_NOTHING;
      }
      default:
        check(s, node.path[0]);
        return node;
    }
  };
  return walk(where, schema);
}

/** protectedFields layer on read results (rows are changed in place). */
export function hideProtected(core: Core, auth: Auth, schema: ClassSchema, rows: Row[]): void {
  if (auth.isMaster) return;
  const view = viewOf(core, auth, schema);
  for (const row of rows) for (const field of view.hidden(row)) delete row[field];
}

/**
 * Rows of an included class by id, for include: CLP get of that class (a denial leaves the
 * pointers bare), its ACL and pointer permissions in SQL, then protectedFields.
 */
export async function readIncluded(
  core: Core,
  auth: Auth,
  target: ClassSchema,
  ids: string[],
): Promise<Row[]> {
  const verdict = reachedClassVerdict(core, auth, target.className, 'get');
  if (!verdict.allowed) return [];
  const byIds: QueryNode = { type: 'in', path: ['objectId'], values: ids, not: false };
  const where = and(byIds, verdict.rowCondition);
  const spec = { where, order: [], limit: ids.length, skip: 0, readers: principalsOf(auth) };
  return core.store.find(target, spec, core.schemas.lookup);
}

/**
 * Find and count: CLP find (count for `count=1&limit=0`, both when results and a count are asked
 * for), the protected-field and subquery checks of the where, and the pointer-permission
 * condition, ANDed into `opts.where`. Answers the caller with its roles resolved.
 */
export async function guardFind(
  core: Core,
  auth: Auth,
  className: string,
  opts: { where: QueryNode; order: OrderKey[]; count: boolean; limit: number },
): Promise<Auth> {
  const op: ClpOperation = opts.count && opts.limit === 0 ? 'count' : 'find';
  const { auth: resolved, condition } = await guard(core, auth, className, op);
  if (resolved.isMaster) return resolved;
  let extra = condition;
  if (opts.count && op === 'find') {
    const counting = await guard(core, resolved, className, 'count');
    extra = extra && counting.condition ? and(extra, counting.condition) : (extra ?? counting.condition);
  }
  const schema = core.schemas.get(className);
  if (schema) opts.where = and(await secureQuery(core, resolved, schema, opts.where, opts.order), extra);
  return resolved;
}

/** One row by id for get: ACL and the CLP row condition in SQL. */
export async function readById(
  core: Core,
  auth: Auth,
  schema: ClassSchema,
  objectId: string,
  condition: QueryNode | undefined,
): Promise<Row[]> {
  const byId: QueryNode = { type: 'compare', path: ['objectId'], op: 'eq', value: objectId };
  const spec = { where: and(byId, condition), order: [], limit: 1, skip: 0, readers: principalsOf(auth) };
  return core.store.find(schema, spec, core.schemas.lookup);
}

/**
 * Whether the caller may read one row (CLP get and its row condition, ACL read in SQL). An update
 * returns the values its operations produced (Increment, Add...) only when it may: a write-only
 * row must not be readable through them.
 */
export async function canRead(
  core: Core,
  auth: Auth,
  schema: ClassSchema,
  objectId: string,
): Promise<boolean> {
  if (auth.isMaster) return true;
  const verdict = classVerdict(core, auth, schema.className, 'get');
  if (!verdict.allowed) return false;
  return (await readById(core, auth, schema, objectId, verdict.rowCondition)).length > 0;
}

/** Write responses strip protected fields unless protectedFieldsSaveResponseExempt. */
export function stripWriteResponse<T extends Row>(
  core: Core,
  auth: Auth,
  className: string,
  result: T,
  created?: ParsedWrite,
): T {
  if (auth.isMaster || core.options.protectedFieldsSaveResponseExempt) return result;
  const schema = core.schemas.get(className);
  if (!schema) return result;
  const view = viewOf(core, auth, schema);
  // On create the row is what was written; on update the fields hidden on any row are stripped.
  let row: Row | undefined;
  if (created) {
    row = { objectId: result.objectId };
    for (const w of created.writes) if (w.kind === 'set' && w.subPath.length === 0) row[w.field] = w.value;
  }
  const hidden = row ? view.hidden(row) : [...view.unqueryable];
  for (const field of hidden) {
    if (field !== 'objectId' && field !== 'createdAt' && field !== 'updatedAt') delete result[field];
  }
  return result;
}

/** A non-master write that adds fields to an existing class needs CLP addField. */
export function checkAddField(
  core: Core,
  auth: Auth,
  schema: ClassSchema | undefined,
  parsed: ParsedWrite,
): void {
  if (auth.isMaster || !schema || parsed.types.size === 0) return;
  const verdict = classVerdict(core, auth, schema.className, 'addField');
  if (!verdict.allowed) raise(verdict);
}

/** Rules of built-in classes on create, before the body is parsed (may fill fields in). */
export function prepareCreateBody(auth: Auth, className: string, body: unknown): unknown {
  if (className !== '_Installation' || typeof body !== 'object' || body === null || Array.isArray(body))
    return body;
  const verdict = installationCreateVerdict(auth, body as Record<string, unknown>);
  if (!verdict.allowed) raise(verdict);
  return { ...body, installationId: verdict.installationId };
}

/** Rules of built-in classes on create, after parsing. */
export function checkCreate(className: string, parsed: ParsedWrite): void {
  if (className !== '_Role') return;
  const name = parsed.writes.find((w) => w.field === 'name' && w.kind === 'set');
  const verdict = roleNameVerdict(name && name.kind === 'set' ? name.value : undefined);
  if (!verdict.allowed) raise(verdict);
}

/** Rules of built-in classes on update; runs inside the write's transaction. */
export async function checkUpdate(
  core: Core,
  className: string,
  objectId: string,
  parsed: ParsedWrite,
  body: unknown,
  condition?: QueryNode,
): Promise<void> {
  if (className === '_Role') {
    const verdict = roleUpdateVerdict(parsed.writes.map((w) => w.field));
    if (!verdict.allowed) raise(verdict);
    const added = parsed.relations.filter((r) => r.field === 'roles').flatMap((r) => r.add);
    if (added.length > 0 && (await core.store.rolesContain(added, objectId))) raise(roleCycleDenied());
  }
  if (className === '_Installation') {
    const written = body as Record<string, unknown>;
    if (!('installationId' in written) && !('deviceType' in written)) return;
    const schema = core.schemas.get(className)!;
    const byId: QueryNode = { type: 'compare', path: ['objectId'], op: 'eq', value: objectId };
    // Only a row this caller may update (its installation id): another device's row must answer
    // not-found like a missing one, not reveal its stored id fields through 136.
    const spec = { where: and(byId, condition), order: [], limit: 1, skip: 0, readers: null };
    const [stored] = await core.store.find(schema, spec, core.schemas.lookup);
    if (!stored) return; // the update itself answers not-found
    const verdict = installationImmutableVerdict(stored, written);
    if (!verdict.allowed) raise(verdict);
  }
}

/** Whether a write to this class must run in a transaction (its checks read what it changes). */
export const needsTransaction = (className: string) => className === '_Role' || className === '_Installation';

/** After a committed change to `_Role` (rows or relations): roles are resolved afresh. */
export function afterWrite(core: Core, className: string): void {
  if (className === '_Role') roleResolver(core.store).invalidate();
}
