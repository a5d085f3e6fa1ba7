import { isObject, OBJECT_ID_PATTERN } from '@bds/client/protocol';
import type { MasterSurface } from '../access/class.ts';
import type { Ctx } from '../kernel/context.ts';
import { BdsError, ErrorCode, incorrectType, notFound } from '../kernel/errors.ts';
import type { PendingWrite, WriteTriggers } from '../kernel/events.ts';
import { newObjectId } from '../kernel/ids.ts';
import type { QueryNode } from '../kernel/query.ts';
import type { Row } from '../kernel/records.ts';
import type { ClassSchema, FieldDef } from '../kernel/schema.ts';
import { checkClassName, classNotFound } from '../schema/registry.ts';
import type { InternalValues, VersionStamp } from '../storage/adapter.ts';
import { and, demandMaster, rowAccess } from './authorize.ts';
import {
  checkInstallationImmutable,
  checkRoleUpdate,
  duplicateRoleName,
  installationIdForCreate,
  roleCycle,
} from './builtin-rules.ts';
import type { Core } from './core.ts';
import type { Reads } from './reads.ts';
import { parseRestoredRow } from './restored-row.ts';
import { SchemaWrites } from './schema-writes.ts';
import { type HistoryOp, VersionStamps } from './versions.ts';
import { initialValues, mayChooseObjectId, type ParsedWrite, takeChosenObjectId } from './write-body.ts';
import { validateCreate, validateUpdate } from './write-checks.ts';
import { publishWrite, writerOf } from './write-events.ts';
import { echoProducedValues, readableAfterWrite, stripWriteResponse } from './write-response.ts';

/** Classes whose write checks read what the write changes: they run in a transaction. */
const CHECKED_IN_TRANSACTION = new Set(['_Role', '_Installation']);

export interface CreateOptions {
  /** A chosen objectId (the account rules pick the user's before its ACL names it). */
  objectId?: string;
  /** Internal columns to set (password hashes, tokens); never returned by reads. */
  internal?: InternalValues;
  /** How the row history records the write (a restore: data/history.ts); else as a create. */
  history?: HistoryOp;
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
  /** How the row history records the write (a revert: data/history.ts); else as an update. */
  history?: HistoryOp;
}

/** A write about to pass its before-write hooks (`runBeforeWrite`): what the hooks are told besides the body. */
interface HookedWrite extends Pick<PendingWrite, 'op' | 'className' | 'objectId'> {
  /** The stored row the write changes (null for a create), read only when a hook runs. */
  original: () => Promise<Row | null>;
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
  /** What the row history keeps of each write (data/versions.ts). */
  readonly versions: VersionStamps;

  constructor(
    private readonly core: Core,
    private readonly reads: Reads,
  ) {
    this.versions = new VersionStamps(core.options.history);
    this.schemaWrites = new SchemaWrites(core);
  }

  private readonly schemaWrites: SchemaWrites;

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

  /**
   * The before-write step of every write, in one order: the built-in classes' rules, the validate
   * step on what the caller sent, then the before-write triggers, the rules again on what the
   * triggers answered (a trigger cannot get around them), and the validate step again: a trigger
   * cannot store a value the caller could not have sent. The row the write changes is read once,
   * only when a hook runs. A create or update runs its hooks on an object body only (anything else
   * fails validation); a delete has no body: its rules and triggers see the stored row, and it has
   * nothing to validate.
   */
  private async runBeforeWrite<Checked>(
    ctx: Ctx,
    write: HookedWrite,
    body: unknown,
    validate: (body: unknown, triggered: boolean) => Checked,
  ): Promise<{ body: unknown; checked: Checked }> {
    const { op, className, objectId } = write;
    const { writeRules, beforeWrite } = this.core.hooks;
    const rules = writeRules.hasBefore(className, op);
    const triggered = beforeWrite.hasBefore(className, op);
    const hooked = op === 'delete' || isObject(body);
    const original = (rules || triggered) && hooked ? await write.original() : null;
    const run = async (triggers: WriteTriggers, sent: unknown) => {
      const changed = await triggers.before({
        op,
        className,
        objectId,
        body: sent as Record<string, unknown> | null,
        original,
        ...writerOf(ctx),
      });
      return changed ?? sent;
    };
    if (rules && hooked) body = await run(writeRules, body);
    let checked = validate(body, false);
    if (triggered && hooked) {
      body = await run(beforeWrite, body);
      if (rules && op !== 'delete' && isObject(body)) body = await run(writeRules, body);
      checked = validate(body, true);
    }
    return { body, checked };
  }

