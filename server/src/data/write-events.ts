import type { Ctx } from '../kernel/context.ts';
import type { WriteEvent } from '../kernel/events.ts';
import type { Row } from '../kernel/records.ts';
import type { VersionStamp } from '../storage/adapter.ts';
import type { Core } from './core.ts';

/** Who makes a write and from where, as its event and its triggers' requests carry it. */
export function writerOf(
  ctx: Ctx,
): Pick<WriteEvent, 'caller' | 'source' | 'context' | 'ip' | 'headers' | 'requestId'> {
  return {
    caller: ctx.caller,
    source: ctx.source,
    context: ctx.context,
    ip: ctx.ip ?? null,
    headers: ctx.headers,
    requestId: ctx.requestId,
  };
}

/**
 * Publishes a write's event once the write's transaction commits; outside a transaction at once,
 * with no callback to queue (the common single-statement write). The one way the pipeline's
 * writes, schema changes and config updates announce themselves.
 */
export function publishWrite(
  core: Core,
  ctx: Ctx,
  op: WriteEvent['op'],
  className: string,
  objectId: string | null,
  before: Row | null,
  after: Row | null,
  version?: VersionStamp,
): void {
  const event: WriteEvent = { op, className, objectId, before, after, ...writerOf(ctx) };
  if (version?.eventId) event.eventId = version.eventId;
  const { store, events } = core;
  if (store.inTransaction()) store.afterCommit(() => events.publish(event));
  else events.publish(event);
}
