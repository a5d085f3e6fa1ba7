import { isObject } from '@bds/client/protocol';
import type { MasterSurface } from '../access/class.ts';
import { aclGrant } from '../kernel/acl.ts';
import type { Caller } from '../kernel/caller.ts';
import type { Ctx } from '../kernel/context.ts';
import { BdsError, ErrorCode, incorrectType, notFound } from '../kernel/errors.ts';
import type { WriteEvent } from '../kernel/events.ts';
import { newObjectId } from '../kernel/ids.ts';
import type { QueryNode } from '../kernel/query.ts';
import type { Row, WireAcl } from '../kernel/records.ts';
import { type ClassSchema, type FieldDef, USER_INTERNAL_COLUMNS } from '../kernel/schema.ts';
import { checkClassName, classNotFound, schemaDocument } from '../schema/registry.ts';
import type { InternalValues, StoredConfig } from '../storage/adapter.ts';
import { and, classVerdict, demandMaster, denial, rowAccess, viewOf } from './authorize.ts';
import {
  checkInstallationImmutable,
  checkRoleName,
  checkRoleUpdate,
  duplicateRoleName,
  installationIdForCreate,
  roleCycle,
} from './builtin-rules.ts';
import type { Core } from './core.ts';
import type { Reads } from './reads.ts';
import {
  CHOSEN_OBJECT_ID,
  initialValues,
  mayChooseObjectId,
  type ParsedWrite,
  parseWriteBody,
  takeChosenObjectId,
} from './write-body.ts';

/** Classes whose write checks read what the write changes: they run in a transaction. */
const CHECKED_IN_TRANSACTION = new Set(['_Role', '_Installation']);

/** The pseudo-class of schema change events: `objectId` is the class, rows are schema documents. */
export const SCHEMA_EVENT_CLASS = '_SCHEMA';
export const CONFIG_EVENT_CLASS = '_GlobalConfig';

export interface CreateOptions {
  /** A chosen objectId (the account rules pick the user's before its ACL names it). */
  objectId?: string;
  /** Internal columns to set (password hashes, tokens); never returned by reads. */
  internal?: InternalValues;
}

export interface UpdateOptions {
  internal?: InternalValues;
  /** Compare-and-set on internal columns: the write happens only while they hold these values. */
  expectInternal?: InternalValues;
  /** `false`: leave updatedAt alone (a write of internal columns only). */
  touch?: boolean;
  /**
   * Compare-and-set on fields: the write happens only while the row also meets this condition
   * (otherwise 101, as for a missing row). The job scheduler claims a tick with it.
   */
  expect?: QueryNode;
}

/**
 * The one write pipeline. Every write of every kind, whoever makes it (REST, batch members, the
 * account rules, the console through the API, cloud code later), passes here:
 *
 *   authorize (access/ deciders) -> validate -> before-write triggers -> validate what they
 *   changed -> store, atomically -> after commit, one event per change on the event bus.
 *
 * Schema changes, config updates and purge authorize through the master-only surface decider
 * (access/class.ts): the pipeline refuses a non-master caller whatever the route checked.
 *
 * Nothing else writes to the store, except the store's own start-up migrations.
 */
export class WritePipeline {
  constructor(
    private readonly core: Core,
    private readonly reads: Reads,
  ) {}

  /**
   * Publishes the event once the write's transaction commits; outside a transaction at once, with
   * no callback to queue (the common single-statement write).
   */
  private emit(
    ctx: Ctx,
    op: WriteEvent['op'],
    className: string,
    objectId: string | null,
    before: Row | null,
    after: Row | null,
  ): void {
    const event: WriteEvent = {
      op,
      className,
      objectId,
      before,
      after,
      caller: ctx.caller,
      source: ctx.source,
      context: ctx.context,
      ip: ctx.ip ?? null,
    };
    const { store, events } = this.core;
    if (store.inTransaction()) store.afterCommit(() => events.publish(event));
    else events.publish(event);
  }

  /**
   * Before any access decision: the class name. Which writers may write the account classes
   * (`_User`, `_Session`) is the class layer's rule (access/class.ts), asked with the write's source.
   */
  private checkRoute(className: string): void {
    checkClassName(className);
  }

