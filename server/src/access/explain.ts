import { isObject } from '@bds/client/protocol';
import { type Caller, makeCaller, roleChain } from '../kernel/caller.ts';
import { ErrorCode } from '../kernel/errors.ts';
import type { QueryNode } from '../kernel/query.ts';
import type { Row, WireAcl } from '../kernel/records.ts';
import { CLP_OPERATIONS, type ClassSchema } from '../kernel/schema.ts';
import { compileMatcher } from '../query/match.ts';
import { decideAcl } from './acl.ts';
import { type ClassFacts, type ClassOperation, decideClass } from './class.ts';
import { explainProtected, type MatchedGroup, protectedView } from './protected.ts';
import type { Layer, Verdict } from './verdict.ts';

/**
 * The explanation of one access question ("may this viewpoint do `operation` on this class, this
 * row?"), layer by layer in the order of access control: the class layer (built-in rules, CLP), the ACL, then
 * protectedFields. Every verdict comes from the deciders enforcement asks (`decideClass`,
 * `decideAcl`, `protectedView`), in the order the data layer asks them; nothing here decides a
 * rule, it only puts the verdicts side by side and words what would change them.
 */

/** The viewpoint as the answer names it (the caller is built from it by the data layer). */
export interface ViewpointInfo {
  kind: 'user' | 'anonymous' | 'roles';
  userId?: string;
  username?: string;
}

export interface ExplainFacts {
  operation: ClassOperation;
  className: string;
  /** The class's schema, as cached (the data layer refuses an unknown class before asking). */
  schema: ClassSchema;
  caller: Caller;
  viewpoint: ViewpointInfo;
  /** The objectId asked about, if any, and the row as stored (`null`: no such row). */
  objectId?: string;
  row?: Row | null;
  /** For create and update: fields the proposed body would add to the schema. */
  addsFields?: readonly string[];
  /** For create and update: the protocol error validating the proposed body answers, if any. */
  invalidBody?: { code: number; message: string };
  /** For create: the proposed body (protectedFields of the new row are worked out on it). */
  body?: Row;
  /** The service's option `protectedFieldsOwnerExempt`. */
  ownerExempt: boolean;
}

export interface LayerReport {
  layer: 'clp' | 'acl' | 'protectedFields';
  /** The operation this layer was asked about, when it is not the explained one (addField of a write). */
  operation?: ClassOperation;
  allowed?: boolean;
  /** Which layer's decider answered (`system` for the built-in classes' own rules, `master`). */
  decidedBy?: Layer;
  rule?: string;
  entry?: string;
  roleChain?: string[];
  reason: string;
  skipped: boolean;
  hidden?: string[];
  groups?: MatchedGroup[];
}

export interface Explanation {
  allowed: boolean;
  decidedBy: Layer;
  code?: number;
  message?: string;
  viewpoint: ViewpointInfo & { roles: Array<{ name: string; chain: string[] }> };
  layers: LayerReport[];
  toAllow: string[];
}

const READS = new Set<ClassOperation>(['find', 'get', 'count']);
const NOT_FOUND = { code: ErrorCode.OBJECT_NOT_FOUND, message: 'Object not found.' };

const report = (v: Verdict, operation?: ClassOperation): LayerReport => ({
  layer: 'clp',
  ...(operation ? { operation } : {}),
  allowed: v.allowed,
  decidedBy: v.layer,
  rule: v.rule,
  ...(v.entry !== undefined ? { entry: v.entry } : {}),
  ...(v.roleChain ? { roleChain: v.roleChain } : {}),
  reason: v.reason,
  skipped: false,
});

const skipped = (layer: LayerReport['layer'], reason: string): LayerReport => ({
  layer,
  reason,
  skipped: true,
});

/** Whether a row meets a class-level row condition (pointer permissions, an installation's own row). */
function meets(condition: QueryNode | undefined, schema: ClassSchema, row: Row): boolean {
  return condition === undefined || compileMatcher(condition, schema)(row);
}

