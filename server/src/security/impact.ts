import { isObject } from '@bds/client/protocol';
import { type ClassOperation, decideClass, pointsAtUser } from '../access/class.ts';
import { type ProtectedView, protectedView } from '../access/protected.ts';
import { and, rowCondition } from '../data/authorize.ts';
import type { Data } from '../data/data.ts';
import { parseWriteBody } from '../data/write-body.ts';
import { type Caller, makeCaller } from '../kernel/caller.ts';
import { BdsError, ErrorCode, toBdsError } from '../kernel/errors.ts';
import { MATCH_ALL, type QueryNode } from '../kernel/query.ts';
import type { Row, WireAcl } from '../kernel/records.ts';
import { CLP_OPERATIONS, type ClassSchema, MASTER_ONLY_CLASSES } from '../kernel/schema.ts';
import { compileMatcher } from '../query/match.ts';
import { classNotFound } from '../schema/registry.ts';
import type { HeldRole } from '../storage/adapter.ts';
import { type ClassChange, parseDraft } from './impact-draft.ts';
import { checkRoleChanges, impactUsers, margin, roleCandidates, rolesUnderDraft } from './impact-users.ts';

/**
 * The impact of a permission draft (POST /security/impact, docs/security-api.md): who may do
 * what before and after the whole draft (a class's CLP and protectedFields, rows' ACLs, role
 * membership and inheritance), asked of the deciders enforcement asks (`decideClass`, the ACL
 * and class row conditions compiled by the store as every read compiles them, `protectedView`).
 * Nothing here decides a rule: it compares the deciders' answers under the two settings.
 *
 * For each caller (every user, or a uniform sample, and anonymous) and operation, a caller gains
 * when a request it could not make succeeds after the draft, loses when the reverse. The requests
 * compared are the operation on the class itself (find, count, create, addField; get, update and
 * delete on an id that names no row: allowed when the class layer lets it through) and, for find,
 * count, get, update and delete, the operation on each row of the class (in the answer, allowed).
 * A field becomes hidden from a caller when, on some row the caller may read (find or get) both
 * before and after and that holds the field, it was visible and is no longer (visible: the reverse).
 */

const OPERATIONS: readonly ClassOperation[] = CLP_OPERATIONS;
/** Operations that also apply to each row. */
const ROW_OPERATIONS = new Set<ClassOperation>(['find', 'get', 'count', 'update', 'delete']);
const READS: readonly ClassOperation[] = ['find', 'get', 'count'];
const WRITES: readonly ClassOperation[] = ['create', 'update', 'delete'];

/** Users explained one by one up to this many; above, a uniform sample of this many. */
export const IMPACT_EXACT_LIMIT = 10_000;
/** At most this many users are listed per gain or loss. */
const SAMPLE_SIZE = 20;

const not = (node: QueryNode): QueryNode => ({ type: 'nor', children: [node] });
const notIn = (ids: readonly string[]): QueryNode | undefined =>
  ids.length ? { type: 'in', path: ['objectId'], values: [...ids], not: true } : undefined;

export type Sample = { objectId: string; username: string };
export type Shift = 'gains' | 'loses' | 'both' | 'same';

export interface ImpactCounts {
  gain: number;
  lose: number;
  gainSample: Sample[];
  loseSample: Sample[];
}

export interface OperationImpact extends ImpactCounts {
  operation: ClassOperation;
  /** What anonymous callers (application keys only) gain or lose. */
  anonymous: Shift;
}

export interface FieldImpact {
  field: string;
  visibleTo: number;
  hiddenFrom: number;
  visibleToSample: Sample[];
  hiddenFromSample: Sample[];
  anonymous: Shift;
}

export interface ClassImpact {
  className: string;
  anonymous: { read: Shift; write: Shift };
  /** Users who gain (lose) any of find, get, count. */
  read: ImpactCounts;
  /** Users who gain (lose) any of create, update, delete. */
  write: ImpactCounts;
  operations: OperationImpact[];
  fields: FieldImpact[];
}

/** One class as the draft leaves it. */
interface ClassCase {
  stored: ClassSchema;
  before: ClassSchema;
  after: ClassSchema;
  /** Rows whose ACL the draft changes, as stored and as the draft leaves them. */
  rows: Array<{ before: Row; after: Row }>;
  rowIds: string[];
  /** Fields a protectedFields group names, when the draft may change what they hide. */
  fields: string[];
}