  /**
   * The authorize step of the master-only surfaces that are not rows (schema changes, config,
   * purge): decided here whatever the route checked before, so no caller can forget it.
   */
  private authorizeSurface(ctx: Ctx, surface: MasterSurface, className?: string): void {
    demandMaster(ctx.caller, surface, className);
  }

  /** Whether the before-write triggers (`beforeWrite`) or the built-in classes' rules (`writeRules`) apply. */
  private has(
    kind: 'beforeWrite' | 'writeRules',
    className: string,
    op: 'create' | 'update' | 'delete',
  ): boolean {
    return this.core.hooks[kind].hasBefore(className, op);
  }

  /** Runs the before-write triggers, or the built-in classes' rules, on a pending write. */
  private async beforeTrigger(
    ctx: Ctx,
    op: 'create' | 'update' | 'delete',
    className: string,
    objectId: string | null,
    body: Record<string, unknown> | null,
    original: Row | null,
    kind: 'beforeWrite' | 'writeRules' = 'beforeWrite',
  ): Promise<Record<string, unknown> | null> {
    const triggers = this.core.hooks[kind];
    if (!triggers.hasBefore(className, op)) return body;
    const changed = await triggers.before({
      op,
      className,
      objectId,
      body,
      original,
      caller: ctx.caller,
      source: ctx.source,
      context: ctx.context,
      ip: ctx.ip ?? null,
    });
    return changed ?? body;
  }

  // -------------------------------------------------------------------------------------------
  // Records
  // -------------------------------------------------------------------------------------------

  async create(
    ctx: Ctx,
    className: string,
    body: unknown,
    options: CreateOptions = {},
  ): Promise<{ objectId: string; createdAt: string } & Row> {
    this.checkRoute(className);
    const { caller } = ctx;
    rowAccess(this.core, caller, className, 'create', { source: ctx.source });
    // A master-key create may choose its objectId (an import that keeps its ids); any caller may
    // with the option allowCustomObjectId.
    const chosen = options.objectId
      ? undefined
      : takeChosenObjectId(body, mayChooseObjectId(caller.isMaster, this.core.options));
    if (chosen) body = chosen.body;
    if (className === '_Installation' && isObject(body)) {
      body = { ...body, installationId: installationIdForCreate(caller, body) };
    }
    const { store, options: opts } = this.core;
    // Validate what the caller sent, then let the before-triggers change it, then validate what
    // they answered: a trigger cannot store a value the caller could not have sent.
    const pendingId = options.objectId ?? null;
    const rules = this.has('writeRules', className, 'create');
    if (rules && isObject(body))
      body = await this.beforeTrigger(ctx, 'create', className, pendingId, body, null, 'writeRules');
    let parsed = this.validateCreate(ctx, className, body);
    if (this.has('beforeWrite', className, 'create') && isObject(body)) {
      body = await this.beforeTrigger(ctx, 'create', className, pendingId, body, null);
      if (rules && isObject(body)) {
        body = await this.beforeTrigger(ctx, 'create', className, pendingId, body, null, 'writeRules');
      }
      parsed = this.validateCreate(ctx, className, body);
    }
    const schema = this.core.schemas.get(className);
    const objectId = options.objectId ?? chosen?.objectId ?? newObjectId();
    const createdAt = new Date().toISOString();
    const simple = schema && parsed.types.size === 0 && parsed.relations.length === 0;
    const created = await (simple
      ? this.insert(ctx, schema, parsed, objectId, createdAt, options.internal)
      : store.transaction(async () => {
          const target = await this.ensureFields(ctx, className, parsed.types, {
            createClass: caller.isMaster || opts.allowClientClassCreation,
          });
          return this.insert(ctx, target, parsed, objectId, createdAt, options.internal);
        })
    ).catch((err) => this.explainDuplicate(className, parsed, err));
    return this.stripWriteResponse(ctx, className, created, parsed);
  }