export function explainAccess(facts: ExplainFacts): Explanation {
  const { operation: op, className, schema, caller } = facts;
  const viewpoint = {
    ...facts.viewpoint,
    roles: caller.roles.map((name) => ({ name, chain: roleChain(caller, name) })),
  };
  const layers: LayerReport[] = [];
  const toAllow: string[] = [];
  const who = describeViewpoint(facts.viewpoint, caller);
  // A find or count that names a row answers 200 whether the row is in it or not: only whether
  // that row is left out is explained, with no error code.
  let rowStage = false;
  const refuse = (
    decidedBy: Layer,
    error: { code?: number; message?: string },
    ...why: string[]
  ): Explanation => {
    toAllow.push(...why);
    const answersError = !(rowStage && (op === 'find' || op === 'count'));
    return {
      allowed: false,
      decidedBy,
      ...(answersError ? { code: error.code, message: error.message } : {}),
      viewpoint,
      layers,
      toAllow,
    };
  };
  const pfPending = 'the request is refused before protectedFields apply';

  // 1. The class layer: the verdict the data layer asks first, for the operation itself.
  const cls = decideClass({ className, schema, op, caller, objectId: facts.objectId });
  layers.push(report(cls));
  if (!cls.allowed) {
    layers.push(skipped('acl', 'the class layer refused the request, so no row ACL is checked'));
    layers.push(skipped('protectedFields', pfPending));
    return refuse(cls.layer, cls, ...classRemedies(cls, facts, who));
  }

  if (op === 'addField') {
    layers.push(skipped('acl', 'adding a field touches no row, so no ACL applies'));
    layers.push(skipped('protectedFields', 'adding a field shows no row'));
    return allowedAnswer(cls.layer, viewpoint, layers);
  }

  // 2. A write's body is validated before any row is touched, addField included.
  if (op === 'create' || op === 'update') {
    if (facts.invalidBody) {
      layers.push(skipped('acl', 'the proposed body is refused before any row is touched'));
      layers.push(skipped('protectedFields', pfPending));
      return refuse('system', facts.invalidBody, `Fix the proposed body: ${facts.invalidBody.message}`);
    }
    if (facts.addsFields?.length && !caller.isMaster) {
      const add = decideClass({ className, schema, op: 'addField', caller });
      layers.push({
        ...report(add, 'addField'),
        reason: `the body adds ${facts.addsFields.join(', ')}: ${add.reason}`,
      });
      if (!add.allowed) {
        layers.push(skipped('acl', 'the class layer refused adding fields, so no row ACL is checked'));
        layers.push(skipped('protectedFields', pfPending));
        return refuse(
          add.layer,
          add,
          ...classRemedies(add, { ...facts, operation: 'addField' }, who),
          `Or leave ${facts.addsFields.join(', ')} out of the body, or add them to the schema first.`,
        );
      }
    }
  }

  if (op === 'create') {
    layers.push(skipped('acl', 'a new row has no ACL yet: the ACL applies to later reads and writes'));
    layers.push(protectedReport(facts, facts.body ?? {}));
    return allowedAnswer(cls.layer, viewpoint, layers);
  }

  // 3. The row: the ACL (and the class layer's row condition) decide whether it is reached.
  if (facts.objectId === undefined) {
    layers.push(
      skipped(
        'acl',
        'no row was named: a find or count leaves out the rows whose ACL does not grant read, without an error',
      ),
    );
    layers.push(protectedReport(facts, undefined));
    return allowedAnswer(cls.layer, viewpoint, layers);
  }
  const access = READS.has(op) ? 'read' : 'write';
  const row = facts.row;
  rowStage = true;
  if (!row) {
    layers.push({
      layer: 'acl',
      allowed: false,
      rule: 'row.missing',
      reason: `no ${className} row has id ${facts.objectId}`,
      skipped: false,
    });
    layers.push(skipped('protectedFields', pfPending));
    return refuse('system', NOT_FOUND, `Use the id of an existing ${className} row.`);
  }
  if (!caller.isMaster && !meets(cls.condition, schema, row)) {
    const last = layers[layers.length - 1]!;
    last.allowed = false;
    last.reason = `${cls.reason}; this row does not meet that condition`;
    layers.push(skipped('acl', 'the class layer leaves this row out, so its ACL is not reached'));
    layers.push(skipped('protectedFields', pfPending));
    const fields = (cls.entry ?? '')
      .split(',')
      .filter((e) => e.startsWith('pointer:'))
      .map((e) => e.slice('pointer:'.length));
    const remedies = fields.length
      ? [`Set this row's ${fields.join(' or ')} to point at ${who.name}.`]
      : [`Only the rows the class layer names are reachable: ${cls.reason}.`];
    if (fields.length) remedies.push(...grantRemedies(op, className, who));
    return refuse(cls.layer, NOT_FOUND, ...remedies);
  }
  const acl = decideAcl(row.ACL as WireAcl | null | undefined, caller, access);
  layers.push({
    layer: 'acl',
    allowed: acl.allowed,
    decidedBy: acl.layer,
    rule: acl.rule,
    ...(acl.entry !== undefined ? { entry: acl.entry } : {}),
    ...(acl.roleChain ? { roleChain: acl.roleChain } : {}),
    reason: acl.reason,
    skipped: false,
  });
  if (!acl.allowed) {
    layers.push(skipped('protectedFields', pfPending));
    const empty = isObject(row.ACL) && Object.keys(row.ACL).length === 0;
    const remedies = who.principals.map((p) => `Add ${p} to this row's ${access} ACL.`);
    if (empty) remedies.unshift(`This row's ACL is empty (master key only).`);
    return refuse('acl', acl, ...remedies);
  }
  if (op === 'update' || op === 'delete') {
    layers.push(skipped('protectedFields', `protectedFields apply to what is read, not to a ${op}`));
    return allowedAnswer(acl.layer, viewpoint, layers);
  }
  layers.push(protectedReport(facts, row));
  return allowedAnswer(acl.layer, viewpoint, layers);
}

