import {
  ArgumentError,
  AuthenticationError,
  BdsClientError,
  type Client,
  ConnectionError,
  FILTERED,
  InvalidSessionError,
  type Result,
  ServerError,
} from '@bds/client';
import { CREDENTIAL_FIELDS, ErrorCode } from '@bds/client/protocol';
import type express from 'express';
import { z } from 'zod';
import { answerFor, type Capability, CHANGE_REFUSAL, queryRefusal, roleMay } from '../capabilities.ts';
import { type BffContext, type ConsoleUser, consoleUserOf } from '../context.ts';

/** A bff error in the service's `{code, error}` shape. */
export class BffError extends Error {
  constructor(
    readonly status: number,
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** A protocol error from the service, answered with the status the service used. */
export class ServiceError extends BffError {}

const secretsCache = new WeakMap<BffContext, string[]>();

function secretsOf(ctx: BffContext): string[] {
  let s = secretsCache.get(ctx);
  if (!s) {
    s = ctx.apps
      .secrets()
      .filter((x) => typeof x === 'string' && x.length > 0)
      .sort((a, b) => b.length - a.length);
    secretsCache.set(ctx, s);
  }
  return s;
}

/** Replaces every configured key value found in a string by `[FILTERED]`. */
export function redactText(text: string, secrets: string[]): string {
  let out = text;
  for (const s of secrets) if (out.includes(s)) out = out.split(s).join(FILTERED);
  return out;
}

/** A deep copy of `value` with every configured key value replaced (last line of defence). */
export function redactSecrets(value: unknown, secrets: string[]): unknown {
  if (secrets.length === 0) return value;
  if (typeof value === 'string') return redactText(value, secrets);
  if (Array.isArray(value)) return value.map((v) => redactSecrets(v, secrets));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[redactText(k, secrets)] = redactSecrets(v, secrets);
    return out;
  }
  return value;
}

const CREDENTIALS = new Set<string>(CREDENTIAL_FIELDS);

/** Shows a push token's start only: enough to tell devices apart, not to push to them. */
export const maskToken = (token: unknown) => (typeof token === 'string' ? `${token.slice(0, 8)}…` : token);

/**
 * Replaces session tokens, authData and passwords (at any depth) by `[FILTERED]`: the console
 * shows that a session exists, never the credential itself.
 */
export function hideCredentials<T>(value: T): T {
  if (Array.isArray(value)) return value.map((v) => hideCredentials(v)) as T;
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = CREDENTIALS.has(k) ? FILTERED : hideCredentials(v);
    return out as T;
  }
  return value;
}

/** The answer for a client-library result: the data, or the service's `{code, error}`. */
export function unwrap<T>(res: Result<T>): T {
  if (res.success) return res.data;
  const status = res.status === 404 || res.code === ErrorCode.OBJECT_NOT_FOUND ? 404 : 400;
  throw new ServiceError(status, res.code, res.error);
}

/** Maps anything thrown inside a route to `{status, code, error}`. */
export function errorAnswer(err: unknown): { status: number; code: number; error: string } {
  if (err instanceof BffError) return { status: err.status, code: err.code, error: err.message };
  if (err instanceof z.ZodError) return { status: 400, code: ErrorCode.INVALID_JSON, error: zodText(err) };
  if (err instanceof ConnectionError) {
    return {
      status: 502,
      code: ErrorCode.CONNECTION_FAILED,
      error: 'The data service is unreachable.',
    };
  }
  if (err instanceof InvalidSessionError) {
    return { status: 400, code: err.code ?? ErrorCode.INVALID_SESSION_TOKEN, error: err.message };
  }
  if (err instanceof AuthenticationError) {
    // The bff's own credentials were refused by the service: a gateway problem, not the user's.
    return {
      status: 502,
      code: err.code ?? ErrorCode.OPERATION_FORBIDDEN,
      error: `The data service refused the console's credentials: ${err.message}`,
    };
  }
  if (err instanceof ServerError) {
    return { status: 502, code: err.code ?? ErrorCode.INTERNAL_SERVER_ERROR, error: err.message };
  }
  if (err instanceof ArgumentError) return { status: 400, code: ErrorCode.INVALID_JSON, error: err.message };
  if (err instanceof BdsClientError) {
    return { status: 502, code: err.code ?? ErrorCode.INTERNAL_SERVER_ERROR, error: err.message };
  }
  return { status: 500, code: ErrorCode.INTERNAL_SERVER_ERROR, error: 'Internal server error.' };
}

export function zodText(err: z.ZodError): string {
  return err.issues
    .map((i) => (i.path.length ? `${i.path.map(String).join('.')}: ${i.message}` : i.message))
    .join('; ');
}

/** Parses `input` with `schema`; a failure answers 400 `{code: 107, error}` naming the field. */
export function parse<S extends z.ZodType>(schema: S, input: unknown, what: string): z.output<S> {
  const r = schema.safeParse(input);
  if (!r.success) throw new BffError(400, ErrorCode.INVALID_JSON, `Invalid ${what}: ${zodText(r.error)}`);
  return r.data;
}

export interface RouteScope {
  req: express.Request;
  res: express.Response;
  user: ConsoleUser;
  ctx: BffContext;
}

