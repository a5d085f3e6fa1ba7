/**
 * Typed models: declared property types, associations, validation, default ACL policies and
 * client-side callbacks.
 *
 * Model callbacks (`beforeSave`, `afterSave`) run only in this process, for writes made through
 * this library here. They are not server hooks: writes by other clients, the REST API or a
 * dashboard do not run them. Put invariants that must hold for every writer into a server-side
 * hook, and place a non-idempotent side effect in exactly one of the two sites, never both.
 */
import type { Client } from './client.ts';
import { ArgumentError } from './errors.ts';
import { BdsObject, type Pointer } from './objects.ts';
import { type AuthOptions, checkAuthOptions } from './options.ts';
import { ANY_CLASS_NAME_PATTERN } from './protocol/names.ts';

export type PropertyType =
  | 'string'
  | 'integer'
  | 'float'
  | 'boolean'
  | 'date'
  | 'array'
  | 'object'
  | 'file'
  | 'geopoint';

export const ACL_POLICIES = [
  'public',
  'public_read',
  'private',
  'owner_else_private',
  'owner_else_public',
  'owner_but_public_read',
] as const;
export type AclPolicy = (typeof ACL_POLICIES)[number];
export type Acl = Record<string, { read?: boolean; write?: boolean }>;

export interface HasManyDefinition {
  className: string;
  /** Many-to-one by inverse pointer: the pointer field on the target that points back here. */
  inverse?: string;
  /** Many-to-many through a relation column on this class. */
  through?: 'relation';
}

type Callback = (record: ModelRecord) => void | Promise<void>;

export interface ModelDefinition {
  className: string;
  /** Property names may be declared in snake_case; they travel in camelCase. */
  properties?: Record<string, PropertyType>;
  /** Pointer properties: name -> target class name. */
  belongsTo?: Record<string, string>;
  hasMany?: Record<string, HasManyDefinition>;
  /** Default ACL stamped on create when no ACL was set (default `owner_else_private`). */
  aclPolicy?: AclPolicy;
  /** The property that names the owner (a pointer to _User), default `owner`. */
  ownerField?: string;
  /** Runs in this process only, before a save made through this library. */
  beforeSave?: Callback;
  /** Runs in this process only, after a successful save made through this library. */
  afterSave?: Callback;
}

const BUILT_IN_CLASSES = new Set(['_User', '_Role', '_Installation', '_Session']);
const registry = new Map<string, ModelClass>();

