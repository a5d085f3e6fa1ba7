import { isObject } from '@bds/client/protocol';
import type { ClassOperation } from '../access/class.ts';
import { type Explanation, explainAccess, type ViewpointInfo } from '../access/explain.ts';
import { anonymous, type Caller, makeCaller } from '../kernel/caller.ts';
import { BdsError, ErrorCode, toBdsError } from '../kernel/errors.ts';
import type { QueryNode } from '../kernel/query.ts';
import type { Row } from '../kernel/records.ts';
import type { ClassSchema } from '../kernel/schema.ts';
import { classNotFound } from '../schema/registry.ts';
import type { HeldRole } from '../storage/adapter.ts';
import type { Data } from './data.ts';
import { parseWriteBody } from './write-body.ts';

/**
 * The Security API's data side (docs/security-api.md): viewpoints turned into callers, the
 * explanation of one access question with the facts it needs (schema, row, proposed body), dry
 * runs of writes inside a transaction that always rolls back, and the impact of a proposed
 * permission change, counted by explaining every user's access before and after.
 */

export type Viewpoint =
  | { kind: 'user'; userId: string }
  | { kind: 'anonymous' }
  | { kind: 'roles'; roles: string[] };

/** The user id of an ad-hoc role set: no objectId looks like it, so no ACL entry or pointer names it. */
export const ROLE_SET_USER = '(role set)';

/** Users explained one by one up to this many; above, a uniform sample of this many. */
export const IMPACT_EXACT_LIMIT = 10_000;
/** At most this many users are listed per gain or loss. */
const SAMPLE_SIZE = 20;
/** At most this many rows per ACL change. */
const MAX_IMPACT_ROWS = 1000;

const OPERATIONS: readonly ClassOperation[] = [
  'find',
  'get',
  'count',
  'create',
  'update',
  'delete',
  'addField',
];

export const invalid = (message: string) => new BdsError(ErrorCode.INVALID_QUERY, message);
const ALL: QueryNode = { type: 'and', children: [] };

/** A viewpoint from a request body; anything else is a 102 naming what is wrong. */
export function parseViewpoint(raw: unknown): Viewpoint {
  if (!isObject(raw)) throw invalid('viewpoint must be an object with a kind: user, anonymous or roles.');
  const extra = (allowed: string[]) => Object.keys(raw).find((k) => !allowed.includes(k));
  switch (raw.kind) {
    case 'user': {
      const unknown = extra(['kind', 'userId']);
      if (unknown) throw invalid(`viewpoint has an unknown key: ${unknown}.`);
      if (typeof raw.userId !== 'string' || raw.userId === '')
        throw invalid('viewpoint.userId must be the objectId of a _User.');
      return { kind: 'user', userId: raw.userId };
    }
    case 'anonymous': {
      const unknown = extra(['kind']);
      if (unknown) throw invalid(`viewpoint has an unknown key: ${unknown}.`);
      return { kind: 'anonymous' };
    }
    case 'roles': {
      const unknown = extra(['kind', 'roles']);
      if (unknown) throw invalid(`viewpoint has an unknown key: ${unknown}.`);
      const roles = raw.roles;
      if (!Array.isArray(roles) || roles.some((r) => typeof r !== 'string' || r === '') || roles.length > 100)
        throw invalid('viewpoint.roles must be a list of at most 100 role names.');
      return { kind: 'roles', roles: [...new Set(roles as string[])] };
    }
    default:
      throw invalid('viewpoint.kind must be user, anonymous or roles.');
  }
}

function objectBody(raw: unknown): Record<string, unknown> {
  if (!isObject(raw)) throw new BdsError(ErrorCode.INVALID_JSON, 'The request body must be a JSON object.');
  return raw;
}

function stringField(body: Record<string, unknown>, key: string, optional = false): string | undefined {
  const value = body[key];
  if (value === undefined && optional) return undefined;
  if (typeof value !== 'string' || value === '') throw invalid(`${key} must be a non-empty string.`);
  return value;
}