interface Gains {
  gain: boolean;
  lose: boolean;
}

export interface ImpactDeps {
  data: Data;
  /** A user as caller, with its roles, exactly as a signed-in request of that user gets it. */
  userCaller: (userId: string) => Promise<Caller>;
  /** Users explained one by one up to this many; above, a uniform sample of this many. */
  exactLimit: number;
}

export async function impactOf(deps: ImpactDeps, raw: unknown) {
  const draft = parseDraft(raw);
  const { data } = deps;
  const { schemas } = data.core;
  const schemaOf = (className: string): ClassSchema => {
    const schema = schemas.get(className);
    if (!schema) throw classNotFound(className);
    return schema;
  };
  const named = draft.className === undefined ? undefined : schemaOf(draft.className);
  const cases: ClassCase[] = [];
  if (named) cases.push(await classCase(data, named, draft.classChanges, draft.roleChanges.length > 0));
  else {
    for (const schema of schemas.all()) {
      if (MASTER_ONLY_CLASSES.has(schema.className) || schema.className.startsWith('_Join:')) continue;
      cases.push(await classCase(data, schema, [], true));
    }
    cases.sort((a, b) => a.stored.className.localeCompare(b.stored.className));
  }

  // Role changes: the users whose roles they may change, with their roles after the draft.
  await checkRoleChanges(data, draft.roleChanges);
  const candidates = await roleCandidates(data, draft.roleChanges);
  const rolesAfter = draft.roleChanges.length
    ? await rolesUnderDraft(data, draft.roleChanges, candidates)
    : new Map<string, HeldRole[]>();
  for (const id of rolesAfter.keys()) candidates.add(id);

  const everyone = draft.classChanges.length > 0;
  const { users, total, population, sampled } = await impactUsers(
    data,
    deps.exactLimit,
    everyone ? undefined : [...candidates].sort(),
  );
  const tally = () => ({
    ops: new Map(OPERATIONS.map((op) => [op, { counts: emptyCounts(), anonymous: 'same' as Shift }])),
    read: emptyCounts(),
    write: emptyCounts(),
    anonymous: { read: 'same' as Shift, write: 'same' as Shift },
    fields: new Map<string, FieldImpact>(),
  });
  const results = cases.map(tally);
  /** Across the classes compared: a caller gains (loses) when it does on some class. */
  const overall = tally();
  cases.forEach((k, i) => {
    for (const f of k.fields) results[i]!.fields.set(f, emptyField(f));
  });

  const ownerExempt = data.core.options.protectedFieldsOwnerExempt;
  const compare = (k: ClassCase, before: Caller, after: Caller) =>
    compareCaller(data, k, before, after, ownerExempt);
  for (const user of users) {
    const id = String(user.objectId);
    const who = { objectId: id, username: String(user.username ?? '') };
    const before = await deps.userCaller(id);
    const held = rolesAfter.get(id);
    const after = held ? makeCaller({ user: { objectId: id }, roles: held }) : before;
    const outcomes = [];
    for (const [i, k] of cases.entries()) {
      const outcome = await compare(k, before, after);
      outcomes.push(outcome.ops);
      record(results[i]!, outcome.ops, who);
      for (const [field, g] of outcome.fields) {
        const f = results[i]!.fields.get(field)!;
        if (g.gain) add(f, 'visibleTo', who);
        if (g.lose) add(f, 'hiddenFrom', who);
      }
    }
    record(overall, anyOf(outcomes), who);
  }
  const anonymousCaller = makeCaller({});
  const anonymousOutcomes = [];
  for (const [i, k] of cases.entries()) {
    const outcome = await compare(k, anonymousCaller, anonymousCaller);
    anonymousOutcomes.push(outcome.ops);
    recordAnonymous(results[i]!, outcome.ops);
    for (const [field, g] of outcome.fields) results[i]!.fields.get(field)!.anonymous = shiftOf(g);
  }
  recordAnonymous(overall, anyOf(anonymousOutcomes));

  const considered = users.length;
  const scale = (n: number) => (sampled ? Math.round((n * population) / considered) : n);
  const scaled = (c: ImpactCounts): ImpactCounts => ({ ...c, gain: scale(c.gain), lose: scale(c.lose) });
  const answer = (r: Tally) => ({
    anonymous: r.anonymous,
    read: scaled(r.read),
    write: scaled(r.write),
    operations: OPERATIONS.map((operation) => {
      const o = r.ops.get(operation)!;
      return { operation, ...scaled(o.counts), anonymous: o.anonymous };
    }),
    fields: [...r.fields.values()].map((f) => ({
      ...f,
      visibleTo: scale(f.visibleTo),
      hiddenFrom: scale(f.hiddenFrom),
    })),
  });
  const classes: ClassImpact[] = cases.map((k, i) => ({
    className: k.stored.className,
    ...answer(results[i]!),
  }));
  const changes = (c: ClassImpact) =>
    c.operations.some((o) => o.gain || o.lose || o.anonymous !== 'same') ||
    c.fields.some((f) => f.visibleTo || f.hiddenFrom || f.anonymous !== 'same');
  const usersAnswer = {
    total,
    considered,
    sampled,
    bound: sampled ? margin(population, considered) : null,
  };
  // The summary: the class named, or every class compared (fields are listed per class only).
  if (named) {
    const { className: _name, ...own } = classes[0]!;
    return { users: usersAnswer, ...own, classes };
  }
  return { users: usersAnswer, ...answer(overall), fields: [], classes: classes.filter(changes) };
}

