import { isObject } from '@bds/client/protocol';
import type { Clock } from '../kernel/clock.ts';
import type { Ctx } from '../kernel/context.ts';
import { BdsError, ErrorCode, invalidQuery, notFound } from '../kernel/errors.ts';
import type { Logger } from '../kernel/log.ts';
import type { Row } from '../kernel/records.ts';
import { checkClassName } from '../schema/registry.ts';
import type { StoredVersion, VersionFilter, VersionOp } from '../storage/adapter.ts';
import { demandMaster } from './authorize.ts';
import type { Data } from './data.ts';
import { UNRESTORED_FIELDS } from './versions.ts';

/** A version as the history routes answer it (docs/protocol.md#row-history). */
export interface VersionView {
  id: string;
  className: string;
  objectId: string;
  op: VersionOp;
  time: string;
  before: Row | null;
  after: Row | null;
  caller: { kind: string; userId?: string; name?: string };
  source: string;
  eventId: string | null;
  requestId: string | null;
  revertOf?: string;
}

const OPS: readonly VersionOp[] = ['create', 'update', 'delete', 'revert', 'restore'];
/** Versions one listing answers at most. */
export const MAX_VERSIONS_LIMIT = 1000;
/** Fields every row has, which a revert or restore never sets. */
const BOOKKEEPING = new Set(['objectId', 'createdAt', 'updatedAt']);

function view(v: StoredVersion): VersionView {
  const caller: VersionView['caller'] = { kind: v.callerKind };
  if (v.userId !== null) caller.userId = v.userId;
  if (v.name !== null) caller.name = v.name;
  const out: VersionView = {
    id: v.id,
    className: v.className,
    objectId: v.objectId,
    op: v.op,
    time: v.time,
    before: v.before,
    after: v.after,
    caller,
    source: v.source,
    eventId: v.eventId,
    requestId: v.requestId,
  };
  if (v.revertOf !== null) out.revertOf = v.revertOf;
  return out;
}

/** A query parameter as one string (a repeated one is refused). */
function param(query: Record<string, unknown>, name: string): string | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw invalidQuery(`${name} must be given once, as a string.`);
  return value;
}

function limitOf(query: Record<string, unknown>, fallback: number): number {
  const raw = param(query, 'limit');
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < 1 || n > MAX_VERSIONS_LIMIT)
    throw invalidQuery(`limit must be a whole number from 1 to ${MAX_VERSIONS_LIMIT}.`);
  return n;
}

/** An ISO 8601 instant, as the history compares it (UTC, milliseconds). */
function instantOf(query: Record<string, unknown>, name: string): string | undefined {
  const raw = param(query, name);
  if (raw === undefined) return undefined;
  const ms = /^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:\d{2})?)?$/.test(raw) ? Date.parse(raw) : Number.NaN;
  if (Number.isNaN(ms))
    throw invalidQuery(`${name} must be an ISO 8601 date, e.g. 2026-11-29T15:00:00.000Z.`);
  return new Date(ms).toISOString();
}

function versionIdOf(body: unknown, required: boolean): string | undefined {
  if (body !== undefined && body !== null && !isObject(body))
    throw new BdsError(ErrorCode.INVALID_JSON, 'The body must be a JSON object.');
  const version = isObject(body) ? body.version : undefined;
  if (version === undefined && !required) return undefined;
  if (typeof version !== 'string' || version === '')
    throw new BdsError(ErrorCode.INVALID_JSON, 'The body must be {"version": "<a version id>"}.');
  return version;
}

/**
 * The row history (docs/protocol.md#row-history), master key only: the versions of a row or of a
 * class, a row as it was at a time, and reverts and restores, which are new writes through the
 * one pipeline (triggers, validation, events and realtime apply, and they leave versions
 * themselves). Prunes versions past the retention options on a timer.
 */
export class History {
  private timer: unknown;
  private pruning: Promise<number> | undefined;
  private closed = false;

