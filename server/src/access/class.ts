import { isObject } from '@bds/client/protocol';
import { type Caller, roleChain } from '../kernel/caller.ts';
import { ErrorCode } from '../kernel/errors.ts';
import type { WriteSource } from '../kernel/events.ts';
import type { QueryNode } from '../kernel/query.ts';
import { type CLP_OPERATIONS, type ClassSchema, MASTER_ONLY_CLASSES } from '../kernel/schema.ts';
import { allow, deny, MASTER_ONLY_RULE, type Verdict } from './verdict.ts';

/** An operation a class-level permission governs (kernel/schema.ts CLP_OPERATIONS, the one list). */
export type ClassOperation = (typeof CLP_OPERATIONS)[number];

const READ_OPERATIONS = new Set<ClassOperation>(['find', 'get', 'count']);
const ROW_WRITES = new Set<ClassOperation>(['create', 'update', 'delete']);

/** Classes whose rows a non-master caller writes through the account rules only (users/service.ts). */
const ACCOUNT_CLASSES = new Set(['_User', '_Session']);

export const permissionDenied = (op: string, className: string) =>
  `Permission denied for action ${op} on class ${className}.`;
export const NEEDS_AUTHENTICATION = 'Permission denied, user needs to be authenticated.';
export const MASTER_KEY_REQUIRED = 'unauthorized: master key is required';
export const SESSION_REQUIRED = 'Session token required: send X-Backend-Session-Token.';

/** A condition that matches no row (an installation update without an installation id). */
export const MATCH_NOTHING: QueryNode = { type: 'in', path: ['objectId'], values: [], not: false };

/** The facts the class-level decision needs; nothing is looked up. */
export interface ClassFacts {
  className: string;
  /** The class's schema (its CLP), or undefined when the class does not exist. */
  schema: Pick<ClassSchema, 'className' | 'classLevelPermissions'> | undefined;
  op: ClassOperation;
  caller: Caller;
  /** Reached from another class's query (include, subquery, $relatedTo) rather than addressed. */
  reached?: boolean;
  /** The row an update or delete names, when it names one (`_User`'s own-account rule needs it). */
  objectId?: string;
  /**
   * Where a write entered (the write pipeline's source). A non-master caller writes `_User` and
   * `_Session` rows through the account rules only (source `account`: sign-up, PUT and DELETE
   * /users/<id>, DELETE /sessions/<id>, where every REST route of those classes leads, batch
   * members included); any other writer of them (cloud code's `api.asCaller`) is refused. Left out,
   * the question is about a request as the REST routes make it (explanations, rules, impact).
   */
  source?: WriteSource;
}

const masterOnly = (reason: string) =>
  deny('system', MASTER_ONLY_RULE, ErrorCode.OPERATION_FORBIDDEN, MASTER_KEY_REQUIRED, reason);

/**
 * The class-level layer, the one decider of "may this caller do `op` on this class at all": the
 * built-in classes' own rules (docs/protocol.md#built-in-classes), then the class-level permissions.
 * An allowance may carry a row condition.
 */
export function decideClass(facts: ClassFacts): Verdict {
  const { className, op, caller } = facts;
  if (caller.isMaster) return allow('master', 'master', 'the master key bypasses class-level permissions');
  if (MASTER_ONLY_CLASSES.has(className) || className.startsWith('_Join:')) {
    return masterOnly(`${className} is master-only`);
  }
  if (ACCOUNT_CLASSES.has(className) && ROW_WRITES.has(op) && facts.source && facts.source !== 'account') {
    return deny(
      'system',
      'system.accountRules',
      ErrorCode.OPERATION_FORBIDDEN,
      permissionDenied(op, className),
      `${className} rows are written through the account routes only (sign-up, /users/<id>, /sessions/<id>), not by a ${facts.source} write`,
    );
  }
  if (className === '_Session') return sessionRule(facts);
  if (className === '_User' && (op === 'update' || op === 'delete')) return userRowRule(facts, op);
  if (className === '_Installation') {
    if (op === 'find' || op === 'delete') return masterOnly(`${op} on _Installation is master-only`);
    if (op === 'create') {
      return allow('system', 'system.installation', 'installations are created by their device');
    }
    if (op === 'update') {
      const id = caller.installationId;
      return allow(
        'system',
        'system.installation',
        'an installation is updated by the device whose X-Backend-Installation-Id it holds',
        {
          condition: id ? { type: 'compare', path: ['installationId'], op: 'eq', value: id } : MATCH_NOTHING,
        },
      );
    }
  }
  if (!facts.schema) return allow('clp', 'clp.noClass', `${className} does not exist yet`);
  return decideClp(facts.schema, op, caller);
}