/** The roles a role set holds: the named ones, and every role whose `roles` relation holds one of them. */
async function roleSetRoles(data: Data, names: readonly string[]): Promise<HeldRole[]> {
  const { store, schemas } = data.core;
  const schema = schemas.get('_Role');
  const rows = schema
    ? await store.find(schema, { where: ALL, order: [], limit: 100_000, skip: 0 }, schemas.lookup)
    : [];
  const byName = new Map(rows.map((r) => [String(r.name), String(r.objectId)]));
  const nameOf = new Map(rows.map((r) => [String(r.objectId), String(r.name)]));
  for (const name of names) {
    if (!byName.has(name)) throw new BdsError(ErrorCode.OBJECT_NOT_FOUND, `Role ${name} does not exist.`);
  }
  // Which roles hold each role through their `roles` relation (the direction capabilities flow).
  const holders = new Map<string, string[]>();
  for (const owner of rows) {
    const related: QueryNode = {
      type: 'relatedTo',
      owner: { className: '_Role', objectId: String(owner.objectId) },
      key: 'roles',
    };
    for (const child of await store.find(
      schema!,
      { where: related, order: [], limit: 100_000, skip: 0 },
      schemas.lookup,
    )) {
      const list = holders.get(String(child.objectId)) ?? [];
      list.push(String(owner.objectId));
      holders.set(String(child.objectId), list);
    }
  }
  // Breadth first, so every role is reached through its shortest chain, as the caller resolver does.
  const held = new Map<string, HeldRole>();
  let frontier = names.map((n) => byName.get(n)!);
  for (const id of frontier) held.set(nameOf.get(id)!, { name: nameOf.get(id)!, via: null });
  while (frontier.length) {
    const next: string[] = [];
    for (const id of frontier) {
      for (const holder of holders.get(id) ?? []) {
        const name = nameOf.get(holder)!;
        if (held.has(name)) continue;
        held.set(name, { name, via: nameOf.get(id)! });
        next.push(holder);
      }
    }
    frontier = next;
  }
  return [...held.values()];
}

export interface ImpactCounts {
  gain: number;
  lose: number;
  gainSample: Array<{ objectId: string; username: string }>;
  loseSample: Array<{ objectId: string; username: string }>;
}

/** Read and write access of one viewpoint, before and after a change. */
interface Access {
  read: boolean;
  write: boolean;
  /** Fields the viewpoint can read the class but not see (undefined: it cannot read the class). */
  hidden?: Set<string>;
}

export class SecurityQueries {
  constructor(
    private readonly data: Data,
    /** A user as caller, with its roles, exactly as a signed-in request of that user gets it. */
    private readonly userCaller: (userId: string, sessionToken?: string) => Promise<Caller>,
    /** Users explained one by one up to this many (a test lowers it to reach the sampled path). */
    private readonly exactLimit = IMPACT_EXACT_LIMIT,
  ) {}

  /**
   * The caller a viewpoint stands for, without a session, a password or login triggers. With
   * `sessionToken` (a placeholder that names no session), routes that need a signed-in caller's
   * token (GET /sessions) answer as they do for a real session.
   */
  async callerOf(vp: Viewpoint, sessionToken?: string): Promise<{ caller: Caller; info: ViewpointInfo }> {
    if (vp.kind === 'anonymous') return { caller: anonymous(), info: { kind: 'anonymous' } };
    if (vp.kind === 'roles') {
      const roles = await roleSetRoles(this.data, vp.roles);
      const caller = makeCaller({ user: { objectId: ROLE_SET_USER }, roles, sessionToken });
      return { caller, info: { kind: 'roles' } };
    }
    const user = await this.data.lookups.userById(vp.userId);
    if (!user) throw new BdsError(ErrorCode.OBJECT_NOT_FOUND, 'Object not found.');
    return {
      caller: await this.userCaller(vp.userId, sessionToken),
      info: { kind: 'user', userId: vp.userId, username: String(user.username ?? '') },
    };
  }

  private schemaOf(className: unknown): ClassSchema {
    if (typeof className !== 'string' || className === '')
      throw invalid('className must be a non-empty string.');
    const schema = this.data.core.schemas.get(className);
    if (!schema) throw classNotFound(className);
    return schema;
  }