type Tally = {
  ops: Map<ClassOperation, { counts: ImpactCounts; anonymous: Shift }>;
  read: ImpactCounts;
  write: ImpactCounts;
  anonymous: { read: Shift; write: Shift };
  fields: Map<string, FieldImpact>;
};

/** Per operation, whether some of the outcomes gains (loses) it. */
function anyOf(outcomes: ReadonlyArray<Map<ClassOperation, Gains>>): Map<ClassOperation, Gains> {
  return new Map(
    OPERATIONS.map((op) => [
      op,
      {
        gain: outcomes.some((o) => o.get(op)!.gain),
        lose: outcomes.some((o) => o.get(op)!.lose),
      },
    ]),
  );
}

function record(r: Tally, ops: Map<ClassOperation, Gains>, who: Sample): void {
  for (const op of OPERATIONS) count(r.ops.get(op)!.counts, ops.get(op)!.gain, ops.get(op)!.lose, who);
  const any = (list: readonly ClassOperation[], key: 'gain' | 'lose') => list.some((op) => ops.get(op)![key]);
  count(r.read, any(READS, 'gain'), any(READS, 'lose'), who);
  count(r.write, any(WRITES, 'gain'), any(WRITES, 'lose'), who);
}

function recordAnonymous(r: Tally, ops: Map<ClassOperation, Gains>): void {
  for (const op of OPERATIONS) r.ops.get(op)!.anonymous = shiftOf(ops.get(op)!);
  const any = (list: readonly ClassOperation[]): Gains => ({
    gain: list.some((op) => ops.get(op)!.gain),
    lose: list.some((op) => ops.get(op)!.lose),
  });
  r.anonymous = { read: shiftOf(any(READS)), write: shiftOf(any(WRITES)) };
}

/** The class before and after its changes; the proposed settings are checked as their writes would be. */
async function classCase(
  data: Data,
  schema: ClassSchema,
  changes: readonly ClassChange[],
  rolesChange: boolean,
): Promise<ClassCase> {
  const { schemas } = data.core;
  let after = schema;
  const acls = new Map<string, WireAcl>();
  for (const change of changes) {
    if (change.kind === 'acl') {
      try {
        parseWriteBody({ ACL: change.ACL }, 'update', schema.fields);
      } catch (err) {
        throw toBdsError(err);
      }
      for (const id of change.objectIds) acls.set(id, change.ACL);
      continue;
    }
    const clp =
      change.kind === 'clp'
        ? change.classLevelPermissions
        : { ...after.classLevelPermissions, protectedFields: change.protectedFields };
    // Planned as PUT /schemas would plan it (and refused with the same errors), never applied.
    after = schemas.planUpdate(schema.className, { classLevelPermissions: clp }).schema;
  }
  const rows: ClassCase['rows'] = [];
  for (const [id, acl] of acls) {
    const row = await data.reads.byId(schema, id);
    if (!row) throw new BdsError(ErrorCode.OBJECT_NOT_FOUND, `No ${schema.className} row has id ${id}.`);
    rows.push({ before: row, after: { ...row, ACL: acl } });
  }
  const groupsOf = (s: ClassSchema) => s.classLevelPermissions.protectedFields;
  const fieldsChange = rolesChange || JSON.stringify(groupsOf(schema)) !== JSON.stringify(groupsOf(after));
  const fields = new Set<string>();
  if (fieldsChange) {
    for (const s of [schema, after]) {
      const pf = groupsOf(s);
      if (isObject(pf))
        for (const list of Object.values(pf))
          if (Array.isArray(list)) for (const f of list) fields.add(String(f));
    }
  }
  return { stored: schema, before: schema, after, rows, rowIds: [...acls.keys()], fields: [...fields] };
}

