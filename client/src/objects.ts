import { currentSlot, type ScopeSlot } from './ambient.ts';
import type { Client } from './client.ts';
import { ArgumentError, AuthenticationError, ProtocolError } from './errors.ts';
import { type AuthOptions, checkAuthOptions, type Failure } from './options.ts';
import type { BatchRequest } from './services/records.ts';

export interface Pointer {
  __type: 'Pointer';
  className: string;
  objectId: string;
}

const BUILT_IN = new Set(['objectId', 'createdAt', 'updatedAt']);

/** A record of one class. Changes are staged with `set`/`op` and sent by `save`. */
export class BdsObject {
  readonly className: string;
  readonly attributes: Record<string, any> = {};
  /** Messages of the last failed save/destroy. */
  errors: string[] = [];
  /** The last protocol failure, with its code. */
  lastFailure: Failure | null = null;
  protected pending: Record<string, unknown> = {};
  protected readonly boundClient: Client;

  constructor(client: Client, className: string, attributes: Record<string, unknown> = {}) {
    this.boundClient = client;
    this.className = className;
    if ('objectId' in attributes) Object.assign(this.attributes, attributes);
    else for (const [k, v] of Object.entries(attributes)) this.set(k, v);
  }

  get id(): string | undefined {
    return this.attributes.objectId;
  }

  get isNew(): boolean {
    return !this.id;
  }

  get dirty(): boolean {
    return Object.keys(this.pending).length > 0;
  }

  get<T = any>(key: string): T {
    return this.attributes[key];
  }

  set(key: string, value: unknown): this {
    if (BUILT_IN.has(key)) throw new ArgumentError(`${key} is set by the server.`);
    this.attributes[key] = value;
    this.pending[key] = value;
    return this;
  }

  /** Stages an operation (`{__op: ...}`) on `key`. */
  op(key: string, operation: Record<string, unknown>): this {
    this.pending[key] = operation;
    return this;
  }

  toPointer(): Pointer {
    if (!this.id) throw new ArgumentError(`This ${this.className} has no objectId yet; save it first.`);
    return { __type: 'Pointer', className: this.className, objectId: this.id };
  }

  /** The changed fields as a request body. */
  changes(): Record<string, unknown> {
    return { ...this.pending };
  }

  /** Merges a server answer; clears the staged changes. */
  applyServerData(data: Record<string, unknown>): void {
    this.pending = {};
    this.errors = [];
    this.lastFailure = null;
    for (const [k, v] of Object.entries(data ?? {})) {
      const current = this.attributes[k];
      // An answer value that is an op result replaces the staged op.
      this.attributes[k] = v ?? current;
    }
  }

  recordFailure(failure: Failure): void {
    this.lastFailure = failure;
    this.errors = [failure.error];
  }

  /** Creates or updates. Answers false (with `errors`) on a protocol error. */
  async save(options: AuthOptions = {}): Promise<boolean> {
    const auth = checkAuthOptions(options);
    const res = this.isNew
      ? await this.boundClient.create(this.className, this.changes(), auth)
      : await this.boundClient.update(this.className, this.id!, this.changes(), auth);
    if (!res.success) {
      this.recordFailure(res);
      return false;
    }
    this.applyServerData(res.data);
    return true;
  }

  /** Like `save`, but throws a ProtocolError instead of answering false. */
  async saveOrThrow(options: AuthOptions = {}): Promise<this> {
    if (!(await this.save(options))) {
      throw new ProtocolError(this.errors[0] ?? 'Save failed.', { code: this.lastFailure?.code });
    }
    return this;
  }

  /** Deletes the row. Answers false (with `errors`) on a protocol error; the row stays. */
  async destroy(options: AuthOptions = {}): Promise<boolean> {
    if (!this.id) throw new ArgumentError('Cannot destroy an object without objectId.');
    const res = await this.boundClient.destroy(this.className, this.id, checkAuthOptions(options));
    if (!res.success) {
      this.recordFailure(res);
      return false;
    }
    return true;
  }

  /** Re-reads the row. */
  async fetch(options: AuthOptions = {}): Promise<boolean> {
    if (!this.id) throw new ArgumentError('Cannot fetch an object without objectId.');
    const res = await this.boundClient.get(this.className, this.id, checkAuthOptions(options));
    if (!res.success) {
      this.recordFailure(res);
      return false;
    }
    Object.assign(this.attributes, res.data);
    return true;
  }
}

// ------------------------------------------------------------------------------------------------
// Users

export interface UpgradeFields {
  username: string;
  password: string;
  email?: string;
}

