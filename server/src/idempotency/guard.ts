import type { IncomingMessage } from 'node:http';
import { compatHeader, HEADERS } from '@bds/client/protocol';
import type { ServiceOptions } from '../config/options.ts';
import type { Data } from '../data/data.ts';
import { MASTER } from '../kernel/caller.ts';
import { ctxOf } from '../kernel/context.ts';
import { BdsError, ErrorCode } from '../kernel/errors.ts';
import type { Logger } from '../kernel/log.ts';

export const DUPLICATE_REQUEST = 'Duplicate request';
const REQUEST_ID = /^[\w.:-]{1,200}$/;
/** The methods that write (create, update, run a function or job, upload): reads and deletes repeat safely. */
const GUARDED_METHODS = new Set(['POST', 'PUT']);
const system = () => ctxOf(MASTER, 'system');

/**
 * Option `idempotency`: the first POST or PUT carrying an X-Backend-Request-Id on a matching path
 * claims it by creating an `_Idempotency` row (unique on `reqId`, so concurrent duplicates race
 * on the store's unique index and exactly one wins); a repeat within `ttl` answers 159 and runs
 * nothing. Expired rows are swept. A pattern matches from the start of the path, as the
 * incumbent's do: `classes/Item` covers `classes/Item/<id>`.
 */
export class IdempotencyGuard {
  private readonly patterns: RegExp[];
  private readonly ttlMs: number;
  private sweeper: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;

  constructor(
    private readonly data: Data,
    options: NonNullable<ServiceOptions['idempotency']>,
    private readonly log: Logger,
  ) {
    this.patterns = options.paths.map((p) => new RegExp(`^(?:${p})`));
    this.ttlMs = options.ttl * 1000;
    this.sweeper = setInterval(() => void this.sweep(), Math.min(this.ttlMs, 60_000));
    this.sweeper.unref();
  }

  /**
   * Throws 159 when `req` repeats a request id seen within the ttl on a matching path. `method` is
   * the one the request is routed as (`_method` applied); `path` is the normal form (below the
   * mount path), so `classes//Post/` is matched as `classes/Post`.
   */
  async claim(req: IncomingMessage, method: string, path: string): Promise<void> {
    if (!GUARDED_METHODS.has(method)) return;
    const header =
      req.headers[HEADERS.requestId.toLowerCase()] ??
      req.headers[compatHeader(HEADERS.requestId).toLowerCase()];
    if (header === undefined) return;
    const id = String(header);
    const relative = path.slice(1);
    if (!this.patterns.some((p) => p.test(relative))) return;
    if (!REQUEST_ID.test(id)) {
      throw new BdsError(
        ErrorCode.INVALID_JSON,
        'X-Backend-Request-Id must be 1 to 200 letters, digits, _ . : or -.',
      );
    }
    const expire = { __type: 'Date', iso: new Date(Date.now() + this.ttlMs).toISOString() };
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await this.data.writes.create(system(), '_Idempotency', { reqId: id, expire, ACL: {} });
        return;
      } catch (err) {
        if (!(err instanceof BdsError) || err.code !== ErrorCode.DUPLICATE_VALUE) throw err;
      }
      // The id is taken: by an expired claim (not swept yet), it may be claimed again.
      if (!(await this.dropExpired(id))) break;
    }
    throw new BdsError(ErrorCode.DUPLICATE_REQUEST, DUPLICATE_REQUEST);
  }

  private async expiredRows(extra: Record<string, unknown>, limit: number) {
    const { results } = await this.data.reads.find(system(), '_Idempotency', {
      where: JSON.stringify({ ...extra, expire: { $lt: { __type: 'Date', iso: new Date().toISOString() } } }),
      limit: String(limit),
      keys: 'reqId',
    });
    return results;
  }

  private async dropExpired(reqId: string): Promise<boolean> {
    const [row] = await this.expiredRows({ reqId }, 1);
    if (!row) return false;
    try {
      await this.data.writes.delete(system(), '_Idempotency', row.objectId as string);
    } catch (err) {
      if (!(err instanceof BdsError) || err.code !== ErrorCode.OBJECT_NOT_FOUND) throw err;
    }
    return true;
  }

  /** Deletes expired claims, a page at a time. */
  sweep(): Promise<void> {
    this.sweeping ??= (async () => {
      try {
        for (;;) {
          const rows = await this.expiredRows({}, 500);
          for (const row of rows)
            await this.data.writes.delete(system(), '_Idempotency', row.objectId as string).catch(() => {});
          if (rows.length < 500) return;
        }
      } catch (err) {
        this.log.warn({ err: err instanceof Error ? err.message : String(err) }, 'idempotency sweep failed');
      } finally {
        this.sweeping = undefined;
      }
    })();
    return this.sweeping;
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
    await this.sweeping;
  }
}
