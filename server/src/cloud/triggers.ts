import { isDeepStrictEqual } from 'node:util';
import { isObject, type LiveEventKind } from '@bds/client/protocol';
import type { Data } from '../data/data.ts';
import { HookTransportError } from '../hooks/client.ts';
import type { WebhookTrigger } from '../hooks/registry.ts';
import type { Webhooks } from '../hooks/webhooks.ts';
import type { Ctx } from '../kernel/context.ts';
import { BdsError, ErrorCode } from '../kernel/errors.ts';
import type { PendingWrite, WriteEvent, WriteTriggers } from '../kernel/events.ts';
import type { Logger } from '../kernel/log.ts';
import type { Row } from '../kernel/records.ts';
import type { AccountTriggers, FindQuery, ReadTriggers } from '../kernel/triggers.ts';
import { type Invocation, type Invoker, messageOf } from './invoke.ts';
import { type CloudRegistry, type CloudRequest, CONNECT_CLASS } from './registry.ts';

/** Fields of a row that the service assigns: a trigger's answer never writes them. */
const ASSIGNED = new Set(['className', 'objectId', 'createdAt', 'updatedAt']);

/** A row in the wire form handlers get: `{className, objectId, …fields}`. */
const wire = (className: string, row: Row): Row => ({ className, ...row });

/**
 * A webhook call that failed in transit (a timeout, an unreachable receiver, an HTTP error,
 * garbage, a URL refused): 141 with the transport's text. Never 100, which tells a client that
 * it could not reach the service itself.
 */
export function transportError(err: unknown): BdsError {
  return new BdsError(
    ErrorCode.SCRIPT_FAILED,
    err instanceof HookTransportError ? err.message : messageOf(err),
  );
}

/** The body of a hook call about a row (docs/protocol.md#hook-calls). */
export function hookPayload(request: CloudRequest, extra: Record<string, unknown>): Record<string, unknown> {
  // A receiver gets the user without its authData (third-party tokens stay in the service).
  const { authData: _authData, ...user } = request.user ?? {};
  return {
    ...extra,
    master: request.master,
    ...(request.user ? { user } : {}),
    ...(request.installationId ? { installationId: request.installationId } : {}),
    context: request.context,
  };
}

/**
 * The write body a before-save trigger's answer stands for. On create: the answer's fields. On
 * update: the fields the write sent (as the trigger left them: one it removed is not written)
 * and every field whose value the trigger changed from the stored row. Fields the trigger left
 * out are never deleted by omission; `{"__op": "Delete"}` deletes explicitly.
 */
function bodyFrom(write: PendingWrite, body: Record<string, unknown>, answer: Row): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(answer)) {
    if (ASSIGNED.has(key)) continue;
    if (write.op === 'create' || key in body || !isDeepStrictEqual(value, write.original?.[key]))
      out[key] = value;
  }
  return out;
}

/** What a realtime connect tells beforeConnect (the incumbent's request fields). */
export interface LiveConnectDetails {
  installationId: string | null;
  useMasterKey: boolean;
  /** The client key the connect frame gave (clientKey, javascriptKey or restAPIKey). */
  clientKey: string | undefined;
  sessionToken: string | undefined;
}

/** A subscription query as realtime triggers see and answer it: a find's wire query, with `watch`. */
export type LiveQueryWire = FindQuery & { watch?: string };

/** What a subscribe or update frame tells beforeSubscribe (the incumbent's request fields). */
export interface LiveSubscribeDetails {
  op: 'subscribe' | 'update';
  requestId: number | string;
  sessionToken: string | undefined;
  query: LiveQueryWire;
}

/** What a realtime event tells afterLiveQueryEvent about one subscriber (the incumbent's request fields). */
export interface LiveEventDetails {
  event: LiveEventKind;
  /** The rows the frame is built from, in wire form with their className, before presentation. */
  object: Row;
  original: Row | undefined;
  useMasterKey: boolean;
  sessionToken: string | undefined;
  clients: number;
  subscriptions: number;
}

