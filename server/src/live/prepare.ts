/**
 * A subscription checked for its caller, as a find by that caller: at subscribe and update the
 * class's beforeSubscribe, CLP find (119), the class's beforeFind, the include limits and the where
 * parsed (prepare); then everything it names secured and the matchers compiled (compile), which runs
 * again whenever its caller or its class's schema moves (registry.ts). The caller comes from the
 * caller resolver (auth/caller.ts), as for REST. A refusal is a FrameError with its code.
 */
import { LiveCode, LiveText, type RequestId } from '@bds/client/protocol';
import { decideClass } from '../access/class.ts';
import type { CallerResolver, ResolvedSession } from '../auth/caller.ts';
import { refuseHiddenFields } from '../data/authorize.ts';
import type { Core } from '../data/core.ts';
import type { Data } from '../data/data.ts';
import { resolveForMemory } from '../data/resolve.ts';
import type { Caller } from '../kernel/caller.ts';
import { ctxOf } from '../kernel/context.ts';
import { BdsError, ErrorCode } from '../kernel/errors.ts';
import type { QueryNode } from '../kernel/query.ts';
import type { ClassSchema } from '../kernel/schema.ts';
import type { FindQuery } from '../kernel/triggers.ts';
import { compileMatcher } from '../query/match.ts';
import { parseWhere } from '../query/parse.ts';
import type { SchemaRegistry } from '../schema/registry.ts';
import { indexSpecOf } from './class-index.ts';
import { FrameError, narrowedBy, type SubscriptionRequest, wireQueryOf } from './frames.ts';
import type { CompiledSubscription, Connection, LiveTriggers } from './model.ts';

export class SubscriptionCheck {
  private readonly core: Core;

  constructor(
    private readonly data: Data,
    private readonly callers: CallerResolver,
    /** Cloud code's beforeSubscribe (none without a cloud module). */
    private readonly triggers: LiveTriggers | undefined,
  ) {
    this.core = data.core;
  }

  /**
   * The caller of a subscription: master set at connect, else its own token or the connection's,
   * with the instant that session expires.
   */
  async resolveCaller(
    conn: Connection,
    token: string | null,
    requestId: RequestId,
  ): Promise<ResolvedSession> {
    const installationId = conn.installationId;
    if (conn.master || token === null) {
      const caller = await this.callers.resolve({ master: conn.master, installationId });
      return { caller, expiresAt: Number.POSITIVE_INFINITY };
    }
    try {
      return await this.callers.resolveSession(token, installationId);
    } catch (err) {
      if (err instanceof BdsError && err.code === ErrorCode.INVALID_SESSION_TOKEN) {
        throw new FrameError(LiveCode.INVALID_SESSION, LiveText.invalidSession, requestId);
      }
      throw err;
    }
  }

  /**
   * Checks a subscription for its caller: the class's beforeSubscribe first (141, or the code of a
   * Parse.Error thrown by cloud code written for the incumbent, when it refuses; what it answers
   * replaces the query, which every check below then judges), then the deciders: CLP find (119), the
   * class's beforeFind (refusing as beforeSubscribe; what it answers replaces the query), a field
   * hidden from the caller named anywhere or any invalid where or keys (4), then compiles the
   * matchers.
   */
  async prepare(
    conn: Connection,
    frame: SubscriptionRequest,
    token: string | null,
    op: 'subscribe' | 'update',
  ): Promise<CompiledSubscription> {
    const { requestId, className } = frame;
    let session: ResolvedSession;
    try {
      session = await this.resolveCaller(conn, token, requestId);
    } catch (err) {
      // A session that does not resolve is refused (209) once the class's beforeSubscribe has run
      // without a user, as it runs before any check (the incumbent's order); its refusal comes first.
      if (!(err instanceof FrameError && err.code === LiveCode.INVALID_SESSION)) throw err;
      const anonymous = await this.callers.resolve({ master: false, installationId: conn.installationId });
      await this.beforeSubscribe(conn, anonymous, token, op, frame);
      throw err;
    }
    const asked = await this.beforeSubscribe(conn, session.caller, token, op, frame);
    const { caller } = session;
    if (className === '_Session' && !caller.isMaster) {
      throw new FrameError(LiveCode.PERMISSION, LiveText.sessionClass, requestId);
    }
    const core = this.core;
    const verdict = decideClass({ className, schema: core.schemas.get(className), op: 'find', caller });
    if (!verdict.allowed) {
      throw new FrameError(LiveCode.PERMISSION, verdict.message ?? 'Permission denied.', requestId);
    }
    const answered = await this.beforeFind(caller, asked);
    const request = answered ? narrowedBy(asked, answered) : asked;
    const { includeDepth, includeCount } = core.options.requestComplexity;
    if (!caller.isMaster) {
      const tooDeep = request.include.find(
        (path) => includeDepth >= 0 && path.split('.').length > includeDepth,
      );
      if (tooDeep !== undefined) {
        throw new FrameError(
          LiveCode.INVALID_QUERY,
          LiveText.include(`${JSON.stringify(tooDeep)} nests deeper than ${includeDepth} levels.`),
          requestId,
        );
      }
      if (includeCount >= 0 && request.include.length > includeCount) {
        throw new FrameError(
          LiveCode.INVALID_QUERY,
          LiveText.include(`at most ${includeCount} paths.`),
          requestId,
        );
      }
    }
    let parsed: QueryNode;
    try {
      parsed = parseWhere(request.where, caller.isMaster ? {} : core.options.requestComplexity);
    } catch (err) {
      throw new FrameError(
        LiveCode.INVALID_QUERY,
        err instanceof Error ? err.message : String(err),
        requestId,
      );
    }
    return this.compile({ request, parsed, answered }, session);
  }

