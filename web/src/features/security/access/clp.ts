/**
 * Pure logic of the class access editor: reading and changing a class's classLevelPermissions
 * (docs/protocol.md#access-control), the changes in words, and the dangerous-setting warnings.
 * The service decides access (server/src/access/class.ts); this only edits the document.
 */

import { isObject } from '@bds/client/protocol';
import type { OperationRule, ProbeVerdict, ProtectedGroup } from '../../../lib/security-api.ts';

export type Clp = Record<string, unknown>;
export type ProtectedFields = Record<string, string[]>;

export const CLP_OPERATIONS = ['find', 'get', 'count', 'create', 'update', 'delete', 'addField'] as const;
export type ClpOperation = (typeof CLP_OPERATIONS)[number];

const READS: readonly ClpOperation[] = ['find', 'get', 'count'];
const DESTRUCTIVE: readonly ClpOperation[] = ['create', 'update', 'delete'];

/** The keys of an operation's entry that are not principals. */
const ENTRY_SETTINGS = new Set(['requiresAuthentication', 'pointerFields']);

/** An operation's entry; `undefined` when the class has none (the operation is then public). */
export function entryOf(clp: Clp, op: ClpOperation): Record<string, unknown> | undefined {
  const e = clp[op];
  if (e === undefined) return undefined;
  return isObject(e) ? e : {};
}

/** Does the entry grant `principal` (`*`, a user id or `role:Name`)? No entry means public. */
export function grants(clp: Clp, op: ClpOperation, principal: string): boolean {
  const e = entryOf(clp, op);
  if (e === undefined) return principal === '*';
  return e[principal] === true;
}

export const requiresAuthentication = (clp: Clp, op: ClpOperation): boolean =>
  entryOf(clp, op)?.requiresAuthentication === true;

export function pointerFieldsOf(clp: Clp, op: ClpOperation): string[] {
  const v = entryOf(clp, op)?.pointerFields;
  return Array.isArray(v) ? v.filter((f): f is string => typeof f === 'string') : [];
}

export function userFieldsOf(clp: Clp, key: 'readUserFields' | 'writeUserFields'): string[] {
  const v = clp[key];
  return Array.isArray(v) ? v.filter((f): f is string => typeof f === 'string') : [];
}

export function protectedFieldsOf(clp: Clp): ProtectedFields {
  const raw = clp.protectedFields;
  const out: ProtectedFields = {};
  if (!isObject(raw)) return out;
  for (const [pattern, fields] of Object.entries(raw)) {
    out[pattern] = Array.isArray(fields) ? fields.filter((f): f is string => typeof f === 'string') : [];
  }
  return out;
}