  /** POST /security/explain. */
  async explain(raw: unknown): Promise<Explanation> {
    const body = objectBody(raw);
    const unknown = Object.keys(body).find(
      (k) => !['operation', 'className', 'objectId', 'body', 'viewpoint'].includes(k),
    );
    if (unknown) throw invalid(`Unknown key: ${unknown}.`);
    const operation = body.operation as ClassOperation;
    if (!OPERATIONS.includes(operation)) throw invalid(`operation must be one of ${OPERATIONS.join(', ')}.`);
    const viewpoint = parseViewpoint(body.viewpoint);
    const schema = this.schemaOf(body.className);
    const objectId = stringField(body, 'objectId', true);
    if (objectId === undefined && (operation === 'update' || operation === 'delete'))
      throw invalid(`objectId is required for ${operation}.`);
    if (objectId !== undefined && (operation === 'create' || operation === 'addField'))
      throw invalid(`objectId does not apply to ${operation}.`);
    if (body.body !== undefined && operation !== 'create' && operation !== 'update')
      throw invalid(`body applies to create and update only.`);
    if (body.body !== undefined && !isObject(body.body)) throw invalid('body must be a JSON object.');
    const { caller, info } = await this.callerOf(viewpoint);
    return this.explainFor(caller, info, schema, operation, objectId, body.body as Row | undefined);
  }

  /** The explanation for a resolved caller (impact asks it once per user and setting). */
  private async explainFor(
    caller: Caller,
    info: ViewpointInfo,
    schema: ClassSchema,
    operation: ClassOperation,
    objectId: string | undefined,
    proposed: Row | undefined,
    row?: Row | null,
  ): Promise<Explanation> {
    let addsFields: string[] | undefined;
    let invalidBody: { code: number; message: string } | undefined;
    if (operation === 'create' || operation === 'update') {
      try {
        const parsed = parseWriteBody(proposed ?? {}, operation, schema.fields);
        addsFields = [...parsed.types.keys()];
      } catch (err) {
        const e = toBdsError(err);
        invalidBody = { code: e.code, message: e.message };
      }
    }
    const stored =
      row !== undefined || objectId === undefined
        ? row
        : ((await this.data.reads.byId(schema, objectId)) ?? null);
    return explainAccess({
      operation,
      className: schema.className,
      schema,
      caller,
      viewpoint: info,
      objectId,
      row: stored,
      addsFields,
      invalidBody,
      body: proposed,
      ownerExempt: this.data.core.options.protectedFieldsOwnerExempt,
    });
  }

  /**
   * Runs a write as a dry run: inside a transaction that always rolls back (so no event is
   * published and no after-trigger or webhook runs), with the row before and after as the store
   * had them inside it.
   */
  async dryRun<T>(
    className: string | undefined,
    objectId: string | undefined,
    run: () => Promise<T>,
    idOf: (result: T) => string | undefined,
  ): Promise<{ result: T; before: Row | null; after: Row | null } | { error: BdsError }> {
    const { store, schemas } = this.data.core;
    const rowOf = async (id: string | undefined) => {
      const schema = className ? schemas.get(className) : undefined;
      return schema && id ? ((await this.data.reads.byId(schema, id)) ?? null) : null;
    };
    let outcome: { result: T; before: Row | null; after: Row | null } | undefined;
    try {
      await store.transaction(async () => {
        const before = await rowOf(objectId);
        const result = await run();
        outcome = { result, before, after: await rowOf(objectId ?? idOf(result)) };
        throw new RolledBack();
      });
    } catch (err) {
      if (!(err instanceof RolledBack)) return { error: toBdsError(err) };
    }
    return outcome!;
  }