// ---------------------------------------------------------------------------------------------
// One caller, one class: the deciders before and after
// ---------------------------------------------------------------------------------------------

const samePrincipals = (a: Caller, b: Caller) => a.principals.join('\n') === b.principals.join('\n');

async function compareCaller(
  data: Data,
  k: ClassCase,
  before: Caller,
  after: Caller,
  ownerExempt: boolean,
): Promise<{ ops: Map<ClassOperation, Gains>; fields: Map<string, Gains> }> {
  const ops = new Map<ClassOperation, Gains>();
  const fields = new Map<string, Gains>(k.fields.map((f) => [f, { gain: false, lose: false }]));
  // Nothing the deciders look at differs: nothing can change.
  if (k.before === k.after && k.rows.length === 0 && samePrincipals(before, after)) {
    for (const op of OPERATIONS) ops.set(op, { gain: false, lose: false });
    return { ops, fields };
  }
  const { store, schemas } = data.core;
  const exists = async (...conditions: Array<QueryNode | undefined>) => {
    let where: QueryNode = MATCH_ALL;
    for (const c of [...conditions, notIn(k.rowIds)]) where = and(where, c);
    return (await store.find(k.stored, { where, order: [], limit: 1, skip: 0 }, schemas.lookup)).length > 0;
  };
  const meets = (condition: QueryNode | undefined, schema: ClassSchema, row: Row) =>
    condition === undefined || compileMatcher(condition, schema)(row);
  /** The row condition of each operation the class layer allows; `null` where it refuses. */
  const conditions = (schema: ClassSchema, caller: Caller) =>
    new Map(
      OPERATIONS.map((op) => {
        const v = decideClass({ className: schema.className, schema, op, caller });
        return [op, v.allowed ? (rowCondition(v, caller, op) ?? MATCH_ALL) : null] as const;
      }),
    );
  const b = conditions(k.before, before);
  const a = conditions(k.after, after);
  for (const op of OPERATIONS) {
    const cb = b.get(op)!;
    const ca = a.get(op)!;
    const g = { gain: cb === null && ca !== null, lose: cb !== null && ca === null };
    if (ROW_OPERATIONS.has(op) && cb !== null && ca !== null) {
      for (const row of k.rows) {
        const was = meets(cb, k.before, row.before);
        const is = meets(ca, k.after, row.after);
        g.gain ||= !was && is;
        g.lose ||= was && !is;
      }
      if (JSON.stringify(cb) !== JSON.stringify(ca)) {
        g.gain ||= await exists(not(cb), ca);
        g.lose ||= await exists(cb, not(ca));
      }
    }
    ops.set(op, g);
  }
  if (k.fields.length === 0) return { ops, fields };

  // protectedFields: on the rows the caller reads (find or get) both before and after.
  const readable = (c: Map<ClassOperation, QueryNode | null>): QueryNode | null => {
    const ways = [c.get('find'), c.get('get')].filter((x): x is QueryNode => x !== null && x !== undefined);
    return ways.length === 0 ? null : ways.length === 1 ? ways[0]! : { type: 'or', children: ways };
  };
  const readB = readable(b);
  const readA = readable(a);
  if (readB === null || readA === null) return { ops, fields };
  const viewB = protectedView(k.before, before, { ownerExempt });
  const viewA = protectedView(k.after, after, { ownerExempt });
  const mark = (field: string, hiddenBefore: boolean, hiddenAfter: boolean) => {
    const g = fields.get(field)!;
    g.gain ||= hiddenBefore && !hiddenAfter;
    g.lose ||= !hiddenBefore && hiddenAfter;
  };
  for (const row of k.rows) {
    if (!meets(readB, k.before, row.before) || !meets(readA, k.after, row.after)) continue;
    const hb = viewB.hidden(row.before);
    const ha = viewA.hidden(row.after);
    for (const f of k.fields) if (row.after[f] !== undefined) mark(f, hb.includes(f), ha.includes(f));
  }
  for (const part of partitions(k, before.user?.objectId, viewB, viewA, ownerExempt)) {
    const hb = viewB.hidden(part.probe);
    const ha = viewA.hidden(part.probe);
    for (const f of k.fields) {
      const wasHidden = hb.includes(f);
      const isHidden = ha.includes(f);
      const g = fields.get(f)!;
      if (wasHidden === isHidden || (wasHidden ? g.gain : g.lose)) continue;
      const held: QueryNode = { type: 'exists', path: [f], exists: true };
      if (await exists(readB, readA, part.condition, held)) mark(f, wasHidden, isHidden);
    }
  }
  return { ops, fields };
}