/** Every principal named in any operation's entry (`*` first, then roles, then user ids). */
export function principalsOf(clp: Clp): string[] {
  const found = new Set<string>(['*']);
  for (const op of CLP_OPERATIONS) {
    for (const [k, v] of Object.entries(entryOf(clp, op) ?? {})) {
      if (!ENTRY_SETTINGS.has(k) && v === true) found.add(k);
    }
  }
  const rank = (p: string) => (p === '*' ? 0 : p.startsWith('role:') ? 1 : 2);
  return [...found].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

/** The entry of `op` made explicit (a missing entry is public: `{ '*': true }`), copied. */
function explicitEntry(clp: Clp, op: ClpOperation): Record<string, unknown> {
  const e = entryOf(clp, op);
  return e === undefined ? { '*': true } : { ...e };
}

/**
 * The document the console sends: every operation and protectedFields named, each as it reads now.
 * The service stores an operation a saved document leaves out as master-only, so a document stored
 * before that rule (read with a missing entry public) is sent with the entry made explicit.
 */
export function completeClp(clp: Clp): Clp {
  const whole: Clp = { ...clp };
  for (const op of CLP_OPERATIONS) whole[op] = explicitEntry(clp, op);
  whole.protectedFields = protectedFieldsOf(clp);
  return whole;
}

/** `clp` with `principal` granted (or not) `op`. */
export function setGrant(clp: Clp, op: ClpOperation, principal: string, on: boolean): Clp {
  const e = explicitEntry(clp, op);
  if (on) e[principal] = true;
  else delete e[principal];
  return { ...clp, [op]: e };
}

export function setRequiresAuthentication(clp: Clp, op: ClpOperation, on: boolean): Clp {
  const e = explicitEntry(clp, op);
  if (on) e.requiresAuthentication = true;
  else delete e.requiresAuthentication;
  return { ...clp, [op]: e };
}

export function setPointerField(clp: Clp, op: ClpOperation, field: string, on: boolean): Clp {
  const e = explicitEntry(clp, op);
  const fields = new Set(pointerFieldsOf(clp, op));
  if (on) fields.add(field);
  else fields.delete(field);
  if (fields.size) e.pointerFields = [...fields];
  else delete e.pointerFields;
  return { ...clp, [op]: e };
}

export function setUserField(
  clp: Clp,
  key: 'readUserFields' | 'writeUserFields',
  field: string,
  on: boolean,
): Clp {
  const fields = new Set(userFieldsOf(clp, key));
  if (on) fields.add(field);
  else fields.delete(field);
  const next = { ...clp };
  if (fields.size) next[key] = [...fields];
  else delete next[key];
  return next;
}

/** Removes a principal from every operation (a column of the matrix). */
export function removePrincipal(clp: Clp, principal: string): Clp {
  let next = clp;
  for (const op of CLP_OPERATIONS)
    if (grants(next, op, principal)) next = setGrant(next, op, principal, false);
  return next;
}

export function setProtectedFields(clp: Clp, patterns: ProtectedFields): Clp {
  return { ...clp, protectedFields: patterns };
}

/** How a principal or pattern reads for people; `names` maps user ids to usernames. */
export function principalLabel(principal: string, names: Record<string, string> = {}): string {
  if (principal === '*') return 'the public';
  if (principal === 'authenticated') return 'authenticated users';
  if (principal.startsWith('role:')) return `role ${principal.slice(5)}`;
  if (principal.startsWith('userField:')) return `users ${principal.slice(10)} points at`;
  const name = names[principal];
  return name ? `user ${name}` : `user ${principal}`;
}

const sameJson = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * The differences between two CLPs in words, one line per change, in a stable order:
 * operations, user fields, then protected fields.
 */
export function describeClpChanges(before: Clp, after: Clp, names: Record<string, string> = {}): string[] {
  const lines: string[] = [];
  for (const op of CLP_OPERATIONS) {
    const b = entryOf(before, op);
    const a = entryOf(after, op);
    if (sameJson(b ?? { '*': true }, a ?? { '*': true })) continue;
    const principals = new Set([...principalsOf(before), ...principalsOf(after)]);
    for (const p of principals) {
      const was = grants(before, op, p);
      const now = grants(after, op, p);
      if (was !== now)
        lines.push(`${op}: ${principalLabel(p, names)} ${now ? 'may now' : 'may no longer'} ${op}`);
    }
    const ra = requiresAuthentication(after, op);
    if (requiresAuthentication(before, op) !== ra) {
      lines.push(`${op}: requiresAuthentication ${ra ? 'turned on' : 'turned off'}`);
    }
    const pb = pointerFieldsOf(before, op);
    const pa = pointerFieldsOf(after, op);
    for (const f of pa) if (!pb.includes(f)) lines.push(`${op}: users that ${f} points at may now ${op}`);
    for (const f of pb)
      if (!pa.includes(f)) lines.push(`${op}: users that ${f} points at may no longer ${op}`);
  }
  for (const key of ['readUserFields', 'writeUserFields'] as const) {
    const b = userFieldsOf(before, key);
    const a = userFieldsOf(after, key);
    for (const f of a) if (!b.includes(f)) lines.push(`${key}: ${f} added`);
    for (const f of b) if (!a.includes(f)) lines.push(`${key}: ${f} removed`);
  }
  const pfb = protectedFieldsOf(before);
  const pfa = protectedFieldsOf(after);
  for (const pattern of new Set([...Object.keys(pfb), ...Object.keys(pfa)])) {
    const b = pfb[pattern];
    const a = pfa[pattern];
    if (b === undefined && a !== undefined) {
      lines.push(`protectedFields: pattern ${pattern} added, hiding [${a.join(', ')}]`);
    } else if (a === undefined && b !== undefined) {
      lines.push(`protectedFields: pattern ${pattern} removed (it hid [${b.join(', ')}])`);
    } else if (a && b && !sameJson([...a].sort(), [...b].sort())) {
      lines.push(`protectedFields: ${pattern} now hides [${a.join(', ')}] (was [${b.join(', ')}])`);
    }
  }
  return lines;
}

/** Field names that look like an email address or a secret token. */
const SENSITIVE_NAME = /e-?mail|token|secret|password|api_?key|credential/i;

export interface Warning {
  id: string;
  text: string;
}

/** Is `op` open to anonymous callers (application keys only)? */
const openToAnonymous = (clp: Clp, op: ClpOperation): boolean =>
  grants(clp, op, '*') && !requiresAuthentication(clp, op);

/**
 * Settings that open the class wider than most apps want; `fields` are the class's field names.
 * Operations the CLP cannot open to anonymous callers (`fixed`, from the service's rules: a fixed
 * rule, or a built-in rule that refuses them first) are left out.
 */
export function dangerousSettings(
  className: string,
  clp: Clp,
  fields: readonly string[],
  fixed: ReadonlySet<string> = new Set(),
): Warning[] {
  const out: Warning[] = [];
  for (const op of DESTRUCTIVE) {
    if (!fixed.has(op) && openToAnonymous(clp, op)) {
      out.push({
        id: `public-${op}`,
        text: `Anyone with the application keys may ${op} rows of ${className} (public ${op}).`,
      });
    }
  }
  const addField = entryOf(clp, 'addField');
  if (
    !fixed.has('addField') &&
    (addField === undefined || Object.entries(addField).some(([k, v]) => k !== 'pointerFields' && v === true))
  ) {
    out.push({
      id: 'addField-open',
      text: `Clients may add fields to ${className} (addField is not master-key only).`,
    });
  }
  const readableByAll = READS.filter((op) => op !== 'count' && !fixed.has(op) && openToAnonymous(clp, op));
  if (readableByAll.length > 0) {
    const hiddenFromPublic = new Set(protectedFieldsOf(clp)['*'] ?? []);
    const exposed = fields.filter((f) => SENSITIVE_NAME.test(f) && !hiddenFromPublic.has(f));
    if (exposed.length > 0) {
      out.push({
        id: 'sensitive-readable',
        text: `${className} is readable by everyone (public ${readableByAll.join(', ')}) and holds ${exposed.join(', ')}, which look like emails or secrets: protect them under * or restrict reads.`,
      });
    }
  }
  return out;
}

/** Why a field is hidden or shown, from the groups that apply to the viewer (the intersection rule). */
export function fieldVerdict(
  field: string,
  hidden: readonly string[],
  groups: readonly ProtectedGroup[],
): string {
  const listing = groups.filter((g) => g.fields.includes(field)).map((g) => g.pattern);
  if (hidden.includes(field)) return `hidden: every group that applies lists it (${listing.join(', ')})`;
  if (listing.length === 0) return 'visible: no group that applies lists it';
  const notListing = groups.filter((g) => !g.fields.includes(field)).map((g) => g.pattern);
  return `visible: ${listing.join(', ')} list it, but ${notListing.join(', ')} does not (only fields every group lists are hidden)`;
}

const MASTER_KEY_REQUIRED = 'unauthorized: master key is required';

/** A probe's verdict in a few words: "master key only", "allowed on some rows", "refused (code 119)". */
function verdictWords(v: ProbeVerdict): string {
  if (v.allowed) return v.onSomeRows ? 'allowed on the rows the rule names' : 'allowed';
  if (v.message === MASTER_KEY_REQUIRED) return 'master key only';
  return `refused (${v.message ?? 'refused'}, code ${v.code})`;
}

/**
 * What the service does for an operation, in words, from its rules (POST /security/rules):
 * "master key only", or what anonymous callers and signed-in users get when they differ.
 */
export function ruleWords(rule: OperationRule): string {
  const anonymous = verdictWords(rule.anonymous);
  const signedIn = verdictWords(rule.signedIn);
  if (anonymous === signedIn) return anonymous === 'allowed' ? 'allowed for everyone' : anonymous;
  return `anonymous callers: ${anonymous}; signed-in users: ${signedIn}`;
}