/** Surfaces only the master key reaches (docs/protocol.md#routes, auth "master"), each named in words. */
const SURFACE_NAMES = {
  schema: 'changing a class schema',
  schemaRead: 'reading class schemas',
  config: 'changing the config',
  purge: 'purging a class',
  sessionWrite: 'creating or changing a session directly',
  loginAs: 'making a session for a user (loginAs)',
  hooks: 'managing webhooks',
  liveTrace: 'reading the realtime delivery trace',
  liveWindow: 'reading the realtime resume window',
  cloudCode: 'describing the cloud code',
  devMailbox: 'reading the dev mailbox',
  fileDelete: 'deleting a file',
  fileOrphans: 'listing files no row references',
  fileForeign: 'listing File values that name no stored file',
  push: 'sending a push',
  analytics: 'reading analytics',
  aggregate: 'aggregating a class',
  security: 'explaining or evaluating access',
  restore: 'restoring rows from an export',
  serverOptions: "reading the service's options",
  performance: 'reading query performance or changing automatic indexes',
  importFromParse: 'importing an app from parse-server',
  history: 'reading or reverting the row history',
  logs: 'reading the request logs',
} as const;

export type MasterSurface = keyof typeof SURFACE_NAMES;

/**
 * The decider of the master-only surfaces that are not rows of a class: schemas, config updates,
 * purge, direct session writes, webhooks, the realtime trace, files administration, push,
 * analytics, aggregation, the security explanations. Only the master key passes; any other caller
 * is refused as on every master-only surface (119 `unauthorized: master key is required`, HTTP 403).
 */
export function decideMasterSurface(caller: Caller, surface: MasterSurface, className?: string): Verdict {
  const what = `${SURFACE_NAMES[surface]}${className ? ` (${className})` : ''}`;
  if (caller.isMaster) return allow('master', 'master', `${what} is allowed with the master key`);
  return masterOnly(`${what} is master-only`);
}

/** `_Session`: never reachable from other queries; a user reads and deletes only their own sessions. */
function sessionRule(facts: ClassFacts): Verdict {
  const { op, caller } = facts;
  if (facts.reached) {
    return deny(
      'system',
      'system.session',
      ErrorCode.OPERATION_FORBIDDEN,
      permissionDenied(op, '_Session'),
      'sessions are not reachable from other queries',
    );
  }
  if (op === 'create' || op === 'update' || op === 'addField') {
    return masterOnly('sessions are created by sign-up and login; only the master key writes them');
  }
  if (!caller.user) {
    return deny(
      'system',
      'system.session',
      ErrorCode.INVALID_SESSION_TOKEN,
      SESSION_REQUIRED,
      'sessions are only visible to their user',
    );
  }
  const own = pointsAtUser(['user'], caller.user.objectId);
  const clp = facts.schema ? decideClp(facts.schema, op, caller) : undefined;
  if (clp && !clp.allowed) return clp;
  return allow('system', 'system.session', 'a user sees and revokes only their own sessions', {
    condition: clp?.condition ? { type: 'and', children: [own, clp.condition] } : own,
  });
}

/**
 * `_User`'s row rule: only the row's own user, signed in, may update or delete it (the master key
 * aside). A refusal is 206 naming the row; without a row (a class's rules) it names none. The one
 * decider of it: `decideClass` asks it before the CLP, and the account rules ask it before they
 * look at the body (users/account-update.ts, through data/authorize.ts `demandOwnAccount`).
 */
export function decideOwnAccount(op: 'update' | 'delete', caller: Caller, objectId?: string): Verdict {
  if (caller.isMaster) return allow('master', 'master', 'the master key may change any _User row');
  const rule = `only the user whose row it is (signed in with their session) may ${op} a _User row`;
  const self = caller.user?.objectId;
  if (self === undefined || (objectId !== undefined && objectId !== self)) {
    return deny(
      'system',
      'system.ownAccount',
      ErrorCode.SESSION_MISSING,
      `Insufficient auth to ${op} user ${objectId ?? '<id>'}.`,
      rule,
    );
  }
  return allow('system', 'system.ownAccount', rule, {
    condition: { type: 'compare', path: ['objectId'], op: 'eq', value: self },
  });
}