export class User extends BdsObject {
  constructor(client: Client, attributes: Record<string, unknown> = {}) {
    super(client, '_User', {});
    for (const [k, v] of Object.entries(attributes)) {
      if (k === 'password') this.set(k, v);
      else this.attributes[k] = v;
    }
    if (!('objectId' in attributes)) {
      for (const [k, v] of Object.entries(attributes)) this.pending[k] = v;
    }
  }

  get sessionToken(): string | undefined {
    return this.attributes.sessionToken;
  }

  get username(): string | undefined {
    return this.attributes.username;
  }

  get isAnonymous(): boolean {
    const authData = this.attributes.authData;
    return Boolean(authData && typeof authData === 'object' && authData.anonymous);
  }

  /** A client acting as this user; `null` when the user holds no session token. */
  client(): Client | null {
    const token = this.sessionToken;
    return token ? this.boundClient.withSessionToken(token) : null;
  }

  override applyServerData(data: Record<string, unknown>): void {
    super.applyServerData(data);
    delete this.attributes.password;
  }

  /** Logs in; answers `null` on bad credentials. */
  static async logIn(client: Client, username: string, password: string, options: AuthOptions = {}) {
    const res = await client.login(username, password, options);
    return res.success ? new User(client, res.data) : null;
  }

  /** Signs up; throws a ProtocolError when the server refuses. */
  static async signUp(client: Client, fields: Record<string, unknown>, options: AuthOptions = {}) {
    const res = await client.signUp(fields, options);
    if (!res.success) throw new ProtocolError(res.error, { code: res.code, status: res.status });
    const user = new User(client, { ...fields, ...res.data });
    delete user.attributes.password;
    user.pending = {};
    return user;
  }

  /** Anonymous sign-up with a client-generated UUID. */
  static async logInAnonymously(client: Client, options: AuthOptions = {}) {
    const id = globalThis.crypto.randomUUID();
    const res = await client.signUp({ authData: { anonymous: { id } } }, options);
    if (!res.success) throw new ProtocolError(res.error, { code: res.code, status: res.status });
    const user = new User(client, { authData: { anonymous: { id } }, ...res.data });
    user.pending = {};
    return user;
  }

  /**
   * Turns an anonymous user into a named one in one request (unlinking the anonymous id).
   * Refuses locally, before any request, for a non-anonymous user or a user without objectId or
   * session token. On success clears the local password and applies the rotated token.
   */
  async upgradeAnonymous(fields: UpgradeFields): Promise<boolean> {
    if (!this.isAnonymous) throw new AuthenticationError('Only an anonymous user can be upgraded.');
    if (!this.id) throw new AuthenticationError('Cannot upgrade a user without objectId.');
    const token = this.sessionToken;
    if (!token) throw new AuthenticationError("Upgrading requires the user's own session token.");
    const body: Record<string, unknown> = {
      username: fields.username,
      password: fields.password,
      authData: { anonymous: null },
    };
    if (fields.email !== undefined) body.email = fields.email;
    const res = await this.boundClient.update('_User', this.id, body, { sessionToken: token });
    if (!res.success) {
      this.recordFailure(res);
      return false;
    }
    const { password: _password, ...rest } = body;
    Object.assign(this.attributes, rest, res.data);
    delete this.attributes.password;
    if (this.attributes.authData?.anonymous === null || this.attributes.authData?.anonymous) {
      const { anonymous: _a, ...others } = this.attributes.authData;
      this.attributes.authData = Object.keys(others).length ? others : null;
    }
    this.pending = {};
    return true;
  }
}

// ------------------------------------------------------------------------------------------------
// Roles

function sameRole(a: Role, b: Role): boolean {
  return a === b || (a.id !== undefined && a.id === b.id) || (a.name !== undefined && a.name === b.name);
}

export class Role extends BdsObject {
  constructor(client: Client, attributes: Record<string, unknown> = {}) {
    super(client, '_Role', attributes);
  }

  get name(): string | undefined {
    return this.attributes.name;
  }

  private addToRelation(key: 'roles' | 'users', objects: BdsObject[]): this {
    const current = this.pending[key] as { __op?: string; objects?: Pointer[] } | undefined;
    const existing = current?.__op === 'AddRelation' ? (current.objects ?? []) : [];
    this.op(key, { __op: 'AddRelation', objects: [...existing, ...objects.map((o) => o.toPointer())] });
    return this;
  }

  private check(other: Role): void {
    if (!(other instanceof Role)) throw new ArgumentError('Expected a Role.');
    if (sameRole(this, other)) throw new ArgumentError('A role cannot inherit from itself.');
  }

  /** Stages adding users into this role. */
  addUsers(...users: User[]): this {
    return this.addToRelation('users', users);
  }

  /**
   * This role's users gain `other`'s capabilities: this role is added into `other`'s `roles`
   * relation. Stages the change on `other`, which is returned.
   */
  inheritsCapabilitiesFrom(other: Role): Role {
    this.check(other);
    return other.addToRelation('roles', [this]);
  }

