import { z } from 'zod';
import type { ServiceOptions } from '../config/options.ts';
import { demandMaster } from '../data/authorize.ts';
import type { Data } from '../data/data.ts';
import { MASTER } from '../kernel/caller.ts';
import { type Ctx, ctxOf } from '../kernel/context.ts';
import { BdsError, ErrorCode } from '../kernel/errors.ts';
import type { Logger } from '../kernel/log.ts';
import type { Row } from '../kernel/records.ts';
import { normaliseIso, parseWhere } from '../query/parse.ts';
import { type Delivery, type DeliveryResult, mapLimit, type PushProvider, providerFor } from './provider.ts';

export const PUSH_NOT_CONFIGURED =
  'Push is not configured: set the push option with apns and/or fcm credentials to send notifications.';
const INTERRUPTED = 'The service stopped while this push was running.';
/** With several instances: a running push whose row has not changed for this long was interrupted. */
export const STALE_RUNNING_MS = 10 * 60_000;
export const PUSH_NEEDS_AUDIENCE = 'Sending a push requires either "channels" or a "where" query.';

/** setTimeout's largest delay; a later push time re-arms the timer. */
const MAX_TIMER = 2 ** 31 - 1;

const isoDate = z
  .union([z.string(), z.object({ __type: z.literal('Date'), iso: z.string() })])
  .transform((v, ctx) => {
    const iso = normaliseIso(typeof v === 'string' ? v : v.iso);
    if (!iso) {
      ctx.addIssue({ code: 'custom', message: 'must be an ISO 8601 date' });
      return z.NEVER;
    }
    return iso;
  });

const pushBody = z
  .object({
    where: z.record(z.string(), z.unknown()).optional(),
    channels: z.array(z.string().min(1)).min(1).optional(),
    data: z.record(z.string(), z.unknown()),
    push_time: isoDate.optional(),
    expiration_time: isoDate.optional(),
    expiration_interval: z.number().int().positive().optional(),
  })
  .strict();

type PushBody = z.output<typeof pushBody>;

/** What a running push counts; written to its `_PushStatus` row after every page. */
interface Counts {
  numSent: number;
  numFailed: number;
  sentPerType: Record<string, number>;
  failedPerType: Record<string, number>;
  failureReasons: Record<string, number>;
}

const system = () => ctxOf(MASTER, 'system');

/**
 * POST /push and the life of a `_PushStatus` row: pending -> (scheduled ->) running -> succeeded
 * or failed. Every status change and every token removal or badge increment is a write through the
 * pipeline. Scheduled pushes are rows, so a restart finds them and arms their timers again.
 */
export class PushService {
  /** Loaded on first use (with jose and node:http2), so a service without push never loads them. */
  private readonly providers = new Map<'apns' | 'fcm', Promise<PushProvider>>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly running = new Set<Promise<void>>();
  private closed = false;

  constructor(
    private readonly data: Data,
    private readonly log: Logger,
    /** `_PushStatus` rows read per page when resuming after a start. */
    private readonly resumePage = 1000,
  ) {}

  get configured(): boolean {
    return this.data.core.options.push !== undefined;
  }

  private provider(kind: 'apns' | 'fcm'): Promise<PushProvider> | undefined {
    const push = this.data.core.options.push;
    let loaded = this.providers.get(kind);
    if (!loaded && kind === 'apns' && push?.apns) {
      const options = push.apns;
      loaded = import('./apns.ts').then(({ ApnsProvider }) => new ApnsProvider(options));
    }
    if (!loaded && kind === 'fcm' && push?.fcm) {
      const options = push.fcm;
      loaded = import('./fcm.ts').then(({ FcmProvider }) => new FcmProvider(options));
    }
    if (loaded) this.providers.set(kind, loaded);
    return loaded;
  }

  private get options(): NonNullable<ServiceOptions['push']> {
    return this.data.core.options.push!;
  }

