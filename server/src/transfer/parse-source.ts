import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { isObject } from '@bds/client/protocol';
import pg from 'pg';
import { TransferError } from './format.ts';

/**
 * Reads a running parse-server app (docs/transfer.md, "From parse-server"): over its REST API with
 * the master key, and only with GET requests, so nothing is ever written to it. Password hashes,
 * which its REST API never answers, come from its PostgreSQL database (read-only queries) or from
 * a MongoDB export of its `_User` collection.
 */
export interface ParseSourceOptions {
  serverURL: string;
  appId: string;
  masterKey: string;
  /** postgres://… of the incumbent's database: `_User._hashed_password` and the `_Join:*` tables. */
  postgresURL?: string;
  /** JSON lines of the incumbent's `_User` collection (mongoexport), with `_hashed_password`. */
  usersFile?: string;
  /** Rows asked for per query (SOURCE_PAGE unless set; tests make pages small). */
  pageSize?: number;
}

export interface ParseSchema {
  className: string;
  fields: Record<string, Record<string, unknown>>;
  classLevelPermissions?: Record<string, unknown>;
  indexes?: Record<string, Record<string, unknown>>;
}

/** Rows asked for per REST query (parse-server sets no maximum of its own by default). */
export const SOURCE_PAGE = 1000;
/** objectIds asked about per REST query by existingIds (a GET's URL stays under 4 KB). */
const ID_CHECK = 100;

export class ParseSource {
  private readonly base: string;
  private pool?: pg.Pool;
  private usersHashes?: Map<string, string>;

  constructor(private readonly options: ParseSourceOptions) {
    this.base = options.serverURL.replace(/\/+$/, '');
  }