function allowedAnswer(
  decidedBy: Layer,
  viewpoint: Explanation['viewpoint'],
  layers: LayerReport[],
): Explanation {
  return { allowed: true, decidedBy, viewpoint, layers, toAllow: [] };
}

/** The protectedFields layer on a row (or, without one, on a row that points at no one). */
function protectedReport(facts: ExplainFacts, row: Row | undefined): LayerReport {
  const view = protectedView(facts.schema, facts.caller, { ownerExempt: facts.ownerExempt });
  const target = row ?? { objectId: facts.objectId ?? '' };
  const verdict = explainProtected(view, target);
  const note =
    row === undefined && view.fixedHidden === undefined
      ? ' (on a row that does not point at the caller: userField groups and the owner exemption depend on the row)'
      : '';
  return {
    layer: 'protectedFields',
    allowed: true,
    decidedBy: verdict.layer,
    rule: verdict.rule,
    hidden: verdict.hidden,
    groups: view.groups(target),
    reason: verdict.reason + note,
    skipped: false,
  };
}

interface Who {
  /** In words: `user ann (u1)`, `anonymous callers`, `the role set Editors, Viewers`. */
  name: string;
  /** ACL and CLP principals that would name this viewpoint, most specific first. */
  principals: string[];
  signedIn: boolean;
}

function describeViewpoint(vp: ViewpointInfo, caller: Caller): Who {
  const roles = caller.roles.map((r) => `role:${r}`);
  if (caller.isMaster) return { name: 'the master key', principals: [], signedIn: true };
  if (vp.kind === 'anonymous')
    return { name: 'anonymous callers', principals: ['* (the public)'], signedIn: false };
  if (vp.kind === 'roles') {
    const direct = caller.roles.filter((r) => caller.roleVia.get(r) === null);
    return {
      name: `the role set ${direct.join(', ') || '(none)'}`,
      principals: [...(roles.length ? [`${roles.join(' or ')} (roles it holds)`] : []), '* (the public)'],
      signedIn: true,
    };
  }
  const label = `user ${vp.username ?? vp.userId} (${vp.userId})`;
  return {
    name: label,
    principals: [
      `${vp.userId} (${label})`,
      ...(roles.length ? [`${roles.join(' or ')} (roles the user holds)`] : []),
      '* (the public)',
    ],
    signedIn: true,
  };
}

function grantRemedies(op: ClassOperation, className: string, who: Who): string[] {
  return who.principals.map((p) => `Grant ${op} on ${className} to ${p} in the class-level permissions.`);
}