  /**
   * The class's beforeSubscribe (cloud code), run at each subscribe and update with the incumbent's
   * request (`op`, `requestId`, `query`, `sessionToken`, `user`, ...); the where, keys, watch and
   * include it answers replace the frame's. The frame as it was when the class has none.
   */
  private async beforeSubscribe(
    conn: Connection,
    caller: Caller,
    token: string | null,
    op: 'subscribe' | 'update',
    request: SubscriptionRequest,
  ): Promise<SubscriptionRequest> {
    const triggers = this.triggers;
    if (!triggers?.hasBeforeSubscribe(request.className)) return request;
    try {
      const answered = await triggers.beforeSubscribe(
        { caller, context: {}, ip: conn.ip },
        {
          op,
          requestId: request.requestId,
          sessionToken: token ?? undefined,
          query: wireQueryOf(request),
        },
      );
      return narrowedBy(request, answered);
    } catch (err) {
      // The trigger's refusal: 141, or the code of a Parse.Error thrown by cloud code written for
      // the incumbent (CloudAnswerError), as the incumbent answers it.
      if (err instanceof BdsError) throw new FrameError(err.code, err.message, request.requestId);
      throw err;
    }
  }

  /**
   * The class's beforeFind, run once at subscribe as for a find with the subscription's where, keys
   * and include (and the snapshot's limit); its answer is what the subscription keeps. `undefined`
   * when the class has none.
   */
  private async beforeFind(caller: Caller, request: SubscriptionRequest): Promise<FindQuery | undefined> {
    try {
      return await this.data.reads.beforeFind(
        ctxOf(caller, 'rest'),
        request.className,
        this.findParams(request),
      );
    } catch (err) {
      // Answered as REST answers the find: 141, or the code the trigger answered.
      if (err instanceof BdsError) throw new FrameError(err.code, err.message, request.requestId);
      throw err;
    }
  }

  /** A subscription as the parameters of a find (its snapshot, and what its beforeFind is asked). */
  findParams(request: SubscriptionRequest): Record<string, unknown> {
    const params: Record<string, unknown> = {
      where: request.where,
      limit: this.core.options.maxLimit,
    };
    if (request.keys) params.keys = request.keys.join(',');
    if (request.include.length) params.include = request.include.join(',');
    return params;
  }

  /**
   * The subscription secured and compiled for a caller: at subscribe and update, and again when its
   * caller (a role or session change) or its class's schema (a CLP change) moves. A failure refuses
   * the subscribe, or ends a subscription that no longer holds, with its code.
   */
  async compile(
    query: Pick<CompiledSubscription, 'request' | 'parsed' | 'answered'>,
    session: ResolvedSession,
  ): Promise<CompiledSubscription> {
    const { request, parsed } = query;
    const { caller } = session;
    const { requestId, className } = request;
    const core = this.core;
    const schema = core.schemas.get(className);
    // CLP find itself is decided per event (a role change may grant or take it): here only its row condition.
    const verdict = decideClass({ className, schema, op: 'find', caller });
    try {
      const effective = schema ?? emptySchema(className);
      const resolved = await secureSubscription(core, caller, effective, request, parsed);
      return {
        request,
        caller,
        expiresAt: session.expiresAt,
        parsed,
        answered: query.answered,
        schema,
        matcher: compileMatcher(resolved, effective),
        clpMatcher:
          verdict.allowed && verdict.condition ? compileMatcher(verdict.condition, effective) : null,
        index: indexSpecOf(resolved, effective),
      };
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      // A subquery on a class the caller may not find is a permission refusal; the rest is the query's.
      const code =
        err instanceof BdsError &&
        err.code === ErrorCode.OPERATION_FORBIDDEN &&
        !message.includes('not allowed to query')
          ? LiveCode.PERMISSION
          : LiveCode.INVALID_QUERY;
      throw new FrameError(code, message, requestId);
    }
  }
}

/**
 * The one check of everything a subscription names, for its caller, as a find by that caller:
 * every field of `keys`, `watch` and `include` (a dotted path by its field) must be one the caller
 * may query (protectedFields, `_User` secrets: the decider REST asks), and the where is secured and
 * its subqueries resolved. A hidden field anywhere answers the text a where on it answers.
 */
async function secureSubscription(
  core: Core,
  caller: Caller,
  schema: ClassSchema,
  request: SubscriptionRequest,
  parsed: QueryNode,
): Promise<QueryNode> {
  refuseHiddenFields(core, caller, schema, [
    ...(request.keys ?? []),
    ...(request.watch ?? []),
    ...request.include,
  ]);
  return resolveForMemory(core, caller, schema, parsed);
}

/** A class's schema, or an empty one (no fields, no CLP) for a class that has none yet. */
export function schemaOrEmpty(schemas: SchemaRegistry, className: string): ClassSchema {
  return schemas.get(className) ?? emptySchema(className);
}

function emptySchema(className: string): ClassSchema {
  return { className, fields: {}, classLevelPermissions: {}, indexes: {} };
}