  /** A unique-index violation of a create, named when it is a role name already taken. */
  private async explainDuplicate(className: string, parsed: ParsedWrite, err: unknown): Promise<never> {
    const name = parsed.writes.find((w) => w.field === 'name' && w.kind === 'set');
    const schema = this.core.schemas.get(className);
    if (
      className === '_Role' &&
      schema &&
      err instanceof BdsError &&
      err.code === ErrorCode.DUPLICATE_VALUE &&
      name?.kind === 'set' &&
      typeof name.value === 'string'
    ) {
      const taken: QueryNode = { type: 'compare', path: ['name'], op: 'eq', value: name.value };
      const found = await this.core.store.find(
        schema,
        { where: taken, order: [], limit: 1, skip: 0 },
        this.core.schemas.lookup,
      );
      if (found.length > 0) throw duplicateRoleName(name.value);
    }
    throw err;
  }

  /** The store step of a create, and its event. */
  private async insert(
    ctx: Ctx,
    target: ClassSchema,
    parsed: ParsedWrite,
    objectId: string,
    createdAt: string,
    internal: InternalValues | undefined,
  ): Promise<{ objectId: string; createdAt: string } & Row> {
    const { values, produced } = initialValues(parsed, target.fields);
    const row = await this.core.store.insert(target, {
      objectId,
      createdAt,
      values,
      acl: parsed.acl ?? null,
      relations: parsed.relations,
      internal,
    });
    this.emit(ctx, 'create', target.className, objectId, null, row);
    return { objectId, createdAt, ...produced };
  }

  async update(
    ctx: Ctx,
    className: string,
    objectId: string,
    body: unknown,
    options: UpdateOptions = {},
  ): Promise<{ updatedAt: string } & Row> {
    this.checkRoute(className);
    const { caller } = ctx;
    const access = rowAccess(this.core, caller, className, 'update', { source: ctx.source, objectId });
    const { schemas, store } = this.core;
    const schema = schemas.get(className);
    if (!schema) throw notFound();
    const rules = this.has('writeRules', className, 'update');
    const triggered = this.has('beforeWrite', className, 'update');
    let original: Row | null = null;
    if ((rules || triggered) && isObject(body)) {
      original = (await this.reads.byId(schema, objectId, access)) ?? null;
      if (!original) throw notFound();
    }
    if (rules && isObject(body))
      body = await this.beforeTrigger(ctx, 'update', className, objectId, body, original, 'writeRules');
    let parsed = this.validateUpdate(ctx, className, schema, body);
    if (triggered && isObject(body)) {
      body = await this.beforeTrigger(ctx, 'update', className, objectId, body, original);
      if (rules && isObject(body)) {
        body = await this.beforeTrigger(ctx, 'update', className, objectId, body, original, 'writeRules');
      }
      parsed = this.validateUpdate(ctx, className, this.core.schemas.get(className) ?? schema, body);
    }
    const updatedAt = options.touch === false ? null : new Date().toISOString();
    const simple = parsed.types.size === 0 && !CHECKED_IN_TRANSACTION.has(className);
    const updated = await (simple
      ? this.applyUpdate(ctx, className, schema, objectId, body, parsed, access, updatedAt, options)
      : store.transaction(() =>
          this.applyUpdate(ctx, className, schema, objectId, body, parsed, access, updatedAt, options),
        ));
    return this.stripWriteResponse(ctx, className, updated);
  }