  /** Answers the new `_PushStatus` id; delivery happens after the answer (or at push_time). */
  async send(ctx: Ctx, raw: unknown): Promise<string> {
    demandMaster(ctx.caller, 'push');
    if (!this.configured) throw new BdsError(ErrorCode.PUSH_MISCONFIGURED, PUSH_NOT_CONFIGURED);
    const parsed = pushBody.safeParse(raw ?? {});
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const field = issue.path.length ? issue.path.join('.') : 'body';
      const message = issue.code === 'unrecognized_keys' ? `unknown field ${issue.keys[0]}` : issue.message;
      throw new BdsError(ErrorCode.INVALID_JSON, `Invalid push: ${field}: ${message}.`);
    }
    const body: PushBody = parsed.data;
    if (!body.where && !body.channels) throw new BdsError(ErrorCode.PUSH_MISCONFIGURED, PUSH_NEEDS_AUDIENCE);
    parseWhere(body.where ?? {}); // a bad where is refused now (102), not when the push runs
    const badge = body.data.badge;
    if (
      badge !== undefined &&
      badge !== 'Increment' &&
      !(typeof badge === 'number' && Number.isInteger(badge))
    ) {
      throw new BdsError(ErrorCode.INCORRECT_TYPE, 'data.badge must be a whole number or "Increment".');
    }
    if (body.expiration_time && body.expiration_interval) {
      throw new BdsError(ErrorCode.INVALID_JSON, 'Use expiration_time or expiration_interval, not both.');
    }
    const now = Date.now();
    const pushTime =
      body.push_time && Date.parse(body.push_time) > now ? body.push_time : new Date(now).toISOString();
    const expiry = body.expiration_time
      ? body.expiration_time
      : body.expiration_interval
        ? new Date(Date.parse(pushTime) + body.expiration_interval * 1000).toISOString()
        : undefined;
    if (expiry && Date.parse(expiry) <= Date.parse(pushTime)) {
      throw new BdsError(ErrorCode.INVALID_JSON, 'The push would expire before its push_time.');
    }
    const created = await this.data.writes.create(system(), '_PushStatus', {
      pushTime: { __type: 'Date', iso: pushTime },
      source: ctx.source,
      query: JSON.stringify(body.where ?? {}),
      ...(body.channels ? { channels: body.channels } : {}),
      payload: JSON.stringify(body.data),
      ...(expiry ? { expiry: { __type: 'Date', iso: expiry } } : {}),
      status: 'pending',
      numSent: 0,
      numFailed: 0,
      ACL: {},
    });
    const id = created.objectId;
    if (Date.parse(pushTime) > now) {
      await this.setStatus(id, { status: 'scheduled' });
      this.schedule(id, Date.parse(pushTime));
    } else {
      this.start(id);
    }
    return id;
  }

  /**
   * Several instances share the store (Redis links them): a `running` push may be another
   * instance's. A running push writes its counts after every page, so one whose row has not
   * changed for this long was interrupted.
   */
  private get shared(): boolean {
    return Boolean(this.data.core.options.redisURL);
  }

  /**
   * After a (re)start: arms scheduled pushes, runs pending ones, and fails those a stop interrupted
   * (alone: every running push; with several instances: those silent for STALE_RUNNING_MS).
   * Every unfinished push, page by page (by objectId: a status changed here leaves no gap).
   * Every instance arms the same scheduled pushes; the claim in `run` lets one of them send.
   */
  async resume(): Promise<void> {
    const unfinished = { status: { $in: ['pending', 'scheduled', 'running'] } };
    let after = '';
    for (;;) {
      const { results } = await this.data.reads.find(system(), '_PushStatus', {
        where: JSON.stringify(after ? { $and: [unfinished, { objectId: { $gt: after } }] } : unfinished),
        order: 'objectId',
        limit: String(this.resumePage),
      });
      for (const row of results) {
        const id = row.objectId as string;
        if (row.status === 'running') {
          const silentFor = Date.now() - Date.parse(row.updatedAt as string);
          if (this.shared && silentFor < STALE_RUNNING_MS) continue;
          // Only while nobody else has written it since it was read (another instance's page).
          await this.claim(
            id,
            {
              status: 'failed',
              errorMessage: INTERRUPTED,
              finishedAt: { __type: 'Date', iso: new Date().toISOString() },
            },
            { status: 'running', updatedAt: { __type: 'Date', iso: row.updatedAt } },
          );
        } else if (row.status === 'scheduled') {
          this.schedule(id, Date.parse((row.pushTime as { iso: string }).iso));
        } else {
          this.start(id);
        }
      }
      if (results.length < this.resumePage) return;
      after = results.at(-1)!.objectId as string;
    }
  }

  private schedule(id: string, at: number): void {
    if (this.closed) return;
    clearTimeout(this.timers.get(id));
    const delay = at - Date.now();
    const timer = setTimeout(
      () => {
        this.timers.delete(id);
        if (delay > MAX_TIMER) this.schedule(id, at);
        else this.start(id);
      },
      Math.max(0, Math.min(delay, MAX_TIMER)),
    );
    timer.unref();
    this.timers.set(id, timer);
  }

  private start(id: string): void {
    if (this.closed) return;
    const run = this.run(id)
      .catch((err) =>
        this.log.error({ err: err instanceof Error ? err.message : String(err), push: id }, 'push failed'),
      )
      .finally(() => this.running.delete(run));
    this.running.add(run);
  }

  private setStatus(id: string, fields: Record<string, unknown>) {
    return this.data.writes.update(system(), '_PushStatus', id, fields);
  }

  /** A status change made only while the row still meets `expect`; answers whether it was. */
  private async claim(id: string, fields: Record<string, unknown>, expect: Record<string, unknown>) {
    try {
      await this.data.writes.update(system(), '_PushStatus', id, fields, { expect: parseWhere(expect) });
      return true;
    } catch (err) {
      if (err instanceof BdsError && err.code === ErrorCode.OBJECT_NOT_FOUND) return false;
      throw err;
    }
  }

  private async run(id: string): Promise<void> {
    const row = await this.data.reads.get(system(), '_PushStatus', id, {});
    if (row.status !== 'pending' && row.status !== 'scheduled') return;
    const now = new Date();
    const expiry = row.expiry ? Date.parse((row.expiry as { iso: string }).iso) : undefined;
    if (expiry !== undefined && expiry <= now.getTime()) {
      await this.setStatus(id, {
        status: 'failed',
        errorMessage: 'The push expired before it was sent.',
        finishedAt: { __type: 'Date', iso: now.toISOString() },
      });
      return;
    }
    // Claimed: of several instances armed for the same push, one sends it.
    const claimed = await this.claim(
      id,
      { status: 'running', startedAt: { __type: 'Date', iso: now.toISOString() } },
      { status: row.status },
    );
    if (!claimed) return;
    const counts: Counts = {
      numSent: 0,
      numFailed: 0,
      sentPerType: {},
      failedPerType: {},
      failureReasons: {},
    };
    try {
      await this.deliver(row, counts, expiry === undefined ? undefined : Math.floor(expiry / 1000), id);
      const failed = counts.numSent === 0 && counts.numFailed > 0;
      await this.setStatus(id, {
        ...counts,
        status: failed ? 'failed' : 'succeeded',
        ...(failed ? { errorMessage: 'No notification was delivered.' } : {}),
        finishedAt: { __type: 'Date', iso: new Date().toISOString() },
      });
    } catch (err) {
      await this.setStatus(id, {
        ...counts,
        status: 'failed',
        errorMessage: err instanceof BdsError ? err.message : 'The push stopped on an internal error.',
        finishedAt: { __type: 'Date', iso: new Date().toISOString() },
      });
      if (!(err instanceof BdsError)) throw err;
    }
  }

  /** The audience, page by page (by objectId): badges, sends with bounded concurrency, invalid tokens. */
  private async deliver(row: Row, counts: Counts, expiration: number | undefined, id: string): Promise<void> {
    const where: Record<string, unknown> = JSON.parse(row.query as string);
    const channels = row.channels as string[] | undefined;
    const data: Record<string, unknown> = JSON.parse(row.payload as string);
    const audience: Array<Record<string, unknown>> = [where, { deviceToken: { $exists: true } }];
    if (channels) audience.push({ channels: { $in: channels } });
    const { batchSize, concurrency } = this.options;
    let after = '';
    for (;;) {
      // A stop does not wait for a large audience: the push ends as failed between two pages.
      if (this.closed) throw new BdsError(ErrorCode.PUSH_MISCONFIGURED, INTERRUPTED);
      const { results } = await this.data.reads.find(system(), '_Installation', {
        where: JSON.stringify({ $and: [...audience, ...(after ? [{ objectId: { $gt: after } }] : [])] }),
        order: 'objectId',
        limit: String(batchSize),
        keys: 'deviceToken,deviceType,pushType,badge',
      });
      await mapLimit(results, concurrency, (inst) => this.deliverOne(inst, data, expiration, counts));
      if (results.length > 0) await this.setStatus(id, { ...counts });
      if (results.length < batchSize) return;
      after = results.at(-1)!.objectId as string;
    }
  }

  private async deliverOne(
    inst: Row,
    data: Record<string, unknown>,
    expiration: number | undefined,
    counts: Counts,
  ) {
    const deviceType = String(inst.deviceType ?? 'unknown');
    const kind = providerFor(inst);
    const provider = kind ? await this.provider(kind) : undefined;
    let result: DeliveryResult;
    if (!provider) {
      result = {
        ok: false,
        reason: kind ? `No ${kind} credentials configured` : 'Unsupported device type',
        invalidToken: false,
      };
    } else {
      let payload = data;
      if (data.badge === 'Increment') {
        // Atomic: the store adds 1 to the stored value and answers the new one.
        const updated = await this.data.writes.update(system(), '_Installation', inst.objectId as string, {
          badge: { __op: 'Increment', amount: 1 },
        });
        payload = { ...data, badge: updated.badge };
      }
      const delivery: Delivery = {
        installation: inst.objectId as string,
        token: String(inst.deviceToken),
        deviceType,
        data: payload,
        ...(expiration !== undefined ? { expiration } : {}),
      };
      result = await provider.send(delivery);
    }
    if (result.ok) {
      counts.numSent++;
      counts.sentPerType[deviceType] = (counts.sentPerType[deviceType] ?? 0) + 1;
      return;
    }
    counts.numFailed++;
    counts.failedPerType[deviceType] = (counts.failedPerType[deviceType] ?? 0) + 1;
    counts.failureReasons[result.reason] = (counts.failureReasons[result.reason] ?? 0) + 1;
    if (result.invalidToken) {
      await this.data.writes.update(system(), '_Installation', inst.objectId as string, {
        deviceToken: { __op: 'Delete' },
      });
    }
  }

  /**
   * Stops the timers; running pushes stop after their current page (their status says so).
   * Scheduled ones stay scheduled for the next start.
   */
  async close(): Promise<void> {
    this.closed = true;
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    while (this.running.size) await Promise.allSettled([...this.running]);
    for (const provider of this.providers.values()) await (await provider).close();
  }
}
