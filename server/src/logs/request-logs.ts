import { type LogLine, scrub } from '@bds/client/protocol';
import { newObjectId } from '../kernel/ids.ts';
import type { RequestLine } from '../kernel/log.ts';
import type { Redact, TracedLine, TraceSink } from '../kernel/trace.ts';
import type { RedisLink } from '../redis/link.ts';
import { type LogFilter, matches } from './filter.ts';

/** A request line as http/app.ts writes it, with its id and time: kept as it is (no copy). */
export type KeptRequest = RequestLine & { requestId: string; at: number };

/** A line of cloud code, a webhook call or a realtime delivery, as kept. */
type KeptTraced = TracedLine & { at: number };

type Kept = KeptRequest | KeptTraced;

const isRequest = (line: Kept): line is KeptRequest => 'status' in line;

/** How long lines wait before they go to Redis in one pipeline. */
export const LOGS_FLUSH_MS = 100;

/** The class a path names, for the `className` filter and the line's field. */
const CLASS_PATH = /^\/(?:classes|schemas|aggregate|purge)\/([A-Za-z_][A-Za-z0-9_]*)/;

export function classOfPath(path: string): string | undefined {
  return CLASS_PATH.exec(path)?.[1];
}

/**
 * The request log lines the service keeps (docs/protocol.md#request-logs), for the master-only
 * GET /logs: the last `size` lines in a ring buffer of this instance, and with Redis (option
 * `redisURL`) the last `size` lines of every instance in one capped stream, which GET /logs then
 * reads. Keeping a request line costs nothing but its slot: the line http/app.ts logs is kept as
 * it is and only turned into its wire form (scrubbed) when it is read or sent to Redis.
 */
export class RequestLogs implements TraceSink {
  private readonly ring: Array<Kept | undefined>;
  private readonly seqs: Float64Array;
  private next = 0;
  private seq = 0;
  /** This instance's part of every line id. */
  private readonly instance = newObjectId(6);
  /** Lines not sent to Redis yet, and their sequence numbers (serialized when sent, off the request's path). */
  private pending: Kept[] = [];
  private pendingSeqs: number[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;

  constructor(
    readonly size: number,
    /** The scrub of kept texts: a key cloud code logs by mistake is not kept (kernel/trace.ts). */
    private readonly redact: Redact,
    private readonly redis?: RedisLink,
  ) {
    this.ring = new Array(size);
    this.seqs = new Float64Array(size);
  }

  private get key(): string {
    return this.redis!.key('logs');
  }

  private put(line: Kept): void {
    const at = this.next;
    this.ring[at] = line;
    this.seqs[at] = ++this.seq;
    this.next = at + 1 === this.size ? 0 : at + 1;
    if (this.redis) {
      this.pending.push(line);
      this.pendingSeqs.push(this.seq);
      this.timer ??= setTimeout(() => void this.flush(), LOGS_FLUSH_MS);
    }
  }

  /**
   * The request line of a request (http/app.ts), once it is answered. The explorer's own reads
   * (GET /logs...) are not kept: a live tail, which asks every second, would list itself.
   */
  keepRequest(line: KeptRequest): void {
    if (line.path.startsWith('/logs') && (line.path.length === 5 || line.path[5] === '/')) return;
    this.put(line);
  }

  /** A line cloud code, a webhook call or a realtime delivery wrote while serving a request. */
  keep(line: TracedLine): void {
    this.put({ ...line, text: this.redact(line.text), at: Date.now() });
  }

  private wire(line: Kept, seq: number): LogLine {
    const base = {
      id: `${this.instance}-${seq}`,
      at: new Date(line.at).toISOString(),
      requestId: line.requestId,
    };
    if (!isRequest(line)) return { ...base, kind: line.kind, level: line.level, text: line.text };
    const out: LogLine = { ...base, kind: 'request', path: String(scrub(line.path)), status: line.status };
    if (line.method !== undefined) out.method = line.method;
    if (line.code !== undefined) out.code = line.code;
    out.ms = line.ms;
    if (line.caller !== undefined) out.caller = line.caller;
    if (line.user !== undefined) out.user = line.user;
    const className = classOfPath(line.path);
    if (className) out.className = className;
    return out;
  }

  /** Every kept line of this instance, oldest first. */
  private local(): LogLine[] {
    const out: LogLine[] = [];
    for (let i = 0; i < this.size; i++) {
      const slot = (this.next + i) % this.size;
      const line = this.ring[slot];
      if (line) out.push(this.wire(line, this.seqs[slot]!));
    }
    return out;
  }

  /** Every kept line, oldest first: of every instance with Redis (this one's if Redis does not answer). */
  private async all(): Promise<LogLine[]> {
    const redis = this.redis;
    if (!redis) return this.local();
    return redis.shared(
      'request logs',
      async () => {
        await this.flush();
        const entries = (await redis.client.xrevrange(this.key, '+', '-', 'COUNT', this.size)) as Array<
          [string, string[]]
        >;
        const out: LogLine[] = [];
        for (let i = entries.length - 1; i >= 0; i--) {
          const fields = entries[i]![1];
          const at = fields.indexOf('l');
          if (at >= 0) out.push(JSON.parse(fields[at + 1]!) as LogLine);
        }
        return out;
      },
      async () => this.local(),
    );
  }

  /** Request lines that pass the filter, newest first, at most `filter.limit`. */
  async list(filter: LogFilter): Promise<LogLine[]> {
    const lines = await this.all();
    const out: LogLine[] = [];
    for (let i = lines.length - 1; i >= 0 && out.length < filter.limit; i--) {
      const line = lines[i]!;
      if (line.kind === 'request' && matches(line, filter)) out.push(line);
    }
    return out;
  }

  /** Every kept line of one request, oldest first. */
  async linesOf(requestId: string): Promise<LogLine[]> {
    return (await this.all())
      .filter((line) => line.requestId === requestId)
      .sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  }

  /** Sends the pending lines to the shared stream (capped at `size`, exactly). */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.length === 0 || !this.redis) return this.flushing ?? Promise.resolve();
    const lines = this.pending;
    const seqs = this.pendingSeqs;
    this.pending = [];
    this.pendingSeqs = [];
    const pipeline = this.redis.client.pipeline();
    for (let i = 0; i < lines.length; i++) {
      const text = JSON.stringify(this.wire(lines[i]!, seqs[i]!));
      pipeline.xadd(this.key, 'MAXLEN', String(this.size), '*', 'l', text);
    }
    const previous = this.flushing ?? Promise.resolve();
    const sent = previous
      .then(() => pipeline.exec())
      .then(
        () => undefined,
        (err: unknown) => this.redis!.unavailable('request logs', err),
      );
    this.flushing = sent;
    return sent;
  }

  async close(): Promise<void> {
    await this.flush();
  }
}