  /** Like inheritsCapabilitiesFrom, and saves `other`. */
  inheritsCapabilitiesFromAndSave(other: Role, options: AuthOptions = {}): Promise<boolean> {
    return this.inheritsCapabilitiesFrom(other).save(options);
  }

  /** `other`'s users gain this role's capabilities: `other` is added into this role's `roles` relation. */
  grantCapabilitiesTo(other: Role): this {
    this.check(other);
    return this.addToRelation('roles', [other]);
  }

  /** Like grantCapabilitiesTo, and saves this role. */
  grantCapabilitiesToAndSave(other: Role, options: AuthOptions = {}): Promise<boolean> {
    return this.grantCapabilitiesTo(other).save(options);
  }

  /**
   * Older name, kept for compatibility: adds `child` into this role's `roles` relation, so the
   * "child" gains this role's capabilities (the opposite of `inheritsCapabilitiesFrom`).
   * @deprecated use grantCapabilitiesTo / inheritsCapabilitiesFrom, whose direction is explicit.
   */
  addChildRole(child: Role): this {
    return this.grantCapabilitiesTo(child);
  }
}

// ------------------------------------------------------------------------------------------------
// Batch helpers

function batchPath(o: BdsObject): string {
  if (o.className === '_User') return o.id ? `/users/${o.id}` : '/users';
  if (o.className === '_Role') return o.id ? `/roles/${o.id}` : '/roles';
  const base = `/classes/${encodeURIComponent(o.className)}`;
  return o.id ? `${base}/${encodeURIComponent(o.id)}` : base;
}

async function runBatch(
  client: Client,
  objects: BdsObject[],
  requests: BatchRequest[],
  options: AuthOptions,
  onSuccess: (o: BdsObject, data: any) => void,
): Promise<boolean> {
  const res = await client.batch(requests, checkAuthOptions(options));
  if (!res.success) {
    for (const o of objects) o.recordFailure(res);
    return false;
  }
  let ok = true;
  res.data.forEach((item, i) => {
    const o = objects[i]!;
    if ('success' in item) onSuccess(o, item.success);
    else {
      ok = false;
      o.recordFailure({ success: false, status: 400, code: item.error.code, error: item.error.error });
    }
  });
  return ok;
}

/** Saves all objects through /batch in segments of 50; each answer is applied to its object. */
export function saveAll(client: Client, objects: BdsObject[], options: AuthOptions = {}): Promise<boolean> {
  const requests = objects.map(
    (o): BatchRequest => ({ method: o.isNew ? 'POST' : 'PUT', path: batchPath(o), body: o.changes() }),
  );
  return runBatch(client, objects, requests, options, (o, data) => o.applyServerData(data));
}

/** Deletes all objects through /batch in segments of 50; failures are recorded on their object. */
export function destroyAll(
  client: Client,
  objects: BdsObject[],
  options: AuthOptions = {},
): Promise<boolean> {
  for (const o of objects) if (!o.id) throw new ArgumentError('Cannot destroy an object without objectId.');
  const requests = objects.map((o): BatchRequest => ({ method: 'DELETE', path: batchPath(o) }));
  return runBatch(client, objects, requests, options, (o) => {
    o.errors = [];
    o.lastFailure = null;
  });
}

// ------------------------------------------------------------------------------------------------
// Imperative login/logout (ambient state of the current async scope)

/** One scope's ambient state as the imperative login keeps it: its session token and its user. */
export interface AmbientSlot extends ScopeSlot {
  user?: BdsObject;
}

/** The current scope's slot; the scope runner (ambient.ts) holds it without knowing the user's type. */
function ambientSlot(): AmbientSlot {
  return currentSlot() as AmbientSlot;
}

/** Logs in and stores the token and user in the current scope; answers `null` on bad credentials. */
export async function login(client: Client, username: string, password: string): Promise<User | null> {
  const user = await User.logIn(client, username, password);
  if (user) {
    const slot = ambientSlot();
    slot.sessionToken = user.sessionToken;
    slot.user = user;
  }
  return user;
}

/** Clears the scope's token and user, revoking the token unless `revoke: false`. */
export async function logout(client: Client, { revoke = true }: { revoke?: boolean } = {}): Promise<void> {
  const slot = ambientSlot();
  const token = slot.sessionToken;
  slot.sessionToken = undefined;
  slot.user = undefined;
  if (revoke && token) await client.logout({ sessionToken: token });
}

/** The user stored by the imperative login of the current scope. */
export function currentUser(): User | null {
  const u = ambientSlot().user;
  return u instanceof User ? u : null;
}
