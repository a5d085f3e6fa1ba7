import { isObject } from '@bds/client/protocol';
import type { ClassOperation } from '../access/class.ts';
import {
  classRules,
  type Explanation,
  explainAccess,
  type OperationRule,
  type ViewpointInfo,
} from '../access/explain.ts';
import type { Data } from '../data/data.ts';
import { parseWriteBody } from '../data/write-body.ts';
import { anonymous, type Caller, makeCaller } from '../kernel/caller.ts';
import { BdsError, ErrorCode, toBdsError } from '../kernel/errors.ts';
import type { QueryNode } from '../kernel/query.ts';
import type { Row } from '../kernel/records.ts';
import { CLP_OPERATIONS, type ClassSchema } from '../kernel/schema.ts';
import { classNotFound } from '../schema/registry.ts';
import type { HeldRole } from '../storage/adapter.ts';
import { IMPACT_EXACT_LIMIT, impactOf } from './impact.ts';

export { IMPACT_EXACT_LIMIT } from './impact.ts';
export { margin } from './impact-users.ts';

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

const OPERATIONS: readonly ClassOperation[] = CLP_OPERATIONS;

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

  /**
   * POST /security/rules: the effective class-layer rules of a class, per operation, as the
   * decider enforcement asks answers them (built-in classes' fixed rules included).
   */
  rules(raw: unknown): { className: string; operations: OperationRule[] } {
    const body = objectBody(raw);
    const unknown = Object.keys(body).find((k) => k !== 'className');
    if (unknown) throw invalid(`Unknown key: ${unknown}.`);
    const schema = this.schemaOf(body.className);
    return { className: schema.className, operations: classRules(schema.className, schema) };
  }

  /** POST /security/impact: the impact of a permission draft (security/impact.ts). */
  impact(raw: unknown) {
    return impactOf(
      { data: this.data, userCaller: (id) => this.userCaller(id), exactLimit: this.exactLimit },
      raw,
    );
  }
}

class RolledBack extends Error {}