  /** The store step of an update (inside its transaction when it has one), and its event. */
  private async applyUpdate(
    ctx: Ctx,
    className: string,
    schema: ClassSchema,
    objectId: string,
    body: unknown,
    parsed: ParsedWrite,
    access: QueryNode | undefined,
    updatedAt: string | null,
    options: UpdateOptions,
  ): Promise<{ updatedAt: string } & Row> {
    if (CHECKED_IN_TRANSACTION.has(className)) {
      await this.checkBuiltinUpdate(className, schema, objectId, parsed, body, access);
    }
    const existing = this.core.schemas.get(className);
    const target =
      existing && parsed.types.size === 0
        ? existing
        : await this.ensureFields(ctx, className, parsed.types, { createClass: false });
    const result = await this.core.store.update(target, {
      objectId,
      updatedAt,
      writes: parsed.writes,
      acl: parsed.acl,
      relations: parsed.relations,
      condition: options.expect ? (access ? and(access, options.expect) : options.expect) : access,
      internal: options.internal,
      expectInternal: options.expectInternal,
    });
    if (!result) throw notFound();
    this.emit(ctx, 'update', className, objectId, result.before, result.after);
    const answer: { updatedAt: string } & Row = { updatedAt: result.after.updatedAt as string };
    // Values produced by operations (Increment, Add...) come back to the caller; below an Object
    // field as the object of the keys they changed (`{"obj": {"number": 20}}`), as the incumbent answers.
    let returning = false;
    for (const w of parsed.writes) {
      if (w.kind === 'set' || w.kind === 'delete') continue;
      returning = true;
      if (w.subPath.length === 0) {
        answer[w.field] = result.after[w.field] ?? null;
        continue;
      }
      let stored: unknown = result.after[w.field];
      if (!isObject(answer[w.field])) answer[w.field] = {};
      let echoed = answer[w.field] as Row;
      for (const [i, key] of w.subPath.entries()) {
        stored = isObject(stored) && Object.hasOwn(stored, key) ? stored[key] : undefined;
        if (i === w.subPath.length - 1) {
          echoed[key] = stored ?? null;
        } else {
          if (!isObject(echoed[key])) echoed[key] = {};
          echoed = echoed[key] as Row;
        }
      }
    }
    // A write-only row must not become readable through the values its operations produced.
    // The write may have committed already: a failing check withholds the values, never answers an error.
    if (returning && !(await this.readable(ctx.caller, target, objectId, result.after))) {
      for (const key of Object.keys(answer)) if (key !== 'updatedAt') delete answer[key];
    }
    return answer;
  }

  /**
   * Whether the caller may read a row it has just written (CLP get, its row condition, ACL read).
   * Without a CLP row condition the ACL decides alone, in memory on the row the write answered
   * (the same rule the store compiles, kernel/acl.ts), so no read is issued; otherwise the store
   * answers. A failing check withholds, never throws.
   */
  private async readable(
    caller: Caller,
    schema: ClassSchema,
    objectId: string,
    after: Row,
  ): Promise<boolean> {
    if (caller.isMaster) return true;
    const verdict = classVerdict(this.core, caller, schema.className, 'get');
    if (!verdict.allowed) return false;
    if (verdict.condition === undefined) {
      return aclGrant(after.ACL as WireAcl | undefined, caller.principals, 'read') !== null;
    }
    return this.reads.canRead(caller, schema, objectId).catch(() => false);
  }

  async delete(ctx: Ctx, className: string, objectId: string): Promise<void> {
    this.checkRoute(className);
    const access = rowAccess(this.core, ctx.caller, className, 'delete', { source: ctx.source, objectId });
    const schema = this.core.schemas.get(className);
    if (!schema) throw notFound();
    const rules = this.has('writeRules', className, 'delete');
    if (rules || this.has('beforeWrite', className, 'delete')) {
      const original = await this.reads.byId(schema, objectId, access);
      if (!original) throw notFound();
      if (rules) await this.beforeTrigger(ctx, 'delete', className, objectId, null, original, 'writeRules');
      await this.beforeTrigger(ctx, 'delete', className, objectId, null, original);
    }
    const deleted = await this.core.store.delete(schema, objectId, access);
    if (!deleted) throw notFound();
    this.emit(ctx, 'delete', className, objectId, deleted, null);
  }

  /** Every row of a class (master only). One `purge` event for the class, no rows carried. */
  async purge(ctx: Ctx, className: string): Promise<void> {
    this.authorizeSurface(ctx, 'purge', className);
    checkClassName(className);
    const schema = this.core.schemas.get(className);
    if (!schema) return;
    await this.core.store.purge(schema);
    this.emit(ctx, 'purge', className, null, null, null);
  }

  // -------------------------------------------------------------------------------------------
  // Restore: the import of an export file (transfer/), master only
  // -------------------------------------------------------------------------------------------