/** What afterLiveQueryEvent decided: not sent, or sent built from these rows. */
export type LiveEventAnswer = { send: false } | { send: true; object: Row; original: Row | undefined };

/**
 * A find or subscribe trigger's answer as the query to run: an object with a where object; the
 * class stays the caller's. Anything else fails the call (141).
 */
function queryAnswered<Q extends { className: string }>(
  triggerName: string,
  result: unknown,
  className: string,
): Q {
  if (!isObject(result) || (result.where !== undefined && !isObject(result.where))) {
    throw new BdsError(
      ErrorCode.SCRIPT_FAILED,
      `${triggerName} must leave or answer a query object with a where object.`,
    );
  }
  return { ...result, where: (result.where as Record<string, unknown>) ?? {}, className } as unknown as Q;
}

/**
 * Cloud code and webhooks as the service's triggers. For every trigger the in-process handlers
 * run first (the option `cloud`'s, then the option `parseCloud`'s), then the webhook (both when both exist): a before-save webhook sees the object as
 * the in-process trigger left it. Before-triggers may refuse (142) or change the write; after-
 * triggers run once the write committed, in the background, and their failures are logged.
 */
export class CloudTriggers implements WriteTriggers, ReadTriggers, AccountTriggers {
  private readonly pending = new Set<Promise<void>>();

  constructor(
    data: Data,
    private readonly registry: CloudRegistry,
    private readonly webhooks: Webhooks,
    private readonly invoker: Invoker,
    private readonly log: Logger,
  ) {
    data.core.events.subscribe((event) => this.after(event), {
      name: 'after-write triggers',
      phase: 'sideEffects',
    });
  }

  private hooks() {
    return this.webhooks.registry;
  }

  // ---- writes ----------------------------------------------------------------------------------

  hasBefore(className: string, op: PendingWrite['op']): boolean {
    const name = op === 'delete' ? 'beforeDelete' : 'beforeSave';
    return (
      this.registry.trigger(className, name).length > 0 || Boolean(this.hooks().triggerUrl(className, name))
    );
  }

  async before(write: PendingWrite): Promise<Record<string, unknown> | undefined> {
    const { className, op } = write;
    const triggerName = op === 'delete' ? 'beforeDelete' : 'beforeSave';
    const original = write.original ? wire(className, write.original) : undefined;
    let body = write.body ?? {};
    const objectOf = (): Row =>
      op === 'delete'
        ? original!
        : {
            className,
            ...(original ?? {}),
            ...(write.objectId ? { objectId: write.objectId } : {}),
            ...structuredClone(body),
          };
    const request = await this.invoker.request(write, { object: objectOf(), original, triggerName });
    // The modules' handlers in order (docs/cloud.md#order-of-triggers): each sees the object as the
    // one before it left it.
    for (const handler of this.registry.trigger(className, triggerName)) {
      const answer = await this.invoker.run(handler, request, ErrorCode.VALIDATION_ERROR);
      if (op !== 'delete') {
        const result = isObject(answer) ? answer : request.object;
        if (isObject(result)) body = bodyFrom(write, body, result);
        request.object = objectOf();
      }
    }
    const url = this.hooks().triggerUrl(className, triggerName);
    if (url) {
      const payload = hookPayload(request, {
        triggerName,
        object: request.object,
        ...(original ? { original } : {}),
      });
      const target = {
        kind: 'trigger' as const,
        url,
        className,
        triggerName,
        objectId: write.objectId ?? undefined,
        requestId: write.requestId,
      };
      let answer: Awaited<ReturnType<Webhooks['call']>>;
      try {
        answer = await this.webhooks.call(target, payload);
      } catch (err) {
        throw transportError(err);
      }
      if (!answer.ok) throw new BdsError(ErrorCode.VALIDATION_ERROR, answer.error);
      if (op !== 'delete' && isObject(answer.value)) body = bodyFrom(write, body, answer.value);
    }
    return op === 'delete' ? undefined : body;
  }

