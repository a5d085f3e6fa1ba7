export const FIELD_TYPES = [
  'String',
  'Number',
  'Boolean',
  'Date',
  'Object',
  'Array',
  'GeoPoint',
  'File',
  'Bytes',
  'Polygon',
  'Pointer',
  'Relation',
  'ACL',
] as const;

export type FieldType = (typeof FIELD_TYPES)[number];

export interface FieldDef {
  type: FieldType;
  targetClass?: string;
}

export type ClassLevelPermissions = Record<string, unknown>;

export interface ClassSchema {
  className: string;
  fields: Record<string, FieldDef>;
  classLevelPermissions: ClassLevelPermissions;
  /** Declared indexes: name -> {field: 1 | -1}. */
  indexes: Record<string, Record<string, 1 | -1>>;
}

export const CLASS_NAME_PATTERN = /^[A-Za-z][A-Za-z0-9_]{0,119}$/;
export const FIELD_NAME_PATTERN = /^[A-Za-z][A-Za-z0-9_]*$/;

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
};

/** Classes reachable only with the master key (SPEC "Master-key-only surfaces"). */
export const MASTER_ONLY_CLASSES = new Set([
  '_JobStatus',
  '_PushStatus',
  '_Hooks',
  '_GlobalConfig',
  '_GraphQLConfig',
  '_JobSchedule',
  '_Audience',
  '_Idempotency',
]);

export const CLP_OPERATIONS = ['find', 'get', 'count', 'create', 'update', 'delete', 'addField'] as const;

export function defaultClassLevelPermissions(className?: string): ClassLevelPermissions {
  const clp: ClassLevelPermissions = {};
  for (const op of CLP_OPERATIONS) clp[op] = { '*': true };
  clp.protectedFields = { '*': [] };
  // Built-in defaults (SPEC "Master-key-only surfaces", PROTOCOL.md "Other defaults").
  if (className === '_Role') for (const op of ['create', 'update', 'delete', 'addField']) clp[op] = {};
  if (className === '_User') clp.protectedFields = { '*': ['email'] };
  // A push token is a credential for the device: anyone with app keys may get an installation by id
  // (SPEC endpoint rule 5), so the token is hidden from everyone but master unless a CLP says otherwise.
  if (className === '_Installation') clp.protectedFields = { '*': ['deviceToken'] };
  return clp;
}

/** Columns of built-in classes that hold unique values (enforced by a unique index). */
export const UNIQUE_SYSTEM_FIELDS: Array<[string, string]> = [
  ['_Role', 'name'],
  ['_Installation', 'installationId'],
];

export function isSystemClass(className: string): boolean {
  return className.startsWith('_');
}

/** A class name a caller may create or address: user classes by pattern, system classes by list. */
export function isValidClassName(className: string): boolean {
  if (className in SYSTEM_CLASS_FIELDS || MASTER_ONLY_CLASSES.has(className)) return true;
  return CLASS_NAME_PATTERN.test(className);
}

export function joinTableName(className: string, field: string): string {
  return `_Join:${field}:${className}`;
}