  /** POST /security/impact. */
  async impact(raw: unknown) {
    const body = objectBody(raw);
    const schema = this.schemaOf(body.className);
    const change = body.change;
    if (!isObject(change))
      throw invalid('change must be an object with a kind: acl, clp or protectedFields.');
    const { schemas } = this.data.core;
    let proposedSchema = schema;
    const rows: Row[] = [];
    let proposedRows: Row[] = [];
    if (change.kind === 'acl') {
      const ids = change.objectIds;
      if (
        !Array.isArray(ids) ||
        ids.length === 0 ||
        ids.length > MAX_IMPACT_ROWS ||
        ids.some((i) => typeof i !== 'string')
      )
        throw invalid(`change.objectIds must list 1 to ${MAX_IMPACT_ROWS} objectIds.`);
      const acl = change.ACL;
      if (!isObject(acl)) throw invalid('change.ACL must be an ACL object.');
      // The proposed ACL is validated as a write of it would be.
      try {
        parseWriteBody({ ACL: acl }, 'update', schema.fields);
      } catch (err) {
        throw toBdsError(err);
      }
      for (const id of new Set(ids as string[])) {
        const row = await this.data.reads.byId(schema, id);
        if (!row) throw new BdsError(ErrorCode.OBJECT_NOT_FOUND, `No ${schema.className} row has id ${id}.`);
        rows.push(row);
      }
      proposedRows = rows.map((r) => ({ ...r, ACL: acl }));
    } else if (change.kind === 'clp' || change.kind === 'protectedFields') {
      const clp =
        change.kind === 'clp'
          ? change.classLevelPermissions
          : { ...schema.classLevelPermissions, protectedFields: change.protectedFields };
      if (!isObject(clp)) throw invalid('change.classLevelPermissions must be an object.');
      if (change.kind === 'protectedFields' && !isObject(change.protectedFields))
        throw invalid('change.protectedFields must be an object.');
      // Planned as PUT /schemas would plan it (and refused with the same errors), never applied.
      proposedSchema = schemas.planUpdate(schema.className, { classLevelPermissions: clp }).schema;
    } else {
      throw invalid('change.kind must be acl, clp or protectedFields.');
    }
    const fieldNames = new Set<string>();
    if (change.kind === 'protectedFields') {
      for (const s of [schema, proposedSchema]) {
        const pf = s.classLevelPermissions.protectedFields;
        if (isObject(pf))
          for (const list of Object.values(pf))
            if (Array.isArray(list)) for (const f of list) fieldNames.add(String(f));
      }
    }

    const accessOf = async (
      caller: Caller,
      info: ViewpointInfo,
      s: ClassSchema,
      rs: Row[],
    ): Promise<Access> => {
      const allowed = async (op: ClassOperation, row?: Row) =>
        (
          await this.explainFor(
            caller,
            info,
            s,
            op,
            row ? String(row.objectId) : undefined,
            op === 'create' ? {} : undefined,
            row,
          )
        ).allowed;
      if (change.kind === 'acl') {
        let read = false;
        let write = false;
        for (const row of rs) {
          read ||= await allowed('get', row);
          write ||= await allowed('update', row);
        }
        return { read, write };
      }
      const read = (await allowed('find')) || (await allowed('get'));
      const write =
        (await allowed('create')) || (await allowed('update', undefined)) || (await allowed('delete'));
      let hidden: Set<string> | undefined;
      if (fieldNames.size) {
        const e = await this.explainFor(caller, info, s, 'get', undefined, undefined);
        const pf = e.layers.find((l) => l.layer === 'protectedFields' && !l.skipped);
        if (e.allowed && pf) hidden = new Set(pf.hidden);
      }
      return { read, write, hidden };
    };
    // For an ACL change, a user gains (or loses) on a row when that row changes for it.
    const compare = async (caller: Caller, info: ViewpointInfo) => {
      if (change.kind === 'acl') {
        const out = { readGain: false, readLose: false, writeGain: false, writeLose: false };
        for (let i = 0; i < rows.length; i++) {
          const before = await accessOf(caller, info, schema, [rows[i]!]);
          const after = await accessOf(caller, info, schema, [proposedRows[i]!]);
          out.readGain ||= !before.read && after.read;
          out.readLose ||= before.read && !after.read;
          out.writeGain ||= !before.write && after.write;
          out.writeLose ||= before.write && !after.write;
        }
        return { ...out, before: undefined, after: undefined };
      }
      const before = await accessOf(caller, info, schema, []);
      const after = await accessOf(caller, info, proposedSchema, []);
      return {
        readGain: !before.read && after.read,
        readLose: before.read && !after.read,
        writeGain: !before.write && after.write,
        writeLose: before.write && !after.write,
        before,
        after,
      };
    };

    const { users, total, sampled } = await this.impactUsers();
    const read = emptyCounts();
    const write = emptyCounts();
    const fields = new Map(
      [...fieldNames].map((f) => [
        f,
        {
          field: f,
          visibleTo: 0,
          hiddenFrom: 0,
          visibleToSample: [] as Sample[],
          hiddenFromSample: [] as Sample[],
        },
      ]),
    );
    for (const user of users) {
      const id = String(user.objectId);
      const who = { objectId: id, username: String(user.username ?? '') };
      const caller = await this.userCaller(id);
      const r = await compare(caller, { kind: 'user', userId: id, username: who.username });
      count(read, r.readGain, r.readLose, who);
      count(write, r.writeGain, r.writeLose, who);
      for (const f of fields.values()) {
        const seenBefore = r.before?.hidden !== undefined && !r.before.hidden.has(f.field);
        const seenAfter = r.after?.hidden !== undefined && !r.after.hidden.has(f.field);
        if (!seenBefore && seenAfter) add(f, 'visibleTo', who);
        if (seenBefore && !seenAfter) add(f, 'hiddenFrom', who);
      }
    }
    const anon = await compare(anonymous(), { kind: 'anonymous' });
    const verdict = (gain: boolean, lose: boolean) => (gain ? 'gains' : lose ? 'loses' : 'same');
    const considered = users.length;
    const scale = (n: number) => (sampled ? Math.round((n * total) / considered) : n);
    const scaled = (c: ImpactCounts) => ({ ...c, gain: scale(c.gain), lose: scale(c.lose) });
    return {
      users: { total, considered, sampled, bound: sampled ? margin(total, considered) : null },
      anonymous: {
        read: verdict(anon.readGain, anon.readLose),
        write: verdict(anon.writeGain, anon.writeLose),
      },
      read: scaled(read),
      write: scaled(write),
      fields: [...fields.values()].map((f) => ({
        ...f,
        visibleTo: scale(f.visibleTo),
        hiddenFrom: scale(f.hiddenFrom),
      })),
    };
  }