  /** afterSave / afterDelete, once the write committed: in-process, then the webhook (retried). */
  private after(event: WriteEvent): void {
    // Once per write: on the instance where it happened, not on every instance that hears of it.
    if (event.remote || event.op === 'purge' || !event.objectId) return;
    const { className } = event;
    const triggerName: WebhookTrigger = event.op === 'delete' ? 'afterDelete' : 'afterSave';
    const handlers = this.registry.trigger(className, triggerName);
    const url = this.hooks().triggerUrl(className, triggerName);
    if (!handlers.length && !url) return;
    const object = wire(className, (event.after ?? event.before)!);
    const original = event.op === 'update' && event.before ? wire(className, event.before) : undefined;
    const task = async () => {
      const request = await this.invoker.request(event, { object, original, triggerName });
      for (const handler of handlers) {
        try {
          await this.invoker.run(handler, request, ErrorCode.SCRIPT_FAILED);
        } catch (err) {
          this.log.error({ className, trigger: triggerName, err: messageOf(err) }, 'cloud trigger failed');
        }
      }
      if (url) {
        const payload = hookPayload(request, { triggerName, object, ...(original ? { original } : {}) });
        this.webhooks.deliver(
          {
            kind: 'trigger',
            url,
            className,
            triggerName,
            objectId: event.objectId!,
            requestId: event.requestId,
          },
          payload,
        );
      }
    };
    this.track(task);
  }

  private track(task: () => Promise<void>): void {
    const p = task()
      .catch((err: unknown) => this.log.error({ err: messageOf(err) }, 'cloud trigger failed'))
      .finally(() => this.pending.delete(p));
    this.pending.add(p);
  }

  /** Waits for after-triggers under way (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.pending.size) await Promise.all([...this.pending]);
    await this.webhooks.idle();
  }

  // ---- reads -----------------------------------------------------------------------------------

  hasFind(className: string): boolean {
    return this.registry.hasClassTriggers(className, ['beforeFind', 'afterFind']);
  }

  async beforeFind(ctx: Ctx, query: FindQuery): Promise<FindQuery> {
    for (const handler of this.registry.trigger(query.className, 'beforeFind')) {
      const request = await this.invoker.request(ctx, {
        query: structuredClone(query),
        triggerName: 'beforeFind',
      });
      const answer = await this.invoker.run(handler, request, ErrorCode.SCRIPT_FAILED);
      query = queryAnswered('beforeFind', isObject(answer) ? answer : request.query, query.className);
    }
    return query;
  }

  async afterFind(ctx: Ctx, query: FindQuery, rows: Row[]): Promise<Row[]> {
    for (const handler of this.registry.trigger(query.className, 'afterFind')) {
      const request = await this.invoker.request(ctx, { query, results: rows, triggerName: 'afterFind' });
      const answer = await this.invoker.run(handler, request, ErrorCode.SCRIPT_FAILED);
      const results = Array.isArray(answer) ? answer : request.results;
      rows = Array.isArray(results) ? results : [];
    }
    return rows;
  }

  // ---- realtime --------------------------------------------------------------------------------

  hasBeforeConnect(): boolean {
    return this.registry.trigger(CONNECT_CLASS, 'beforeConnect').length > 0;
  }

  /**
   * beforeConnect, before a realtime connection is accepted: throwing refuses it (141 with the
   * text, as the incumbent answers); what it returns is ignored.
   */
  async beforeConnect(call: Invocation, details: LiveConnectDetails): Promise<void> {
    for (const handler of this.registry.trigger(CONNECT_CLASS, 'beforeConnect')) {
      const request = await this.invoker.request(call, {
        ...details,
        event: 'connect',
        triggerName: 'beforeConnect',
      });
      await this.invoker.run(handler, request, ErrorCode.SCRIPT_FAILED);
    }
  }

  hasBeforeSubscribe(className: string): boolean {
    return this.registry.hasClassTriggers(className, ['beforeSubscribe']);
  }