export interface AppScope extends RouteScope {
  appId: string;
  client: Client;
  /** Records a change in the audit log for this user and app. */
  audit(action: string, target: string, before: unknown, after: unknown): void;
}

type Handler<S> = (scope: S) => Promise<unknown>;

/**
 * Every answer of a route leaves here: without the configured keys, and shown to the console user
 * as their role may see it (`answerFor`: a role without `readSecrets` gets no secret). A request
 * that failed before its user was known is answered as to a user without capabilities.
 */
function send(
  ctx: BffContext,
  res: express.Response,
  status: number,
  body: unknown,
  user?: ConsoleUser,
): void {
  if (res.headersSent) return;
  res.status(status).json(redactSecrets(answerFor(user?.role, body), secretsOf(ctx)));
}

function fail(ctx: BffContext, res: express.Response, err: unknown, user?: ConsoleUser): void {
  const a = errorAnswer(err);
  send(ctx, res, a.status, { code: a.code, error: redactText(a.error, secretsOf(ctx)) }, user);
}

export function mayOpen(user: ConsoleUser, appId: string): boolean {
  return user.apps === undefined || user.apps.includes(appId);
}

/** Throws the console's 403 when `user`'s role lacks `capability`; `refusal` is the text. */
export function demand(user: ConsoleUser, capability: Capability, refusal = CHANGE_REFUSAL): void {
  if (!roleMay(user.role, capability)) throw new BffError(403, ErrorCode.OPERATION_FORBIDDEN, refusal);
}

/**
 * Refuses a request whose query parameters (in its URL, or in a JSON body's `query` member: the API
 * console, the Security API's evaluate) compare or sort on a secret field its user may not read.
 */
export function demandQueryAllowed(user: ConsoleUser, req: express.Request): void {
  const body = req.body as { query?: unknown } | undefined;
  const refusal = queryRefusal(user.role, req.query) ?? queryRefusal(user.role, body?.query);
  if (refusal) throw new BffError(403, ErrorCode.OPERATION_FORBIDDEN, refusal);
}

/** A route that is not about one app (`/apps`, `/audit`). */
export function plain(ctx: BffContext, fn: Handler<RouteScope>): express.RequestHandler {
  return async (req, res) => {
    let known: ConsoleUser | undefined;
    try {
      const user = consoleUserOf(req);
      known = user;
      demandQueryAllowed(user, req);
      const body = await fn({ req, res, user, ctx });
      send(ctx, res, 200, body, user);
    } catch (err) {
      fail(ctx, res, err, known);
    }
  };
}

/**
 * The one check of a console user on an app's route (`/apps/:appId/...`): the query they may use,
 * the app known, and theirs to open. Answers the app's id and client; throws a BffError otherwise.
 */
export function openApp(
  ctx: BffContext,
  req: express.Request,
  user: ConsoleUser,
): { appId: string; client: Client } {
  demandQueryAllowed(user, req);
  const appId = param(req, 'appId');
  if (!ctx.apps.has(appId)) throw new BffError(404, ErrorCode.OBJECT_NOT_FOUND, `Unknown app: ${appId}.`);
  if (!mayOpen(user, appId)) {
    throw new BffError(
      403,
      ErrorCode.OPERATION_FORBIDDEN,
      `Console user ${user.username} may not open app ${appId}.`,
    );
  }
  return { appId, client: ctx.apps.clientFor(appId) };
}

/** Starts a server-sent event stream on `res` (the console's live streams: realtime, logs tail). */
export function openEventStream(req: express.Request, res: express.Response): void {
  res.status(200);
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Connection', 'keep-alive');
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();
  req.socket.setKeepAlive(true);
  req.socket.setNoDelay(true);
}

export interface AppRouteOptions {
  /** Changes something: needs the `write` capability (the foundation's guard refuses it too). */
  write?: boolean;
  /** HTTP status of a successful answer. */
  status?: number;
}

/** A route under `/apps/:appId/...`: checks the app and the user's access, hands over a client. */
export function appRoute(
  ctx: BffContext,
  options: AppRouteOptions,
  fn: Handler<AppScope>,
): express.RequestHandler {
  return async (req, res) => {
    let known: ConsoleUser | undefined;
    try {
      const user = consoleUserOf(req);
      known = user;
      if (options.write) demand(user, 'write');
      const { appId, client } = openApp(ctx, req, user);
      const audit = (action: string, target: string, before: unknown, after: unknown) =>
        ctx.audit.record({
          user: user.username,
          app: appId,
          action,
          target,
          before: redactSecrets(before ?? null, secretsOf(ctx)),
          after: redactSecrets(after ?? null, secretsOf(ctx)),
        });
      const body = await fn({ req, res, user, ctx, appId, client, audit });
      send(ctx, res, options.status ?? 200, body, user);
    } catch (err) {
      fail(ctx, res, err, known);
    }
  };
}

/** The request body as an object (Express leaves it undefined without a JSON body). */
export const bodyOf = (req: express.Request): unknown => req.body ?? {};

export const param = (req: express.Request, name: string): string => String(req.params[name] ?? '');