  constructor(
    private readonly data: Data,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  private get store() {
    return this.data.core.store;
  }

  private check(ctx: Ctx, className: string): void {
    demandMaster(ctx.caller, 'history', className);
    checkClassName(className);
  }

  /** GET /history/<class>/<objectId>: newest first, `limit` (50) from `before` on. */
  async ofRow(ctx: Ctx, className: string, objectId: string, query: Record<string, unknown>) {
    this.check(ctx, className);
    const filter: VersionFilter = { className, objectId, limit: limitOf(query, 50) };
    const before = param(query, 'before');
    if (before !== undefined) filter.before = before;
    return (await this.store.versions(filter)).map(view);
  }

  /** GET /history/<class>: the class's recent changes, deleted rows included, newest first. */
  async ofClass(ctx: Ctx, className: string, query: Record<string, unknown>) {
    this.check(ctx, className);
    const filter: VersionFilter = { className, limit: limitOf(query, 100) };
    const user = param(query, 'user');
    const field = param(query, 'field');
    const op = param(query, 'op');
    const before = param(query, 'before');
    const since = instantOf(query, 'since');
    const until = instantOf(query, 'until');
    if (op !== undefined && !OPS.includes(op as VersionOp))
      throw invalidQuery(`op must be one of ${OPS.join(', ')}.`);
    if (user !== undefined) filter.user = user;
    if (field !== undefined) filter.field = field;
    if (op !== undefined) filter.op = op as VersionOp;
    if (before !== undefined) filter.before = before;
    if (since !== undefined) filter.since = since;
    if (until !== undefined) filter.until = until;
    return (await this.store.versions(filter)).map(view);
  }

  /** GET /history/<class>/<objectId>/at?time=: the row as it was then, or null when it did not exist. */
  async at(ctx: Ctx, className: string, objectId: string, query: Record<string, unknown>) {
    this.check(ctx, className);
    const time = instantOf(query, 'time');
    if (time === undefined) throw invalidQuery('time is required: an ISO 8601 date.');
    const version = await this.store.versionAt(className, objectId, time);
    return version?.after ?? null;
  }

  /** The version `id` of this row, or 101 naming it. */
  private async versionOfRow(className: string, objectId: string, id: string): Promise<StoredVersion> {
    const version = await this.store.version(id);
    if (!version || version.className !== className || version.objectId !== objectId)
      throw new BdsError(ErrorCode.OBJECT_NOT_FOUND, `No version ${id} of ${className} ${objectId}.`);
    return version;
  }

  /**
   * POST /history/<class>/<objectId>/revert {version}: the row's fields become those of the version
   * (its `after`, or its `before` for a delete), as an update through the pipeline, recorded as `revert`.
   */
  async revert(ctx: Ctx, className: string, objectId: string, body: unknown) {
    this.check(ctx, className);
    const id = versionIdOf(body, true)!;
    const version = await this.versionOfRow(className, objectId, id);
    const target = (version.op === 'delete' ? version.before : version.after) ?? {};
    const schema = this.data.core.schemas.get(className);
    const current = schema && (await this.data.reads.byId(schema, objectId));
    if (!current) throw notFound();
    const skip = new Set(UNRESTORED_FIELDS[className] ?? []);
    const update: Record<string, unknown> = {};
    for (const [field, value] of Object.entries(target)) {
      if (BOOKKEEPING.has(field) || skip.has(field) || isRelation(value)) continue;
      update[field] = value;
    }
    for (const [field, value] of Object.entries(current)) {
      if (BOOKKEEPING.has(field) || skip.has(field) || isRelation(value) || field in target) continue;
      // The version's row had no ACL: public.
      update[field] = field === 'ACL' ? { '*': { read: true, write: true } } : { __op: 'Delete' };
    }
    const { updatedAt } = await this.data.writes.update(ctx, className, objectId, update, {
      history: { op: 'revert', revertOf: version.id },
    });
    return { objectId, updatedAt };
  }

  /**
   * POST /history/<class>/<objectId>/restore {version?}: re-creates a deleted row, same objectId,
   * with its last fields (or those of the version given), as a create through the pipeline,
   * recorded as `restore`.
   */
  async restore(ctx: Ctx, className: string, objectId: string, body: unknown) {
    this.check(ctx, className);
    const id = versionIdOf(body, false);
    const schema = this.data.core.schemas.get(className);
    if (schema && (await this.data.reads.byId(schema, objectId)))
      throw new BdsError(
        ErrorCode.DUPLICATE_VALUE,
        `${className} ${objectId} exists: restore re-creates a deleted row (revert changes an existing one).`,
      );
    let version: StoredVersion | undefined;
    if (id !== undefined) version = await this.versionOfRow(className, objectId, id);
    else [version] = await this.store.versions({ className, objectId, limit: 1 });
    if (!version) throw new BdsError(ErrorCode.OBJECT_NOT_FOUND, `${className} ${objectId} has no history.`);
    const fields = (version.op === 'delete' ? version.before : version.after) ?? {};
    const skip = new Set(UNRESTORED_FIELDS[className] ?? []);
    const create: Record<string, unknown> = {};
    for (const [field, value] of Object.entries(fields)) {
      if (BOOKKEEPING.has(field) || skip.has(field) || isRelation(value)) continue;
      create[field] = value;
    }
    const created = await this.data.writes.create(ctx, className, create, {
      objectId,
      history: { op: 'restore' },
    });
    return { objectId, createdAt: created.createdAt };
  }

  /** Deletes the versions past the retention options (`history.maxAgeMs`, `maxVersionsPerRow`). */
  prune(): Promise<number> {
    this.pruning ??= this.pruneNow().finally(() => {
      this.pruning = undefined;
    });
    return this.pruning;
  }

  private async pruneNow(): Promise<number> {
    const { maxAgeMs, maxVersionsPerRow } = this.data.core.options.history;
    const bounds: { olderThan?: string; keepPerRow?: number } = {};
    if (maxAgeMs > 0) bounds.olderThan = new Date(this.clock.now() - maxAgeMs).toISOString();
    if (maxVersionsPerRow > 0) bounds.keepPerRow = maxVersionsPerRow;
    if (bounds.olderThan === undefined && bounds.keepPerRow === undefined) return 0;
    return this.store.pruneHistory(bounds);
  }

  /** Settles when the prune under way (if any) has finished: how many versions it deleted. */
  async settled(): Promise<number> {
    return (await this.pruning) ?? 0;
  }

  /** Prunes every `history.pruneIntervalMs` until closed. */
  start(): void {
    const every = this.data.core.options.history.pruneIntervalMs;
    const tick = () => {
      if (this.closed) return;
      this.prune()
        .catch((err) =>
          this.log.error({ err: err instanceof Error ? err.message : String(err) }, 'history prune failed'),
        )
        .finally(() => {
          if (!this.closed) this.timer = this.clock.setTimeout(tick, every);
        });
    };
    this.timer = this.clock.setTimeout(tick, every);
  }

  /** Stops the timer and waits for a prune under way. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    await this.pruning?.catch(() => undefined);
  }
}

const isRelation = (value: unknown): boolean => isObject(value) && value.__type === 'Relation';