  /** Every user (up to the exact limit), or a uniform sample of that many. */
  private async impactUsers(): Promise<{ users: Row[]; total: number; sampled: boolean }> {
    const { store, schemas } = this.data.core;
    const schema = schemas.get('_User');
    if (!schema) return { users: [], total: 0, sampled: false };
    const total = await store.count(schema, { where: ALL }, schemas.lookup);
    const order = [{ path: ['objectId'], descending: false }];
    const limit = this.exactLimit;
    if (total <= limit) {
      const users = await store.find(schema, { where: ALL, order, limit: total, skip: 0 }, schemas.lookup);
      return { users, total, sampled: false };
    }
    // A uniform sample of positions (partial Fisher-Yates), read page by page.
    const positions = Array.from({ length: total }, (_, i) => i);
    for (let i = 0; i < limit; i++) {
      const j = i + Math.floor(Math.random() * (total - i));
      [positions[i], positions[j]] = [positions[j]!, positions[i]!];
    }
    const wanted = new Set(positions.slice(0, limit));
    const users: Row[] = [];
    for (let skip = 0; skip < total; skip += IMPACT_EXACT_LIMIT) {
      const page = await store.find(
        schema,
        { where: ALL, order, limit: IMPACT_EXACT_LIMIT, skip },
        schemas.lookup,
      );
      page.forEach((row, i) => {
        if (wanted.has(skip + i)) users.push(row);
      });
    }
    return { users, total, sampled: true };
  }
}

type Sample = { objectId: string; username: string };

class RolledBack extends Error {}

const emptyCounts = (): ImpactCounts => ({ gain: 0, lose: 0, gainSample: [], loseSample: [] });

function count(c: ImpactCounts, gain: boolean, lose: boolean, who: Sample): void {
  if (gain) {
    c.gain++;
    if (c.gainSample.length < SAMPLE_SIZE) c.gainSample.push(who);
  }
  if (lose) {
    c.lose++;
    if (c.loseSample.length < SAMPLE_SIZE) c.loseSample.push(who);
  }
}

function add(
  f: { visibleTo: number; hiddenFrom: number; visibleToSample: Sample[]; hiddenFromSample: Sample[] },
  key: 'visibleTo' | 'hiddenFrom',
  who: Sample,
): void {
  f[key]++;
  const sample = key === 'visibleTo' ? f.visibleToSample : f.hiddenFromSample;
  if (sample.length < SAMPLE_SIZE) sample.push(who);
}

/**
 * The 95% margin, in users, of any count scaled up from a uniform sample of `n` out of `total`:
 * the worst case (a proportion of one half), with the finite population correction.
 */
export function margin(total: number, n: number): number {
  const fpc = Math.sqrt((total - n) / (total - 1));
  return Math.ceil(1.96 * Math.sqrt(0.25 / n) * fpc * total);
}
