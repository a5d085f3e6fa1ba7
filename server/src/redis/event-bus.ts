import { randomUUID } from 'node:crypto';
import { deserialize, serialize } from 'node:v8';
import type { Redis } from 'ioredis';
import { Listeners } from '../data/events.ts';
import {
  type EventBus,
  type EventListener,
  type ListenerBinding,
  SCHEMA_EVENT_CLASS,
  type WriteEvent,
} from '../kernel/events.ts';
import type { Logger } from '../kernel/log.ts';
import type { SchemaRegistry } from '../schema/registry.ts';
import type { SchemaStorage } from '../storage/adapter.ts';
import type { RedisLink } from './link.ts';

export interface RedisBusOptions {
  /** Most entries the stream keeps (trimmed approximately, `MAXLEN ~`): the reconnect window. */
  maxLen: number;
  /**
   * Most events sent to Redis and not yet answered (held in memory while Redis is away); default
   * `maxLen`. Past it, events are dropped and the other instances see a hole, as after a trim.
   */
  maxUnpublished?: number;
  /** How long one XREAD waits for entries before it asks again (ms). */
  blockMs?: number;
  /**
   * Awaited before a remote event reaches the listeners, in stream order: what must be current
   * before anyone sees the event (the schema cache after another instance changed a class).
   */
  beforeRemote?: (event: WriteEvent) => Promise<void> | void;
  /**
   * Called when the stream was trimmed past the last entry this instance read (it was away longer
   * than the stream's bound): events were missed, so every cache should start over.
   */
  onGap?: () => void;
}

/**
 * XADD with a sequence number: every entry carries `seq`, one more than the entry before it (plus
 * the events the publisher had to drop), so a reader that finds a hole knows that it missed events:
 * trimmed before it read them, or dropped by a publisher that Redis did not answer for too long.
 * KEYS: stream, counter. ARGV: max length, instance, payload, events dropped before this one.
 */
const PUBLISH = `
local seq = redis.call('INCRBY', KEYS[2], 1 + tonumber(ARGV[4]))
return redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'seq', seq, 'from', ARGV[2], 'event', ARGV[3])
`;

/** Where the stream is now, in one step: the counter and the id of the last entry (false: none). */
const POSITION = `
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1]
return {redis.call('GET', KEYS[2]), last and last[1] or false}
`;

interface Commands {
  bdsPublish(
    stream: string,
    counter: string,
    maxLen: number,
    instance: string,
    payload: Buffer,
    dropped: number,
  ): Promise<string>;
  bdsPosition(stream: string, counter: string): Promise<unknown>;
}

/**
 * An event as a stream entry: V8's structured serialization, so what a listener reads on another
 * instance is what was published (dates, `Uint8Array`s and Buffers, the caller's `roleVia` Map,
 * `undefined`, -0, NaN). A request `context` that cannot be cloned (cloud code may put a function
 * in it) travels empty: only the after-triggers read it, and they run where the write happened.
 */
export function encodeEvent(event: WriteEvent): Buffer {
  // The request's headers are for the after-triggers too, which run only where the write happened.
  const { remote: _remote, headers: _headers, ...plain } = event;
  try {
    return serialize(plain);
  } catch {
    return serialize({ ...plain, context: {} });
  }
}

export function decodeEvent(bytes: Buffer): WriteEvent {
  return deserialize(bytes) as WriteEvent;
}

/**
 * The event bus of an instance among several (option `redisURL`). A write's event reaches the
 * listeners of its own instance at once and synchronously, exactly as on the in-process bus (so
 * its caches follow the write before the request answers), and is appended to a Redis stream
 * (XADD, bounded by MAXLEN). Every instance reads the stream on its own connection (XREAD BLOCK
 * from the last id it read) and delivers the entries of the other instances to its listeners,
 * marked `remote: true`, in stream order. A lost connection resumes from the last id read, so
 * nothing is missed in a reconnect within the stream's bound; past it, `onGap` is called.
 */
export class RedisEventBus implements EventBus {
  /** This instance's id in the stream (entries it wrote are skipped when read back). */
  readonly instance = randomUUID();
  readonly stream: string;
  readonly seqKey: string;
  private readonly subscribers: Listeners;
  private readonly publisher: Redis;
  private readonly reader: Redis;
  private lastId = '0-0';
  /** The sequence number of the last entry read: entries are numbered 1, 2, 3... without holes. */
  private lastSeq = 0;
  /** Events sent to Redis and not answered yet (they wait in memory while Redis is away). */
  private unpublished = 0;
  /** Events dropped since the last one sent: the next entry's number skips them (a hole). */
  private dropped = 0;
  private running = false;
  private loop: Promise<void> | undefined;
  /** Resolves when the bus closes: a read waiting on a connection that is away stops waiting. */
  private stop!: () => void;
  private readonly stopped = new Promise<null>((resolve) => {
    this.stop = () => resolve(null);
  });
  private readonly blockMs: number;

  constructor(
    link: RedisLink,
    private readonly log: Logger,
    private readonly options: RedisBusOptions,
  ) {
    // One hash tag: both keys live in the same slot (a Redis Cluster runs the script).
    this.stream = link.key('{events}');
    this.seqKey = link.key('{events}', 'seq');
    this.blockMs = options.blockMs ?? 5000;
    this.subscribers = new Listeners(log);
    const name = this.instance.slice(0, 8);
    // Neither connection gives up on a command: an XADD waits in ioredis's queue while Redis is
    // away, and the XREAD under way is sent again, with the same last id, once it is back.
    this.publisher = link.connection(`publish-${name}`, { maxRetriesPerRequest: null });
    this.reader = link.connection(`read-${name}`, { maxRetriesPerRequest: null });
    this.publisher.defineCommand('bdsPublish', { numberOfKeys: 2, lua: PUBLISH });
    this.publisher.defineCommand('bdsPosition', { numberOfKeys: 2, lua: POSITION });
  }