  /**
   * beforeSubscribe, at each subscribe and update of a subscription: throwing refuses it (141);
   * like beforeFind it edits `request.query` or answers a new one, which realtime then checks as
   * the subscriber's own, so it can only narrow.
   */
  async beforeSubscribe(call: Invocation, details: LiveSubscribeDetails): Promise<LiveQueryWire> {
    let { query } = details;
    for (const handler of this.registry.trigger(query.className, 'beforeSubscribe')) {
      const request = await this.invoker.request(call, {
        ...details,
        query: structuredClone(query),
        triggerName: 'beforeSubscribe',
      });
      const answer = await this.invoker.run(handler, request, ErrorCode.SCRIPT_FAILED);
      query = queryAnswered('beforeSubscribe', isObject(answer) ? answer : request.query, query.className);
    }
    return query;
  }

  hasAfterLiveQueryEvent(className: string): boolean {
    return this.registry.hasClassTriggers(className, ['afterLiveQueryEvent']);
  }

  /**
   * afterLiveQueryEvent, for each subscriber an event passed (its access already decided): each
   * handler sees the rows as the one before it left them; `request.sendEvent = false` keeps the
   * event from this subscriber, a changed `request.object` / `request.original` is what its frame is
   * built from (then presented as for any event: it never shows what the subscriber may not see).
   * The className and objectId stay the event's. Throwing answers the subscriber an error frame.
   */
  async afterLiveQueryEvent(call: Invocation, details: LiveEventDetails): Promise<LiveEventAnswer> {
    const { className, objectId } = details.object;
    let { object, original } = details;
    for (const handler of this.registry.trigger(className as string, 'afterLiveQueryEvent')) {
      const request = await this.invoker.request(call, {
        ...details,
        object: structuredClone(object),
        original: original && structuredClone(original),
        sendEvent: true,
        triggerName: 'afterLiveQueryEvent',
      });
      await this.invoker.run(handler, request, ErrorCode.SCRIPT_FAILED);
      if (request.sendEvent === false) return { send: false };
      if (isObject(request.object)) object = { ...request.object, className, objectId };
      if (original && isObject(request.original))
        original = { ...request.original, className, objectId: original.objectId };
    }
    return { send: true, object, original };
  }

  // ---- accounts --------------------------------------------------------------------------------

  async beforeLogin(ctx: Ctx, user: Row): Promise<void> {
    for (const handler of this.registry.trigger('_User', 'beforeLogin')) {
      const request = await this.invoker.request(ctx, {
        object: wire('_User', user),
        triggerName: 'beforeLogin',
      });
      await this.invoker.run(handler, request, ErrorCode.VALIDATION_ERROR);
    }
  }

  /**
   * beforePasswordResetRequest, before a reset mail is sent: throwing sends none. The answer to
   * the request stays `{}` either way (it never tells whether an address has an account).
   */
  async beforePasswordResetRequest(ctx: Ctx, user: Row): Promise<void> {
    for (const handler of this.registry.trigger('_User', 'beforePasswordResetRequest')) {
      const request = await this.invoker.request(ctx, {
        object: wire('_User', user),
        triggerName: 'beforePasswordResetRequest',
      });
      await this.invoker.run(handler, request, ErrorCode.VALIDATION_ERROR);
    }
  }

  afterLogin(ctx: Ctx, user: Row): void {
    this.background(ctx, 'afterLogin', wire('_User', user));
  }

  afterLogout(ctx: Ctx, session: Row): void {
    this.background(ctx, 'afterLogout', wire('_Session', session));
  }

  private background(call: Invocation, triggerName: 'afterLogin' | 'afterLogout', object: Row): void {
    const handlers = this.registry.trigger('_User', triggerName);
    if (!handlers.length) return;
    this.track(async () => {
      const request = await this.invoker.request(call, { object, triggerName });
      for (const handler of handlers) {
        try {
          await this.invoker.run(handler, request, ErrorCode.SCRIPT_FAILED);
        } catch (err) {
          this.log.error({ trigger: triggerName, err: messageOf(err) }, 'cloud trigger failed');
        }
      }
    });
  }
}