/** `_User` update and delete: the own-account rule, then the CLP (both must allow). */
function userRowRule(facts: ClassFacts, op: 'update' | 'delete'): Verdict {
  const own = decideOwnAccount(op, facts.caller, facts.objectId);
  if (!own.allowed || !facts.schema) return own;
  const clp = decideClp(facts.schema, op, facts.caller);
  if (!clp.allowed) return clp;
  const condition = clp.condition
    ? { type: 'and' as const, children: [own.condition!, clp.condition] }
    : own.condition;
  return allow('system', own.rule, `${own.reason}; ${clp.reason}`, {
    ...(clp.entry !== undefined ? { entry: clp.entry } : {}),
    ...(clp.roleChain ? { roleChain: clp.roleChain } : {}),
    condition,
  });
}

/** A condition that a row's pointer (or array of pointers) field points at the user. */
export function pointsAtUser(fields: readonly string[], userId: string): QueryNode {
  const pointer = { __type: 'Pointer', className: '_User', objectId: userId };
  const children: QueryNode[] = fields.map((f) => ({ type: 'compare', path: [f], op: 'eq', value: pointer }));
  return children.length === 1 ? children[0]! : { type: 'or', children };
}

/**
 * Class-level permissions for one operation. An operation without an entry is public: only a
 * document stored by an earlier version can lack one, and it is read as that version enforced it
 * (a saved document names every operation, schema/registry.ts `parseClp`). In order:
 * requiresAuthentication (an anonymous caller is refused with 101 before anything else, `*`
 * included: docs/protocol.md#access-control), `*`, any authenticated user under
 * requiresAuthentication, the caller's user id and roles, then pointer permissions (`pointerFields`, `readUserFields` for
 * reads, `writeUserFields` for writes), which allow with a row condition.
 */
export function decideClp(
  schema: Pick<ClassSchema, 'className' | 'classLevelPermissions'>,
  op: ClassOperation,
  caller: Caller,
): Verdict {
  if (caller.isMaster) return allow('master', 'master', 'the master key bypasses class-level permissions');
  const { className } = schema;
  const clp = schema.classLevelPermissions ?? {};
  const perms = clp[op];
  if (perms === undefined) {
    return allow('clp', 'clp.noEntry', `${op} has no class-level permission entry, so it is public`);
  }
  const entry = isObject(perms) ? perms : {};
  if (entry.requiresAuthentication === true && !caller.user) {
    return deny(
      'clp',
      'clp.requiresAuthentication',
      ErrorCode.OBJECT_NOT_FOUND,
      NEEDS_AUTHENTICATION,
      `${op} on ${className} requires an authenticated user and no session token was sent`,
      { entry: 'requiresAuthentication' },
    );
  }
  if (entry['*'] === true)
    return allow('clp', 'clp.public', `${op} on ${className} is public`, { entry: '*' });
  if (entry.requiresAuthentication === true) {
    return allow('clp', 'clp.authenticated', `${op} on ${className} is open to every authenticated user`, {
      entry: 'requiresAuthentication',
    });
  }
  for (const principal of caller.principals) {
    if (principal === '*' || entry[principal] !== true) continue;
    const role = principal.startsWith('role:') ? principal.slice(5) : undefined;
    return allow('clp', 'clp.principal', `${op} on ${className} is granted to ${principal}`, {
      entry: principal,
      ...(role ? { roleChain: roleChain(caller, role) } : {}),
    });
  }
  const denied = (reason: string) =>
    deny('clp', 'clp.none', ErrorCode.OPERATION_FORBIDDEN, permissionDenied(op, className), reason);
  if (op === 'addField') return denied(`no addField grant on ${className} matches the caller`);
  const userFields = clp[READ_OPERATIONS.has(op) ? 'readUserFields' : 'writeUserFields'];
  const fields = [
    ...(Array.isArray(entry.pointerFields) ? entry.pointerFields : []),
    ...(Array.isArray(userFields) ? userFields : []),
  ].filter((f): f is string => typeof f === 'string');
  if (fields.length > 0) {
    // A new row cannot point at anyone yet: pointer permissions never grant create.
    if (op === 'create') return denied(`pointer permissions never grant create on ${className}`);
    if (!caller.user)
      return denied(`${op} on ${className} is granted through pointer fields, and no user is signed in`);
    const unique = [...new Set(fields)];
    return allow(
      'clp',
      'clp.pointer',
      `${op} on ${className} is granted on rows whose ${unique.join(' or ')} points at the caller`,
      {
        entry: unique.map((f) => `pointer:${f}`).join(','),
        condition: pointsAtUser(unique, caller.user.objectId),
      },
    );
  }
  return denied(`no ${op} grant on ${className} matches the caller`);
}
