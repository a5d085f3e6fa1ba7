import { isObject } from '@bds/client/protocol';
import type { Ctx } from '../kernel/context.ts';
import { CONFIG_EVENT_CLASS, SCHEMA_EVENT_CLASS } from '../kernel/events.ts';
import type { ClassSchema, FieldDef } from '../kernel/schema.ts';
import { checkClassName, schemaDocument } from '../schema/registry.ts';
import type { StoredConfig } from '../storage/adapter.ts';
import { demandMaster } from './authorize.ts';
import type { Core } from './core.ts';
import { publishWrite } from './write-events.ts';

/**
 * The writes of the pipeline (pipeline.ts) that change the schema or the config: the fields a
 * row write adds, and the master-only schema and config changes (decided here through the
 * master-only surface decider, whatever the route checked). Each change is announced as a
 * `_SCHEMA` or `_GlobalConfig` event.
 */
export class SchemaWrites {
  constructor(private readonly core: Core) {}

  /**
   * The schema a write needs: fields it adds are created (and a new class, when allowed), each
   * change announced as a `_SCHEMA` event. Runs inside the write's transaction when it changes.
   */
  async ensureFields(
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
      // The cache learns a new class once its table is committed: a concurrent write that saw it
      // earlier would write to a table its own transaction cannot see yet (PostgreSQL answered
      // "relation does not exist" to concurrent first writes of a class). A concurrent write that
      // finds no class waits on the store's schema lock, then joins the stored class.
      store.afterCommit(() => schemas.set(plan.schema));
      this.emitSchema(ctx, className, undefined, plan.schema);
    } else if (plan.change) {
      await store.changeSchema(plan.schema, plan.change);
      // New fields are known at once: the rest of this write (a sign-up's answer, say) reads them.
      schemas.set(plan.schema);
      this.emitSchema(ctx, className, existing, plan.schema);
    }
    return plan.schema;
  }

  private emitSchema(
    ctx: Ctx,
    className: string,
    before: ClassSchema | undefined,
    after: ClassSchema | undefined,
  ) {
    publishWrite(
      this.core,
      ctx,
      before ? (after ? 'update' : 'delete') : 'create',
      SCHEMA_EVENT_CLASS,
      className,
      before ? schemaDocument(before) : null,
      after ? schemaDocument(after) : null,
    );
  }

  async createClass(ctx: Ctx, className: string, doc: Record<string, unknown>): Promise<ClassSchema> {
    demandMaster(ctx.caller, 'schema', className);
    const schema = this.core.schemas.planCreate(className, doc);
    await this.core.store.createClass(schema);
    this.core.schemas.set(schema);
    this.emitSchema(ctx, className, undefined, schema);
    return schema;
  }

  async updateClass(ctx: Ctx, className: string, doc: Record<string, unknown>): Promise<ClassSchema> {
    demandMaster(ctx.caller, 'schema', className);
    const before = this.core.schemas.get(className);
    const { schema, change } = this.core.schemas.planUpdate(className, doc);
    await this.core.store.changeSchema(schema, change);
    this.core.schemas.set(schema);
    this.emitSchema(ctx, className, before, schema);
    return schema;
  }

  /** Drops an empty class that is not built in. */
  async deleteClass(ctx: Ctx, className: string): Promise<void> {
    demandMaster(ctx.caller, 'schema', className);
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

  /** Applies a change to the config: `{__op: "Delete"}` removes a parameter; flags set masterKeyOnly. */
  async updateConfig(
    ctx: Ctx,
    params: Record<string, unknown>,
    masterKeyOnly: Record<string, boolean>,
  ): Promise<void> {
    demandMaster(ctx.caller, 'config');
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
      publishWrite(this.core, ctx, 'update', CONFIG_EVENT_CLASS, null, { ...before }, { ...after });
    });
  }
}