/** In words, the smallest changes that would turn a class-layer refusal into an allowance. */
function classRemedies(v: Verdict, facts: ExplainFacts, who: Who): string[] {
  const { operation: op, className } = facts;
  switch (v.rule) {
    case 'system.masterOnly':
      return [`Only the master key may do this (${v.reason}); no permission change allows it.`];
    case 'system.ownAccount':
      return [`Only the user whose row it is, signed in, or the master key may ${op} this ${className} row.`];
    case 'system.session':
      return who.signedIn
        ? [`Sessions are only reachable by their own user: ${v.reason}.`]
        : ['Sign in: sessions are only visible to their own user.'];
    case 'clp.requiresAuthentication':
      return [
        `Sign in as a user: ${op} on ${className} requires authentication.`,
        `Or remove requiresAuthentication from ${op} in ${className}'s class-level permissions and grant it to * (the public).`,
      ];
    default: {
      if (op === 'create' && v.reason.startsWith('pointer permissions never grant create')) {
        return grantRemedies(op, className, who).map((r) => `Pointer permissions never grant create. ${r}`);
      }
      const remedies = grantRemedies(op, className, who);
      if (!who.signedIn && v.reason.includes('pointer fields')) {
        remedies.unshift(`Sign in as a user that a pointer field of the row points at.`);
      }
      return remedies;
    }
  }
}

/** The user id of the signed-in probe of `classRules`: no objectId looks like it, so no ACL entry or pointer names it. */
const ANY_USER = '(any signed-in user)';

/** One probe's verdict, as `classRules` reports it. */
export interface ProbeVerdict {
  allowed: boolean;
  decidedBy: Layer;
  rule: string;
  reason: string;
  code?: number;
  message?: string;
  /** The allowance holds only on some rows (pointer permissions, an installation's own row). */
  onSomeRows?: boolean;
}

/** The class layer's rule for one operation, as enforcement applies it. */
export interface OperationRule {
  operation: ClassOperation;
  /** No class-level permission can change the outcome: a built-in rule decides it alone. */
  fixed: boolean;
  /** The built-in rule that applies to this operation (with or besides the CLP), if any. */
  builtIn?: { rule: string; reason: string };
  /** With the class's current settings: a caller with application keys only, and a signed-in user without roles. */
  anonymous: ProbeVerdict;
  signedIn: ProbeVerdict;
}

const CLASS_OPERATIONS: readonly ClassOperation[] = CLP_OPERATIONS;

const probeVerdict = (v: Verdict): ProbeVerdict => ({
  allowed: v.allowed,
  decidedBy: v.layer,
  rule: v.rule,
  reason: v.reason,
  ...(v.allowed ? {} : { code: v.code, message: v.message }),
  ...(v.allowed && v.condition ? { onSomeRows: true } : {}),
});

/**
 * The effective class-layer rules of a class, per operation, asked of `decideClass` itself: what
 * anonymous callers and a signed-in user get with the current settings, and whether the CLP can
 * change it at all. An operation is fixed when the decider answers the same for both probes
 * whether the CLP grants the operation to everyone or to no one (a built-in class's own rule
 * decides); its built-in rule is the `system` verdict the decider answers under an open CLP.
 */
export function classRules(
  className: string,
  schema: Pick<ClassSchema, 'className' | 'classLevelPermissions'> | undefined,
): OperationRule[] {
  const probes = [makeCaller({}), makeCaller({ user: { objectId: ANY_USER } })] as const;
  return CLASS_OPERATIONS.map((op) => {
    const withEntry = (entry: Record<string, unknown>) => ({
      className,
      classLevelPermissions: { ...(schema?.classLevelPermissions ?? {}), [op]: entry },
    });
    const decide = (s: ClassFacts['schema'], caller: Caller) =>
      decideClass({ className, schema: s, op, caller });
    const open = probes.map((c) => decide(withEntry({ '*': true }), c));
    const closed = probes.map((c) => decide(withEntry({}), c));
    const fixed = open.every((v, i) => v.allowed === closed[i]!.allowed && v.rule === closed[i]!.rule);
    const system = [...open, ...closed].find((v) => v.layer === 'system');
    const [anonymous, signedIn] = probes.map((c) => probeVerdict(decide(schema, c)));
    return {
      operation: op,
      fixed,
      ...(system ? { builtIn: { rule: system.rule, reason: system.reason } } : {}),
      anonymous: anonymous!,
      signedIn: signedIn!,
    };
  });
}