  /** A GET of the incumbent's REST API as the master; refusals name the route and the answer. */
  async get(route: string, query: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query)) {
      params.set(key, typeof value === 'string' ? value : JSON.stringify(value));
    }
    const url = `${this.base}${route}${params.size > 0 ? `?${params}` : ''}`;
    let res: Response;
    try {
      res = await fetch(url, { method: 'GET', headers: this.headers() });
    } catch (err) {
      throw new TransferError(`cannot reach parse-server at ${this.base}: ${(err as Error).message}`, 1);
    }
    const text = await res.text();
    if (res.status !== 200) {
      throw new TransferError(
        `parse-server answered ${res.status} to GET ${route}: ${text.slice(0, 300)}`,
        1,
      );
    }
    const body = JSON.parse(text) as unknown;
    if (!isObject(body)) throw new TransferError(`parse-server answered GET ${route} with no object.`, 1);
    return body;
  }

  private headers(): Record<string, string> {
    return {
      'X-Parse-Application-Id': this.options.appId,
      'X-Parse-Master-Key': this.options.masterKey,
    };
  }

  /**
   * The incumbent's clock, from the Date header of its health check, a second early (the header
   * has whole seconds): a second run reads rows with an updatedAt at or after it, on the clock that
   * wrote them.
   */
  async clock(): Promise<string> {
    let res: Response;
    try {
      res = await fetch(`${this.base}/health`, { headers: this.headers() });
      await res.arrayBuffer();
    } catch (err) {
      throw new TransferError(`cannot reach parse-server at ${this.base}: ${(err as Error).message}`, 1);
    }
    const date = Date.parse(res.headers.get('date') ?? '');
    if (res.status !== 200 || Number.isNaN(date)) {
      throw new TransferError(
        `parse-server at ${this.base} answered its health check with ${res.status}.`,
        1,
      );
    }
    return new Date(date - 1000).toISOString();
  }

  async schemas(): Promise<ParseSchema[]> {
    return (await this.get('/schemas')).results as ParseSchema[];
  }

  async config(): Promise<{ params: Record<string, unknown>; masterKeyOnly: Record<string, boolean> }> {
    const body = await this.get('/config');
    return {
      params: (body.params ?? {}) as Record<string, unknown>,
      masterKeyOnly: (body.masterKeyOnly ?? {}) as Record<string, boolean>,
    };
  }

  /**
   * One page of a class, by objectId after `after`, and (for a second run) only rows changed at
   * or after `since`.
   */
  async page(
    className: string,
    after: string | null,
    since: string | null,
  ): Promise<Record<string, unknown>[]> {
    const where: Record<string, unknown> = {};
    if (after !== null) where.objectId = { $gt: after };
    if (since !== null) where.updatedAt = { $gte: { __type: 'Date', iso: since } };
    const body = await this.get(`/classes/${encodeURIComponent(className)}`, {
      where,
      order: 'objectId',
      limit: String(this.options.pageSize ?? SOURCE_PAGE),
    });
    return body.results as Record<string, unknown>[];
  }

  /**
   * The rows of a class (for a second run, those changed at or after `since`). Always with a
   * condition: without one, its PostgreSQL adapter answers the planner's estimate.
   */
  async count(className: string, since: string | null): Promise<number> {
    const where: Record<string, unknown> =
      since === null
        ? { objectId: { $exists: true } }
        : { updatedAt: { $gte: { __type: 'Date', iso: since } } };
    const body = await this.get(`/classes/${encodeURIComponent(className)}`, {
      where,
      count: '1',
      limit: '0',
    });
    return body.count as number;
  }

  /** The objectIds in a Relation field of one row, in order. */
  async relationMembers(
    className: string,
    field: string,
    targetClass: string,
    owningIds: string[],
  ): Promise<Array<{ owningId: string; relatedIds: string[] }>> {
    if (this.options.postgresURL) {
      const table = `_Join:${field}:${className}`;
      const { rows } = await this.db().query(
        `SELECT "owningId", "relatedId" FROM "${table.replaceAll('"', '""')}" WHERE "owningId" = ANY($1) ORDER BY 1, 2`,
        [owningIds],
      );
      const byOwner = new Map<string, string[]>();
      for (const row of rows as Array<{ owningId: string; relatedId: string }>) {
        const list = byOwner.get(row.owningId) ?? [];
        list.push(row.relatedId);
        byOwner.set(row.owningId, list);
      }
      return [...byOwner].map(([owningId, relatedIds]) => ({ owningId, relatedIds }));
    }
    const answers: Array<{ owningId: string; relatedIds: string[] }> = [];
    for (const owningId of owningIds) {
      const relatedIds: string[] = [];
      let after: string | null = null;
      for (;;) {
        const where: Record<string, unknown> = {
          $relatedTo: { object: { __type: 'Pointer', className, objectId: owningId }, key: field },
        };
        if (after !== null) where.objectId = { $gt: after };
        const body = await this.get(`/classes/${encodeURIComponent(targetClass)}`, {
          where,
          order: 'objectId',
          keys: 'objectId',
          limit: String(SOURCE_PAGE),
        });
        const ids = (body.results as Array<{ objectId: string }>).map((r) => r.objectId);
        relatedIds.push(...ids);
        if (ids.length < SOURCE_PAGE) break;
        after = ids.at(-1)!;
      }
      if (relatedIds.length > 0) answers.push({ owningId, relatedIds });
    }
    return answers;
  }

  /**
   * Which of these objectIds of a class the incumbent still has: from its table with
   * `--parse-postgres`, else over REST with `$in`, ID_CHECK ids per query (the ids travel in the
   * URL of a GET).
   */
  async existingIds(className: string, ids: string[]): Promise<Set<string>> {
    const found = new Set<string>();
    if (this.options.postgresURL) {
      const { rows } = await this.db().query(
        `SELECT "objectId" FROM "${className.replaceAll('"', '""')}" WHERE "objectId" = ANY($1)`,
        [ids],
      );
      for (const row of rows as Array<{ objectId: string }>) found.add(row.objectId);
      return found;
    }
    for (let i = 0; i < ids.length; i += ID_CHECK) {
      const chunk = ids.slice(i, i + ID_CHECK);
      const body = await this.get(`/classes/${encodeURIComponent(className)}`, {
        where: { objectId: { $in: chunk } },
        keys: 'objectId',
        limit: String(chunk.length),
      });
      for (const row of body.results as Array<{ objectId: string }>) found.add(row.objectId);
    }
    return found;
  }

  /** Whether password hashes can be read (`--parse-postgres` or `--parse-users`). */
  get readsHashes(): boolean {
    return Boolean(this.options.postgresURL || this.options.usersFile);
  }

  /** The bcrypt hashes of these users, by objectId (users without a password are left out). */
  async passwordHashes(userIds: string[]): Promise<Map<string, string>> {
    if (this.options.postgresURL) {
      const { rows } = await this.db().query(
        `SELECT "objectId", "_hashed_password" FROM "_User" WHERE "objectId" = ANY($1) AND "_hashed_password" IS NOT NULL`,
        [userIds],
      );
      return new Map(
        (rows as Array<{ objectId: string; _hashed_password: string }>).map((r) => [
          r.objectId,
          r._hashed_password,
        ]),
      );
    }
    if (this.options.usersFile) {
      this.usersHashes ??= await readUsersFile(this.options.usersFile);
      const found = new Map<string, string>();
      for (const id of userIds) {
        const hash = this.usersHashes.get(id);
        if (hash) found.set(id, hash);
      }
      return found;
    }
    return new Map();
  }

  /** The bytes of a file the incumbent serves, streamed. */
  async download(
    url: string,
  ): Promise<{ contentType: string; size?: number; body: AsyncIterable<Uint8Array> }> {
    const res = await fetch(url, { headers: this.headers() });
    if (res.status !== 200 || !res.body) {
      throw new TransferError(`parse-server answered ${res.status} to the download of ${url}.`, 1);
    }
    const length = res.headers.get('content-length');
    return {
      contentType: res.headers.get('content-type') ?? 'application/octet-stream',
      size: length === null ? undefined : Number(length),
      body: Readable.fromWeb(res.body as WebReadableStream<Uint8Array>),
    };
  }

  private db(): pg.Pool {
    this.pool ??= new pg.Pool({ connectionString: this.options.postgresURL, max: 2 });
    return this.pool;
  }

  async close(): Promise<void> {
    await this.pool?.end();
  }
}

/**
 * The `_User` collection as mongoexport writes it: one JSON object per line, `_id` the objectId and
 * `_hashed_password` the bcrypt hash. Holds one entry per user with a password.
 */
async function readUsersFile(file: string): Promise<Map<string, string>> {
  const hashes = new Map<string, string>();
  const lines = createInterface({ input: createReadStream(file, { encoding: 'utf8' }), crlfDelay: Infinity });
  let n = 0;
  for await (const text of lines) {
    n++;
    if (text.trim() === '') continue;
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (err) {
      throw new TransferError(`${file}: not valid JSON (${(err as Error).message}).`, 3, n);
    }
    if (!isObject(doc) || typeof doc._id !== 'string') {
      throw new TransferError(`${file}: each line must be a _User document with its _id.`, 3, n);
    }
    if (typeof doc._hashed_password === 'string') hashes.set(doc._id, doc._hashed_password);
  }
  return hashes;
}