  /** Connects and starts reading after the stream's current last entry. */
  async start(): Promise<void> {
    await Promise.all([this.publisher.connect(), this.reader.connect()]);
    const [seq, last] = (await (this.publisher as unknown as Commands).bdsPosition(
      this.stream,
      this.seqKey,
    )) as [string | null, string | false];
    this.lastSeq = Number(seq ?? 0);
    // An empty stream: any entry added from now on sorts after 0-0.
    this.lastId = last || '0-0';
    this.running = true;
    this.loop = this.read();
  }

  publish(event: WriteEvent): void {
    this.subscribers.deliver(event);
    if (this.unpublished >= (this.options.maxUnpublished ?? this.options.maxLen)) {
      // Memory stays bounded while Redis is away; the others learn of the loss from the numbers.
      if (this.dropped++ === 0) {
        this.log.error(
          { unpublished: this.unpublished },
          'Redis does not answer: events are dropped, the other instances will start their caches over',
        );
      }
      return;
    }
    let payload: Buffer;
    try {
      payload = encodeEvent(event);
    } catch (err) {
      this.log.error(
        { err: err instanceof Error ? err.message : String(err), className: event.className, op: event.op },
        'event could not be serialized for the other instances',
      );
      this.dropped++;
      return;
    }
    const dropped = this.dropped;
    this.dropped = 0;
    this.unpublished++;
    (this.publisher as unknown as Commands)
      .bdsPublish(this.stream, this.seqKey, this.options.maxLen, this.instance, payload, dropped)
      .catch((err: unknown) => {
        // Lost, with those dropped before it: the next entry's number leaves the hole.
        this.dropped += dropped + 1;
        this.log.error(
          { err: err instanceof Error ? err.message : String(err), className: event.className, op: event.op },
          'event could not be published to the other instances',
        );
      })
      .finally(() => {
        this.unpublished--;
      });
  }

  subscribe(listener: EventListener, binding?: ListenerBinding): () => void {
    return this.subscribers.add(listener, binding);
  }

  listeners(): ListenerBinding[] {
    return this.subscribers.list();
  }

  private async read(): Promise<void> {
    let failures = 0;
    while (this.running) {
      let reply: Array<[Buffer, Array<[Buffer, Buffer[]]>]> | null;
      try {
        const read = this.reader.xreadBuffer(
          'COUNT',
          1000,
          'BLOCK',
          this.blockMs,
          'STREAMS',
          this.stream,
          this.lastId,
        );
        read.catch(() => {});
        reply = (await Promise.race([read, this.stopped])) as Array<
          [Buffer, Array<[Buffer, Buffer[]]>]
        > | null;
        failures = 0;
      } catch (err) {
        if (!this.running) return;
        if (failures++ === 0) {
          this.log.warn(
            { err: err instanceof Error ? err.message : String(err) },
            'event stream read failed; retrying',
          );
        }
        await new Promise((resolve) => setTimeout(resolve, Math.min(50 * failures, 1000)));
        continue;
      }
      for (const [, entries] of reply ?? []) {
        for (const [id, fields] of entries) {
          if (!this.running) return;
          this.lastId = id.toString();
          await this.receive(fields);
        }
      }
    }
  }

  private async receive(fields: Buffer[]): Promise<void> {
    let from: string | undefined;
    let payload: Buffer | undefined;
    let seq = 0;
    for (let i = 0; i + 1 < fields.length; i += 2) {
      const name = fields[i]!.toString();
      if (name === 'from') from = fields[i + 1]!.toString();
      else if (name === 'event') payload = fields[i + 1];
      else if (name === 'seq') seq = Number(fields[i + 1]!.toString());
    }
    // (An entry without a number was not written by a bus: it says nothing about holes.)
    if (seq > 0 && seq !== this.lastSeq + 1) {
      // A hole: trimmed before this instance read it (or Redis lost the stream and its counter).
      this.log.error(
        { lastRead: this.lastSeq, next: seq },
        'events were lost from the stream before this instance read them; caches start over',
      );
      this.options.onGap?.();
    }
    if (seq > 0) this.lastSeq = seq;
    // Its own entries were delivered when published.
    if (from === this.instance || !payload) return;
    let event: WriteEvent;
    try {
      event = decodeEvent(payload);
    } catch (err) {
      this.log.error(
        { err: err instanceof Error ? err.message : String(err) },
        'event from another instance unreadable',
      );
      return;
    }
    event.remote = true;
    try {
      await this.options.beforeRemote?.(event);
    } catch (err) {
      this.log.error(
        { err: err instanceof Error ? err.message : String(err), className: event.className },
        'preparing for a remote event failed',
      );
    }
    this.subscribers.deliver(event);
  }

  /** Stops reading (what is still to publish goes out when the link closes: QUIT waits for it). */
  async close(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.stop();
    this.reader.disconnect();
    await this.loop;
  }
}

/**
 * What must be current before a remote event reaches anyone: after another instance changed a
 * class, this instance's schema cache holds the class as stored (read again from the store).
 */
export function followRemoteSchemas(
  store: SchemaStorage,
  schemas: SchemaRegistry,
): (event: WriteEvent) => Promise<void> {
  return async (event) => {
    if (event.className !== SCHEMA_EVENT_CLASS || !event.objectId) return;
    store.tablesChangedElsewhere();
    const schema = (await store.loadSchemas()).find((s) => s.className === event.objectId);
    if (schema) schemas.set(schema);
    else schemas.remove(event.objectId);
  };
}