/** `play_count` -> `playCount`. */
export function camelCase(name: string): string {
  return name.replace(/_+([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** The ACL a policy stamps for an owner objectId (or none). */
export function aclFor(policy: AclPolicy, ownerId?: string | null): Acl {
  const rw = { read: true, write: true };
  const owner: Acl = ownerId ? { [ownerId]: rw } : {};
  switch (policy) {
    case 'public':
      return { '*': rw };
    case 'public_read':
      return { '*': { read: true } };
    case 'private':
      return {};
    case 'owner_else_private':
      return owner;
    case 'owner_else_public':
      return ownerId ? owner : { '*': rw };
    case 'owner_but_public_read':
      return { ...owner, '*': { read: true } };
    default:
      throw new ArgumentError(
        `Unknown ACL policy ${JSON.stringify(policy)}; use one of ${ACL_POLICIES.join(', ')}.`,
      );
  }
}

function idOf(value: unknown): string | undefined {
  if (typeof value === 'string') return value || undefined;
  if (value instanceof BdsObject) return value.id;
  if (value && typeof value === 'object' && typeof (value as Pointer).objectId === 'string') {
    return (value as Pointer).objectId;
  }
  return undefined;
}

function encode(type: PropertyType, name: string, value: unknown): unknown {
  if (value === null || value === undefined) return value;
  const bad = () => new ArgumentError(`${name} must be ${type === 'integer' ? 'an' : 'a'} ${type}.`);
  switch (type) {
    case 'string':
      if (typeof value !== 'string') throw bad();
      return value;
    case 'integer':
      if (!Number.isInteger(value)) throw bad();
      return value;
    case 'float':
      if (typeof value !== 'number' || !Number.isFinite(value)) throw bad();
      return value;
    case 'boolean':
      if (typeof value !== 'boolean') throw bad();
      return value;
    case 'date': {
      const d = value instanceof Date ? value : typeof value === 'string' ? new Date(value) : null;
      if (!d || Number.isNaN(d.getTime())) throw bad();
      return { __type: 'Date', iso: d.toISOString() };
    }
    case 'array':
      if (!Array.isArray(value)) throw bad();
      return value;
    case 'object':
      if (typeof value !== 'object' || Array.isArray(value)) throw bad();
      return value;
    case 'file': {
      const f = value as { name?: unknown; url?: unknown };
      if (typeof f.name !== 'string') throw bad();
      return { __type: 'File', name: f.name, ...(typeof f.url === 'string' ? { url: f.url } : {}) };
    }
    case 'geopoint': {
      const g = value as { latitude?: unknown; longitude?: unknown };
      if (typeof g.latitude !== 'number' || typeof g.longitude !== 'number') throw bad();
      return { __type: 'GeoPoint', latitude: g.latitude, longitude: g.longitude };
    }
  }
}

function decode(type: PropertyType | undefined, value: unknown): unknown {
  if (type === 'date' && value && typeof value === 'object' && (value as any).__type === 'Date') {
    return new Date((value as any).iso);
  }
  return value;
}

/** A record of a defined model. Property names may be given in snake_case or camelCase. */
export class ModelRecord extends BdsObject {
  readonly model: ModelClass;

  constructor(client: Client, model: ModelClass, attributes: Record<string, unknown> = {}) {
    super(client, model.className, {});
    this.model = model;
    if ('objectId' in attributes) Object.assign(this.attributes, attributes);
    else for (const [k, v] of Object.entries(attributes)) this.set(k, v);
  }

  override get<T = any>(key: string): T {
    const wire = camelCase(key);
    return decode(this.model.propertyTypes.get(wire), this.attributes[wire]) as T;
  }

  override set(key: string, value: unknown): this {
    const wire = camelCase(key);
    const type = this.model.propertyTypes.get(wire);
    if (type) return super.set(wire, encode(type, key, value));
    if (this.model.belongsTo.has(wire)) {
      if (value === null || value === undefined) return super.set(wire, value);
      const id = idOf(value);
      if (!id)
        throw new ArgumentError(`${key} must be a saved ${this.model.belongsTo.get(wire)} or its objectId.`);
      return super.set(wire, { __type: 'Pointer', className: this.model.belongsTo.get(wire)!, objectId: id });
    }
    if (this.model.hasMany.has(wire)) {
      throw new ArgumentError(`${key} is a has-many association; use addTo/removeFrom or fetchMany.`);
    }
    return super.set(wire, value);
  }

  /** Stages adding records to a has-many-through-relation association. */
  addTo(association: string, ...records: BdsObject[]): this {
    return this.relationOp(association, 'AddRelation', records);
  }

  removeFrom(association: string, ...records: BdsObject[]): this {
    return this.relationOp(association, 'RemoveRelation', records);
  }

  private relationOp(association: string, op: string, records: BdsObject[]): this {
    const wire = camelCase(association);
    const def = this.model.hasMany.get(wire);
    if (!def?.through)
      throw new ArgumentError(`${association} is not a has-many-through-relation association.`);
    return this.op(wire, { __op: op, objects: records.map((r) => r.toPointer()) });
  }

  /** Reads a has-many association (inverse pointer or relation). */
  async fetchMany(association: string, options: AuthOptions = {}): Promise<Record<string, any>[] | null> {
    const wire = camelCase(association);
    const def = this.model.hasMany.get(wire);
    if (!def) throw new ArgumentError(`${association} is not a has-many association of ${this.className}.`);
    const where = def.through
      ? { $relatedTo: { object: this.toPointer(), key: wire } }
      : { [camelCase(def.inverse ?? '')]: this.toPointer() };
    const res = await this.boundClient.find(def.className, { where }, checkAuthOptions(options));
    return res.success ? res.data.results : null;
  }

  /** Checks the model's associations resolve to classes; throws ArgumentError otherwise. */
  validate(): void {
    this.model.validate();
  }

  override async save(options: AuthOptions = {}): Promise<boolean> {
    checkAuthOptions(options);
    this.validate();
    if (this.isNew && this.attributes.ACL === undefined) {
      const owner = idOf(this.attributes[this.model.ownerField]);
      this.set('ACL', aclFor(this.model.aclPolicy, owner));
    }
    await this.model.definition.beforeSave?.(this);
    const ok = await super.save(options);
    if (ok) await this.model.definition.afterSave?.(this);
    return ok;
  }
}

export class ModelClass {
  readonly definition: ModelDefinition;
  readonly className: string;
  readonly propertyTypes = new Map<string, PropertyType>();
  readonly belongsTo = new Map<string, string>();
  readonly hasMany = new Map<string, HasManyDefinition>();
  readonly aclPolicy: AclPolicy;
  readonly ownerField: string;

  constructor(definition: ModelDefinition) {
    if (!ANY_CLASS_NAME_PATTERN.test(definition.className ?? '')) {
      throw new ArgumentError(`Invalid class name ${JSON.stringify(definition.className)}.`);
    }
    const policy = definition.aclPolicy ?? 'owner_else_private';
    if (!(ACL_POLICIES as readonly string[]).includes(policy)) {
      throw new ArgumentError(
        `Unknown ACL policy ${JSON.stringify(policy)}; use one of ${ACL_POLICIES.join(', ')}.`,
      );
    }
    this.definition = definition;
    this.className = definition.className;
    this.aclPolicy = policy;
    this.ownerField = camelCase(definition.ownerField ?? 'owner');
    for (const [k, t] of Object.entries(definition.properties ?? {})) this.propertyTypes.set(camelCase(k), t);
    for (const [k, c] of Object.entries(definition.belongsTo ?? {})) this.belongsTo.set(camelCase(k), c);
    for (const [k, h] of Object.entries(definition.hasMany ?? {})) {
      if (!h.through && !h.inverse)
        throw new ArgumentError(`hasMany ${k} needs an inverse pointer or through: 'relation'.`);
      this.hasMany.set(camelCase(k), h);
    }
  }

  /** Every association target must be a defined model or a built-in class. */
  validate(): void {
    const targets = [
      ...[...this.belongsTo].map(([k, c]) => [k, c] as const),
      ...[...this.hasMany].map(([k, h]) => [k, h.className] as const),
    ];
    for (const [name, target] of targets) {
      if (!BUILT_IN_CLASSES.has(target) && !registry.has(target)) {
        throw new ArgumentError(
          `${this.className}.${name}: association target ${JSON.stringify(target)} resolves to no class.`,
        );
      }
    }
  }

  create(client: Client, attributes: Record<string, unknown> = {}): ModelRecord {
    return new ModelRecord(client, this, attributes);
  }

  /** Wraps a row read from the server. */
  fromRow(client: Client, row: Record<string, unknown>): ModelRecord {
    return new ModelRecord(client, this, row);
  }

  async find(client: Client, params: Parameters<Client['find']>[1] = {}, options: AuthOptions = {}) {
    const res = await client.find(this.className, params, options);
    return res.success ? res.data.results.map((r: Record<string, unknown>) => this.fromRow(client, r)) : null;
  }
}

/** Defines (and registers) a model. Redefining a class name replaces the earlier definition. */
export function defineModel(definition: ModelDefinition): ModelClass {
  const model = new ModelClass(definition);
  registry.set(model.className, model);
  return model;
}