  /**
   * Writes a row exactly as an export holds it: its objectId, createdAt, updatedAt and ACL kept,
   * and its internal columns (`_User` password hashes and tokens). The class's schema must already
   * hold every field (a restore never changes a schema). The values are checked against the schema
   * as any create's are, but no before-write trigger or built-in write rule runs: the row passed
   * them when it was first written, and running them again could change what is restored (a
   * trigger that stamps a field) or act twice (mail, webhook calls). One `create` event.
   */
  async restore(ctx: Ctx, className: string, row: Row, internal?: InternalValues): Promise<void> {
    const schema = this.restoreTarget(ctx, className);
    const { objectId, createdAt, updatedAt, parsed } = parseRestoredRow(schema, row, internal);
    const { values } = initialValues(parsed, schema.fields);
    const after = await this.core.store.insert(schema, {
      objectId,
      createdAt,
      updatedAt,
      values,
      acl: parsed.acl ?? null,
      relations: [],
      internal,
    });
    this.emit(ctx, 'create', className, objectId, null, after);
  }

  /** The class a restore writes to: master only, an existing class. */
  private restoreTarget(ctx: Ctx, className: string): ClassSchema {
    this.authorizeSurface(ctx, 'restore', className);
    checkClassName(className);
    const schema = this.core.schemas.get(className);
    if (!schema) throw classNotFound(className);
    return schema;
  }

  /**
   * Adds members to a Relation field of a restored row, leaving its updatedAt as exported. No
   * trigger runs (see restore); one `update` event.
   */
  async restoreRelation(
    ctx: Ctx,
    className: string,
    owningId: string,
    field: string,
    relatedIds: string[],
  ): Promise<void> {
    const schema = this.restoreTarget(ctx, className);
    if (schema.fields[field]?.type !== 'Relation') {
      throw incorrectType(`${className}.${field} is not a Relation field.`);
    }
    if (relatedIds.length === 0 || !relatedIds.every((id) => CHOSEN_OBJECT_ID.test(id))) {
      throw new BdsError(ErrorCode.INVALID_KEY_NAME, 'Relation members must be objectIds.');
    }
    const result = await this.core.store.update(schema, {
      objectId: owningId,
      updatedAt: null,
      writes: [],
      relations: [{ field, add: relatedIds, remove: [] }],
    });
    if (!result) throw notFound();
    this.emit(ctx, 'update', className, owningId, result.before, result.after);
  }

  /** A non-master write that adds fields to an existing class needs CLP addField. */
  private checkAddField(ctx: Ctx, schema: ClassSchema | undefined, parsed: ParsedWrite): void {
    if (ctx.caller.isMaster || !schema || parsed.types.size === 0) return;
    const verdict = classVerdict(this.core, ctx.caller, schema.className, 'addField');
    if (!verdict.allowed) throw denial(verdict);
  }

  /**
   * The validate step of a create: the body against the class's schema as it stands, the built-in
   * classes' rules, and addField when the body adds fields. Runs on the body the caller sent and
   * again on the body the before-triggers answered.
   */
  private validateCreate(ctx: Ctx, className: string, body: unknown): ParsedWrite {
    const schema = this.core.schemas.get(className);
    const parsed = parseWriteBody(body, 'create', schema?.fields ?? {});
    if (className === '_Role') {
      const name = parsed.writes.find((w) => w.field === 'name' && w.kind === 'set');
      checkRoleName(name && name.kind === 'set' ? name.value : undefined);
    }
    this.checkAddField(ctx, schema, parsed);
    checkAccountFields(className, parsed);
    return parsed;
  }

  /** The validate step of an update (before and after the before-triggers, as for a create). */
  private validateUpdate(ctx: Ctx, className: string, schema: ClassSchema, body: unknown): ParsedWrite {
    const parsed = parseWriteBody(body, 'update', schema.fields, className);
    this.checkAddField(ctx, schema, parsed);
    checkAccountFields(className, parsed);
    return parsed;
  }

  /** Rules of built-in classes on update that read what the write changes; inside its transaction. */
  private async checkBuiltinUpdate(
    className: string,
    schema: ClassSchema,
    objectId: string,
    parsed: ParsedWrite,
    body: unknown,
    access: QueryNode | undefined,
  ): Promise<void> {
    if (className === '_Role') {
      checkRoleUpdate(parsed.writes.map((w) => w.field));
      const added = parsed.relations.filter((r) => r.field === 'roles').flatMap((r) => r.add);
      if (added.length > 0 && (await this.core.store.rolesContain(added, objectId))) throw roleCycle();
    }
    if (className === '_Installation' && isObject(body)) {
      if (!('installationId' in body) && !('deviceType' in body)) return;
      // Only a row this caller may update (its installation id): another device's row must answer
      // not-found like a missing one, not reveal its stored id fields through 136.
      const stored = await this.reads.byId(schema, objectId, access);
      if (stored) checkInstallationImmutable(stored, body);
    }
  }

