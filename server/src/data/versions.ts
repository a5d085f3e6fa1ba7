import { isObject } from '@bds/client/protocol';
import { type HistoryOptions, recordsHistory } from '../config/history-options.ts';
import type { Ctx } from '../kernel/context.ts';
import { newObjectId } from '../kernel/ids.ts';
import type { Row } from '../kernel/records.ts';
import type { VersionCallerKind, VersionOp, VersionSource, VersionStamp } from '../storage/adapter.ts';

/**
 * What the row history keeps of a write (docs/protocol.md#row-history): the rule of which classes
 * are recorded, who the caller was, and which fields never go into a version. The store writes
 * the version in the write's own unit (storage/sql/history.ts).
 */

/** What a revert or restore asks the write it makes to be recorded as. */
export interface HistoryOp {
  op: Extract<VersionOp, 'revert' | 'restore'>;
  /** revert: the version reverted to. */
  revertOf?: string;
}

/** A console user's name as recorded: 1 to 128 characters, no control characters. */
export function consoleUserOf(value: string | string[] | undefined): string | undefined {
  if (typeof value !== 'string') return undefined;
  const name = value.trim();
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (name.length === 0 || name.length > 128 || /[\u0000-\u001f\u007f]/.test(name)) return undefined;
  return name;
}

/**
 * The context of a request with the console user it names, taken from master-key callers only: any
 * other caller's header is ignored (a user cannot sign its writes as the console's).
 */
export function withConsoleUser(ctx: Ctx, header: string | string[] | undefined): Ctx {
  if (!ctx.caller.isMaster || header === undefined) return ctx;
  const consoleUser = consoleUserOf(header);
  return consoleUser === undefined ? ctx : { ...ctx, consoleUser };
}

/** `_User` fields a version never holds: the password (never stored in the row anyway) and auth tokens. */
function withholdUser(row: Row): Row {
  const { password: _password, authData, ...kept } = row;
  if (isObject(authData)) {
    // The providers linked and their ids stay; tokens and secrets do not.
    const ids: Record<string, unknown> = {};
    for (const [provider, data] of Object.entries(authData))
      ids[provider] = isObject(data) && typeof data.id === 'string' ? { id: data.id } : {};
    kept.authData = ids;
  }
  return kept;
}

/** Fields of a class that a revert or restore leaves alone: what the version withholds or reduces. */
export const UNRESTORED_FIELDS: Readonly<Record<string, readonly string[]>> = {
  _User: ['password', 'authData'],
};

export class VersionStamps {
  /** Per class, whether it is recorded (the options never change while the service runs). */
  private readonly recorded = new Map<string, boolean>();

  constructor(private readonly options: HistoryOptions) {}

  /** True when writes of the class leave versions. */
  records(className: string): boolean {
    let on = this.recorded.get(className);
    if (on === undefined) {
      on = recordsHistory(this.options, className);
      if (this.recorded.size > 10_000) this.recorded.clear();
      this.recorded.set(className, on);
    }
    return on;
  }

  /** The stamp of a write of `className`, or undefined when the class is not recorded. */
  stamp(
    ctx: Ctx,
    className: string,
    op: 'create' | 'update' | 'delete',
    time: string,
    as?: HistoryOp,
  ): VersionStamp | undefined {
    if (!this.records(className)) return undefined;
    const { kind, source } = callerOf(ctx);
    return {
      op: as?.op ?? op,
      time,
      callerKind: kind,
      userId: ctx.caller.user?.objectId ?? null,
      name: ctx.consoleUser ?? null,
      source,
      eventId: newObjectId(16),
      requestId: ctx.requestId ?? null,
      revertOf: as?.revertOf ?? null,
      withhold: className === '_User' ? withholdUser : undefined,
    };
  }
}

/** Who made a write, as the history names it: the console's user, else where it entered, else the key. */
function callerOf(ctx: Ctx): { kind: VersionCallerKind; source: VersionSource } {
  if (ctx.consoleUser !== undefined) return { kind: 'console', source: 'console' };
  switch (ctx.source) {
    case 'cloud':
    case 'hook':
    case 'system':
      return { kind: ctx.source, source: ctx.source };
    default:
      return { kind: ctx.caller.kind, source: ctx.source };
  }
}