/**
 * The rows of a class split by what protectedFields' answer can depend on for this caller: which
 * `userField:` pointers point at the caller, and (the `_User` owner exemption) whether the row is
 * the caller's own. Each part has a probe row the views answer for, and its condition on rows.
 */
function partitions(
  k: ClassCase,
  userId: string | undefined,
  viewB: ProtectedView,
  viewA: ProtectedView,
  ownerExempt: boolean,
): Array<{ probe: Row; condition: QueryNode | undefined }> {
  if (userId === undefined || (viewB.fixedHidden && viewA.fixedHidden))
    return [{ probe: { objectId: '' }, condition: undefined }];
  const pointerFields = new Set<string>();
  for (const s of [k.before, k.after]) {
    const pf = s.classLevelPermissions.protectedFields;
    if (isObject(pf))
      for (const pattern of Object.keys(pf))
        if (pattern.startsWith('userField:')) pointerFields.add(pattern.slice('userField:'.length));
  }
  const fields = [...pointerFields];
  const owners = ownerExempt && k.stored.className === '_User' ? [false, true] : [false];
  const me = { __type: 'Pointer', className: '_User', objectId: userId };
  const out: Array<{ probe: Row; condition: QueryNode | undefined }> = [];
  for (let mask = 0; mask < 2 ** fields.length; mask++) {
    for (const own of owners) {
      const probe: Row = { objectId: own ? userId : '' };
      const children: QueryNode[] = [];
      fields.forEach((f, i) => {
        const points = (mask >> i) & 1;
        if (points) probe[f] = me;
        const test = pointsAtUser([f], userId);
        children.push(points ? test : not(test));
      });
      if (owners.length > 1) {
        const mine: QueryNode = { type: 'compare', path: ['objectId'], op: 'eq', value: userId };
        children.push(own ? mine : not(mine));
      }
      out.push({ probe, condition: children.length ? { type: 'and', children } : undefined });
    }
  }
  return out;
}

const emptyCounts = (): ImpactCounts => ({ gain: 0, lose: 0, gainSample: [], loseSample: [] });
const emptyField = (field: string): FieldImpact => ({
  field,
  visibleTo: 0,
  hiddenFrom: 0,
  visibleToSample: [],
  hiddenFromSample: [],
  anonymous: 'same',
});
const shiftOf = (g: Gains): Shift => (g.gain ? (g.lose ? 'both' : 'gains') : g.lose ? 'loses' : 'same');

function count(c: ImpactCounts, gain: boolean, lose: boolean, who: Sample): void {
  if (gain) {
    c.gain++;
    if (c.gainSample.length < SAMPLE_SIZE) c.gainSample.push(who);
  }
  if (lose) {
    c.lose++;
    if (c.loseSample.length < SAMPLE_SIZE) c.loseSample.push(who);
  }
}

function add(f: FieldImpact, key: 'visibleTo' | 'hiddenFrom', who: Sample): void {
  f[key]++;
  const sample = key === 'visibleTo' ? f.visibleToSample : f.hiddenFromSample;
  if (sample.length < SAMPLE_SIZE) sample.push(who);
}