  /**
   * The schema a write needs: fields it adds are created (and a new class, when allowed), each
   * change announced as a `_SCHEMA` event. Runs inside the write's transaction when it changes.
   */
  private async ensureFields(
    ctx: Ctx,
    className: string,
    wanted: Map<string, FieldDef>,
    permission: { createClass: boolean },
  ): Promise<ClassSchema> {
    const { schemas, store } = this.core;
    const existing = schemas.get(className);
    if (existing && wanted.size === 0) return existing;
    const plan = schemas.planFields(className, wanted, permission);
    if (plan.change === 'create') {
      await store.createClass(plan.schema);
      schemas.set(plan.schema);
      this.emitSchema(ctx, className, undefined, plan.schema);
    } else if (plan.change) {
      await store.changeSchema(plan.schema, plan.change);
      schemas.set(plan.schema);
      this.emitSchema(ctx, className, existing, plan.schema);
    }
    return plan.schema;
  }

  /** Write responses strip protected fields unless protectedFieldsSaveResponseExempt. */
  private stripWriteResponse<T extends Row>(
    ctx: Ctx,
    className: string,
    result: T,
    created?: ParsedWrite,
  ): T {
    const { caller } = ctx;
    if (caller.isMaster || this.core.options.protectedFieldsSaveResponseExempt) return result;
    const schema = this.core.schemas.get(className);
    if (!schema) return result;
    const view = viewOf(this.core, caller, schema);
    // Nothing hidden whatever the row: nothing to strip (the common class without protectedFields).
    if (view.fixedHidden?.length === 0 && view.unqueryable.size === 0) return result;
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

  // -------------------------------------------------------------------------------------------
  // Schemas (master only: decided in the authorize step, whatever the route checked)
  // -------------------------------------------------------------------------------------------

  private emitSchema(
    ctx: Ctx,
    className: string,
    before: ClassSchema | undefined,
    after: ClassSchema | undefined,
  ) {
    this.emit(
      ctx,
      before ? (after ? 'update' : 'delete') : 'create',
      SCHEMA_EVENT_CLASS,
      className,
      before ? schemaDocument(before) : null,
      after ? schemaDocument(after) : null,
    );
  }

  async createClass(ctx: Ctx, className: string, doc: Record<string, unknown>): Promise<ClassSchema> {
    this.authorizeSurface(ctx, 'schema', className);
    const schema = this.core.schemas.planCreate(className, doc);
    await this.core.store.createClass(schema);
    this.core.schemas.set(schema);
    this.emitSchema(ctx, className, undefined, schema);
    return schema;
  }

  async updateClass(ctx: Ctx, className: string, doc: Record<string, unknown>): Promise<ClassSchema> {
    this.authorizeSurface(ctx, 'schema', className);
    const before = this.core.schemas.get(className);
    const { schema, change } = this.core.schemas.planUpdate(className, doc);
    await this.core.store.changeSchema(schema, change);
    this.core.schemas.set(schema);
    this.emitSchema(ctx, className, before, schema);
    return schema;
  }

  /** Drops an empty class that is not built in. */
  async deleteClass(ctx: Ctx, className: string): Promise<void> {
    this.authorizeSurface(ctx, 'schema', className);
    checkClassName(className);
    const { schemas, store } = this.core;
    const existing = schemas.get(className);
    if (!existing) return;
    const rows = await store.count(existing, { where: { type: 'and', children: [] } }, schemas.lookup);
    const schema = schemas.planDelete(className, rows);
    if (!schema) return;
    await store.deleteClass(schema);
    schemas.remove(className);
    this.emitSchema(ctx, className, schema, undefined);
  }

  // -------------------------------------------------------------------------------------------
  // Config (master only: decided in the authorize step, whatever the route checked)
  // -------------------------------------------------------------------------------------------

  /** Applies a change to the config: `{__op: "Delete"}` removes a parameter; flags set masterKeyOnly. */
  async updateConfig(
    ctx: Ctx,
    params: Record<string, unknown>,
    masterKeyOnly: Record<string, boolean>,
  ): Promise<void> {
    this.authorizeSurface(ctx, 'config');
    const { store } = this.core;
    await store.transaction(async () => {
      const before = await store.getConfig();
      const after: StoredConfig = {
        params: { ...before.params },
        masterKeyOnly: { ...before.masterKeyOnly },
      };
      for (const [k, v] of Object.entries(params)) {
        if (isObject(v) && v.__op === 'Delete') {
          delete after.params[k];
          delete after.masterKeyOnly[k];
        } else {
          after.params[k] = v;
        }
      }
      for (const [k, v] of Object.entries(masterKeyOnly)) {
        if (v) after.masterKeyOnly[k] = true;
        else delete after.masterKeyOnly[k];
      }
      await store.setConfig(after);
      this.emit(ctx, 'update', CONFIG_EVENT_CLASS, null, { ...before }, { ...after });
    });
  }
}

/** An exported date: ISO 8601 in UTC, as the service writes them. */
const ISO_DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/;

/** Internal columns a restore may write, per class: the ones the service itself keeps. */
const RESTORABLE_INTERNAL: Record<string, readonly string[]> = {
  _User: Object.values(USER_INTERNAL_COLUMNS),
};

/**
 * The checks of a restored row against its class's schema (`WritePipeline.restore`; the import
 * also runs them on every row before it writes anything): ids and dates as the service writes
 * them, values of the schema's types and no operations, internal columns the service keeps.
 */
export function parseRestoredRow(
  schema: ClassSchema,
  row: Row,
  internal: InternalValues | undefined,
): { objectId: string; createdAt: string; updatedAt: string; parsed: ParsedWrite } {
  const { className } = schema;
  const { objectId, createdAt, updatedAt, ...fields } = row;
  if (typeof objectId !== 'string' || !CHOSEN_OBJECT_ID.test(objectId)) {
    throw new BdsError(ErrorCode.INVALID_KEY_NAME, 'objectId must be 1 to 64 letters, digits, "_" or "-".');
  }
  for (const [name, value] of [
    ['createdAt', createdAt],
    ['updatedAt', updatedAt],
  ] as const) {
    if (typeof value !== 'string' || !ISO_DATE.test(value) || Number.isNaN(Date.parse(value))) {
      throw incorrectType(`${name} must be a date in ISO 8601 form, in UTC.`);
    }
  }
  // Relation fields hold no value in a row: their members are restored by restoreRelation.
  for (const [name, def] of Object.entries(schema.fields)) if (def.type === 'Relation') delete fields[name];
  const parsed = parseWriteBody(fields, 'create', schema.fields);
  const missing = [...parsed.types.keys()];
  if (missing.length > 0) throw incorrectType(`${className} has no field ${missing[0]} in its schema.`);
  if (parsed.relations.length > 0 || parsed.writes.some((w) => w.kind !== 'set')) {
    throw incorrectType('A restored row holds values, not operations.');
  }
  for (const [column, value] of Object.entries(internal ?? {})) {
    if (!(RESTORABLE_INTERNAL[className] ?? []).includes(column)) {
      throw new BdsError(ErrorCode.INVALID_KEY_NAME, `${className} has no internal column ${column}.`);
    }
    if (value !== null && typeof value !== 'string') {
      throw incorrectType(`The internal column ${column} holds text.`);
    }
  }
  return { objectId, createdAt: createdAt as string, updatedAt: updatedAt as string, parsed };
}

/** `password` and `sessionToken` are written by the account rules, never as plain fields. */
function checkAccountFields(className: string, parsed: ParsedWrite): void {
  if (
    className === '_User' &&
    parsed.writes.some((w) => w.field === 'password' || w.field === 'sessionToken')
  ) {
    throw new BdsError(ErrorCode.INVALID_KEY_NAME, 'password cannot be written through /classes/_User.');
  }
}
