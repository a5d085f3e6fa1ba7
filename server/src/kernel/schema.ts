import type { FieldType } from '@bds/client/protocol';
import { type BdsError, incorrectType } from './errors.ts';

export { FIELD_TYPES, type FieldType, SCHEMA_FIELD_TYPES } from '@bds/client/protocol';

export interface FieldDef {
  type: FieldType;
  targetClass?: string;
  /** `Vector` fields: how many numbers each value holds. */
  dimension?: number;
  /** A create must give the field a value (or get its default); an update may not clear it (142). */
  required?: boolean;
  /** The value a create without the field stores (its wire form, checked against the type). */
  defaultValue?: unknown;
}

export type ClassLevelPermissions = Record<string, unknown>;

export interface ClassSchema {
  className: string;
  fields: Record<string, FieldDef>;
  classLevelPermissions: ClassLevelPermissions;
  /** Declared indexes: name -> {field: 1 | -1}. */
  indexes: Record<string, Record<string, 1 | -1>>;
}

/** Fields every class has; the service assigns them. */
export const DEFAULT_FIELDS: Record<string, FieldDef> = {
  objectId: { type: 'String' },
  createdAt: { type: 'Date' },
  updatedAt: { type: 'Date' },
  ACL: { type: 'ACL' },
};

/** Built-in classes whose rows live in tables and can be read through the REST layer. */
export const SYSTEM_CLASS_FIELDS: Record<string, Record<string, FieldDef>> = {
  _User: {
    username: { type: 'String' },
    password: { type: 'String' },
    email: { type: 'String' },
    emailVerified: { type: 'Boolean' },
    authData: { type: 'Object' },
  },
  _Role: {
    name: { type: 'String' },
    users: { type: 'Relation', targetClass: '_User' },
    roles: { type: 'Relation', targetClass: '_Role' },
  },
  _Session: {
    user: { type: 'Pointer', targetClass: '_User' },
    sessionToken: { type: 'String' },
    expiresAt: { type: 'Date' },
    installationId: { type: 'String' },
    createdWith: { type: 'Object' },
  },
  _Installation: {
    installationId: { type: 'String' },
    deviceToken: { type: 'String' },
    channels: { type: 'Array' },
    deviceType: { type: 'String' },
    pushType: { type: 'String' },
    GCMSenderId: { type: 'String' },
    timeZone: { type: 'String' },
    localeIdentifier: { type: 'String' },
    badge: { type: 'Number' },
    appVersion: { type: 'String' },
    appName: { type: 'String' },
    appIdentifier: { type: 'String' },
  },
  // Master-only classes of cloud code (docs/protocol.md#built-in-classes).
  _Hooks: {
    functionName: { type: 'String' },
    className: { type: 'String' },
    triggerName: { type: 'String' },
    url: { type: 'String' },
  },
  _JobStatus: {
    jobName: { type: 'String' },
    source: { type: 'String' },
    status: { type: 'String' },
    message: { type: 'String' },
    params: { type: 'Object' },
    startedAt: { type: 'Date' },
    finishedAt: { type: 'Date' },
    scheduleId: { type: 'String' },
    leaseUntil: { type: 'Date' },
  },
  _JobSchedule: {
    jobName: { type: 'String' },
    cron: { type: 'String' },
    timeZone: { type: 'String' },
    params: { type: 'Object' },
    startAfter: { type: 'Date' },
    catchUp: { type: 'String' },
    enabled: { type: 'Boolean' },
    lastRunAt: { type: 'Date' },
    nextRunAt: { type: 'Date' },
  },
  _PushStatus: {
    pushTime: { type: 'Date' },
    source: { type: 'String' },
    /** The audience's where and the push's data, as JSON text (a where holds `$` keys). */
    query: { type: 'String' },
    channels: { type: 'Array' },
    payload: { type: 'String' },
    expiry: { type: 'Date' },
    status: { type: 'String' },
    numSent: { type: 'Number' },
    numFailed: { type: 'Number' },
    sentPerType: { type: 'Object' },
    failedPerType: { type: 'Object' },
    failureReasons: { type: 'Object' },
    errorMessage: { type: 'String' },
    startedAt: { type: 'Date' },
    finishedAt: { type: 'Date' },
  },
  _Idempotency: {
    reqId: { type: 'String' },
    expire: { type: 'Date' },
  },
};

/** Classes reachable only with the master key (docs/protocol.md#built-in-classes). */
export const MASTER_ONLY_CLASSES = new Set([
  '_JobStatus',
  '_PushStatus',
  '_Hooks',
  '_GlobalConfig',
  '_GraphQLConfig',
  '_JobSchedule',
  '_Audience',
  '_Idempotency',
  '_AnalyticsEvent',
]);

export const CLP_OPERATIONS = ['find', 'get', 'count', 'create', 'update', 'delete', 'addField'] as const;

export function defaultClassLevelPermissions(className?: string): ClassLevelPermissions {
  const clp: ClassLevelPermissions = {};
  for (const op of CLP_OPERATIONS) clp[op] = { '*': true };
  clp.protectedFields = { '*': [] };
  // Built-in defaults (docs/protocol.md#built-in-classes).
  if (className === '_Role') for (const op of ['create', 'update', 'delete', 'addField']) clp[op] = {};
  if (className === '_User') clp.protectedFields = { '*': ['email'] };
  // A push token is a credential for the device: anyone with app keys may get an installation by id
  // (docs/protocol.md#built-in-classes), so the token is hidden from everyone but master unless a CLP says otherwise.
  if (className === '_Installation') clp.protectedFields = { '*': ['deviceToken'] };
  return clp;
}

/** Columns of built-in classes that hold unique values (enforced by a unique index). */
export const UNIQUE_SYSTEM_FIELDS: Array<[string, string]> = [
  ['_Role', 'name'],
  ['_Installation', 'installationId'],
  ['_Idempotency', 'reqId'],
];

export function isSystemClass(className: string): boolean {
  return className.startsWith('_');
}

/** Internal _User columns: not schema fields, so no read ever returns them. */
export const USER_INTERNAL_COLUMNS = {
  hash: '_hashed_password',
  anonymousId: '_auth_anonymous_id',
  mfa: '_mfa',
  resetToken: '_perishable_token',
  resetExpires: '_perishable_token_expires_at',
  verifyToken: '_email_verify_token',
  verifyExpires: '_email_verify_token_expires_at',
} as const;

/** A field's type as messages name it: `Pointer<_User>`, `Number`. */
export function describeType(def: FieldDef): string {
  return def.targetClass ? `${def.type}<${def.targetClass}>` : def.type;
}

export function sameType(a: FieldDef, b: FieldDef): boolean {
  return a.type === b.type && (a.targetClass ?? null) === (b.targetClass ?? null);
}

/** 111: a field given a type other than the one its class has. */
export function typeMismatch(className: string, field: string, expected: FieldDef, got: FieldDef): BdsError {
  return incorrectType(
    `schema mismatch for ${className}.${field}; expected ${describeType(expected)} but got ${describeType(got)}`,
  );
}