  /** The stored row an update or delete changes, as the caller may reach it; 101 when there is none. */
  private async storedRow(
    schema: ClassSchema,
    objectId: string,
    access: QueryNode | undefined,
  ): Promise<Row> {
    const row = await this.reads.byId(schema, objectId, access);
    if (!row) throw notFound();
    return row;
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
    const write: HookedWrite = {
      op: 'create',
      className,
      objectId: options.objectId ?? null,
      original: async () => null,
    };
    const { checked: parsed } = await this.runBeforeWrite(ctx, write, body, (sent) =>
      validateCreate(this.core, caller, className, sent),
    );
    const schema = this.core.schemas.get(className);
    const objectId = options.objectId ?? chosen?.objectId ?? newObjectId();
    const createdAt = new Date().toISOString();
    const version = this.versions.stamp(ctx, className, 'create', createdAt, options.history);
    const simple = schema && parsed.types.size === 0 && parsed.relations.length === 0;
    const created = await (simple
      ? this.insert(ctx, schema, parsed, objectId, createdAt, options.internal, version)
      : store.transaction(async () => {
          const target = await this.ensureFields(ctx, className, parsed.types, {
            createClass: caller.isMaster || opts.allowClientClassCreation,
          });
          return this.insert(ctx, target, parsed, objectId, createdAt, options.internal, version);
        })
    ).catch((err) => this.explainDuplicate(className, parsed, err));
    return stripWriteResponse(this.core, caller, className, created, parsed);
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
    version: VersionStamp | undefined,
  ): Promise<{ objectId: string; createdAt: string } & Row> {
    const { values, produced } = initialValues(parsed, target.fields);
    const row = await this.core.store.insert(target, {
      objectId,
      createdAt,
      values,
      acl: parsed.acl ?? null,
      relations: parsed.relations,
      internal,
      history: version,
    });
    publishWrite(this.core, ctx, 'create', target.className, objectId, null, row, version);
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
    const write: HookedWrite = {
      op: 'update',
      className,
      objectId,
      original: () => this.storedRow(schema, objectId, access),
    };
    // After the triggers, the class's schema as it stands then.
    const before = await this.runBeforeWrite(ctx, write, body, (sent, triggered) =>
      validateUpdate(
        this.core,
        caller,
        className,
        triggered ? (this.core.schemas.get(className) ?? schema) : schema,
        sent,
      ),
    );
    body = before.body;
    const parsed = before.checked;
    const updatedAt = options.touch === false ? null : new Date().toISOString();
    // A write of internal columns only changes nothing a version holds: it leaves none.
    const version =
      updatedAt === null
        ? undefined
        : this.versions.stamp(ctx, className, 'update', updatedAt, options.history);
    const simple = parsed.types.size === 0 && !CHECKED_IN_TRANSACTION.has(className);
    const apply = () =>
      this.applyUpdate(ctx, className, schema, objectId, body, parsed, access, updatedAt, options, version);
    const updated = await (simple ? apply() : store.transaction(apply));
    return stripWriteResponse(this.core, caller, className, updated);
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
    version: VersionStamp | undefined,
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
      history: version,
    });
    if (!result) throw notFound();
    publishWrite(this.core, ctx, 'update', className, objectId, result.before, result.after, version);
    const answer: { updatedAt: string } & Row = { updatedAt: result.after.updatedAt as string };
    // Values produced by operations (Increment, Add...) come back to the caller.
    const returning = echoProducedValues(parsed, result.after, answer);
    // A write-only row must not become readable through the values its operations produced.
    // The write may have committed already: a failing check withholds the values, never answers an error.
    if (
      returning &&
      !(await readableAfterWrite(this.core, this.reads, ctx.caller, target, objectId, result.after))
    ) {
      for (const key of Object.keys(answer)) if (key !== 'updatedAt') delete answer[key];
    }
    return answer;
  }

  async delete(ctx: Ctx, className: string, objectId: string): Promise<void> {
    this.checkRoute(className);
    const access = rowAccess(this.core, ctx.caller, className, 'delete', { source: ctx.source, objectId });
    const schema = this.core.schemas.get(className);
    if (!schema) throw notFound();
    const write: HookedWrite = {
      op: 'delete',
      className,
      objectId,
      original: () => this.storedRow(schema, objectId, access),
    };
    await this.runBeforeWrite(ctx, write, null, () => undefined);
    const version = this.versions.stamp(ctx, className, 'delete', new Date().toISOString());
    const deleted = await this.core.store.delete(schema, objectId, access, version);
    if (!deleted) throw notFound();
    publishWrite(this.core, ctx, 'delete', className, objectId, deleted, null, version);
  }

  /** Every row of a class (master only). One `purge` event for the class, no rows carried. */
  async purge(ctx: Ctx, className: string): Promise<void> {
    this.authorizeSurface(ctx, 'purge', className);
    checkClassName(className);
    const schema = this.core.schemas.get(className);
    if (!schema) return;
    await this.core.store.purge(schema);
    publishWrite(this.core, ctx, 'purge', className, null, null, null);
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
    const version = this.versions.stamp(ctx, className, 'create', new Date().toISOString());
    const after = await this.core.store.insert(schema, {
      objectId,
      createdAt,
      updatedAt,
      values,
      acl: parsed.acl ?? null,
      relations: [],
      internal,
      history: version,
    });
    publishWrite(this.core, ctx, 'create', className, objectId, null, after, version);
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
    if (relatedIds.length === 0 || !relatedIds.every((id) => OBJECT_ID_PATTERN.test(id))) {
      throw new BdsError(ErrorCode.INVALID_KEY_NAME, 'Relation members must be objectIds.');
    }
    const result = await this.core.store.update(schema, {
      objectId: owningId,
      updatedAt: null,
      writes: [],
      relations: [{ field, add: relatedIds, remove: [] }],
    });
    if (!result) throw notFound();
    publishWrite(this.core, ctx, 'update', className, owningId, result.before, result.after);
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

  /** The schema a write needs (schema-writes.ts), inside the write's transaction when it changes. */
  private ensureFields(
    ctx: Ctx,
    className: string,
    wanted: Map<string, FieldDef>,
    permission: { createClass: boolean },
  ): Promise<ClassSchema> {
    return this.schemaWrites.ensureFields(ctx, className, wanted, permission);
  }

  // Schema changes and config updates (master only), in schema-writes.ts.
  createClass(ctx: Ctx, className: string, doc: Record<string, unknown>): Promise<ClassSchema> {
    return this.schemaWrites.createClass(ctx, className, doc);
  }

  updateClass(ctx: Ctx, className: string, doc: Record<string, unknown>): Promise<ClassSchema> {
    return this.schemaWrites.updateClass(ctx, className, doc);
  }

  deleteClass(ctx: Ctx, className: string): Promise<void> {
    return this.schemaWrites.deleteClass(ctx, className);
  }

  updateConfig(
    ctx: Ctx,
    params: Record<string, unknown>,
    masterKeyOnly: Record<string, boolean>,
  ): Promise<void> {
    return this.schemaWrites.updateConfig(ctx, params, masterKeyOnly);
  }
}
