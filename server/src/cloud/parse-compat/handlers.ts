import { scrub } from '@bds/client/protocol';
import { MASTER } from '../../kernel/caller.ts';
import { ErrorCode } from '../../kernel/errors.ts';
import type { Logger } from '../../kernel/log.ts';
import type { Row } from '../../kernel/records.ts';
import { traceScope } from '../../kernel/trace.ts';
import type { FindQuery } from '../../kernel/triggers.ts';
import { CloudAnswerError, callerOf, messageOf } from '../invoke.ts';
import type { CloudRequest, Handler } from '../registry.ts';
import { inHandler, Parse, type ServiceLink } from './sdk.ts';
import { type IncumbentValidator, runValidator } from './validate.ts';

/** What a handler of the incumbent's API is registered as: the answer it gives means this. */
export type IncumbentKind =
  | 'function'
  | 'job'
  | 'beforeSave'
  | 'afterSave'
  | 'beforeDelete'
  | 'afterDelete'
  | 'beforeFind'
  | 'afterFind'
  | 'beforeLogin'
  | 'afterLogin'
  | 'afterLogout'
  | 'beforePasswordResetRequest'
  | 'beforeConnect'
  | 'beforeSubscribe'
  | 'afterLiveQueryEvent';

/** Fields of a row the service assigns: never part of what a before-save trigger answers. */
const ASSIGNED = new Set(['className', 'objectId', 'createdAt', 'updatedAt']);

/** A wire row as the SDK's object of its class (`Parse.User` for `_User` and so on). */
function objectOf(row: Row | undefined, className?: string): any {
  if (!row) return undefined;
  const { className: own, ...fields } = row as Row & { className?: string };
  return Parse.Object.fromJSON({ ...fields, className: own ?? className }, false);
}

/** A query as the SDK's `Parse.Query`, and back to the wire form of a find (with `watch`). */
function queryOf(query: FindQuery & { watch?: string }): any {
  const { className, watch: _watch, ...json } = query;
  const parsed = Parse.Query.fromJSON(className, json);
  if (typeof query.watch === 'string' && query.watch) parsed.watch(...query.watch.split(','));
  return parsed;
}

function queryWire(answer: unknown, fallback: any, className: string): Record<string, unknown> {
  const query = answer instanceof Parse.Query ? answer : fallback;
  return { ...query.toJSON(), className };
}

/**
 * A before-save answer: every field of the object; on an update, the operations the handler made
 * (an `increment`, an `unset`) stay operations on the stored row. On a create they are values.
 */
function saveBody(object: any, update: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = { ...object.toJSON(), ...(update ? object._getSaveJSON() : {}) };
  for (const key of ASSIGNED) delete out[key];
  return out;
}

/**
 * `request.log`: the service's log, tagged with the trigger or function and, while the handler
 * serves a request, its trace id; the line is also kept as a line of that request (GET /logs).
 */
function logFor(log: Logger, where: Record<string, unknown>) {
  const write = (level: 'info' | 'warn' | 'error' | 'debug', args: unknown[]) => {
    const cloud = args.map(String).join(' ');
    const scope = traceScope.getStore();
    if (!scope) {
      log[level]({ ...where, cloud }, 'cloud code');
      return;
    }
    // The service's log gets the line as kept: scrubbed, the app's keys too (kernel/trace.ts).
    const text = scope.redact(args.map((arg) => String(scrub(arg))).join(' '));
    log[level]({ ...where, cloud: text, requestId: scope.requestId }, 'cloud code');
    scope.sink?.keep({ requestId: scope.requestId, kind: 'cloud', level, text });
  };
  return {
    info: (...args: unknown[]) => write('info', args),
    warn: (...args: unknown[]) => write('warn', args),
    error: (...args: unknown[]) => write('error', args),
    debug: (...args: unknown[]) => write('debug', args),
  };
}

/** The thrown value as the incumbent answers it: a Parse.Error keeps its code, anything else is 141. */
function answerError(err: unknown): CloudAnswerError {
  if (err instanceof CloudAnswerError) return err;
  if (err instanceof Parse.Error) {
    const { code, message } = err as { code: number; message: string };
    return new CloudAnswerError(code, message);
  }
  return new CloudAnswerError(ErrorCode.SCRIPT_FAILED, messageOf(err));
}

/**
 * A handler written for the incumbent as a handler of the service: the request in the incumbent's
 * shape (`request.object` a Parse.Object, `request.user` a Parse.User...), its validator first,
 * the SDK's calls inside it in-process as the caller, and its answer in the service's terms.
 */
export function wrapHandler(
  kind: IncumbentKind,
  handler: (request: any) => unknown,
  validator: IncumbentValidator | ((request: unknown) => unknown) | undefined,
  link: ServiceLink,
  log: Logger,
): Handler {
  return async (native: CloudRequest) => {
    const caller = callerOf(native) ?? MASTER;
    const user = native.user
      ? Parse.Object.fromJSON({
          ...native.user,
          className: '_User',
          sessionToken: caller.sessionToken ?? undefined,
        })
      : undefined;
    const request: Record<string, any> = {
      master: native.master,
      user,
      installationId: native.installationId ?? undefined,
      ip: native.ip ?? undefined,
      headers: native.headers,
      context: native.context,
      params: native.params,
      log: logFor(log, { trigger: native.triggerName ?? native.functionName ?? native.jobName }),
    };
    if (native.triggerName) request.triggerName = native.triggerName;
    if (native.functionName) request.functionName = native.functionName;
    if (native.jobName) {
      request.jobName = native.jobName;
      request.message = native.message;
    }
    const className = native.query?.className;
    if (native.object) request.object = objectOf(native.object);
    if (native.original) request.original = objectOf(native.original);
    if (native.query) request.query = queryOf(native.query);
    if (native.results) request.objects = native.results.map((row) => objectOf(row, className));
    if (kind === 'beforeConnect') {
      Object.assign(request, {
        event: 'connect',
        useMasterKey: native.useMasterKey,
        clientKey: native.clientKey,
      });
    }
    if (kind === 'beforeConnect' || kind === 'beforeSubscribe' || kind === 'afterLiveQueryEvent')
      request.sessionToken = native.sessionToken;
    if (kind === 'beforeSubscribe') Object.assign(request, { op: native.op, requestId: native.requestId });
    if (kind === 'afterLiveQueryEvent') {
      Object.assign(request, {
        event: native.event,
        useMasterKey: native.useMasterKey,
        clients: native.clients,
        subscriptions: native.subscriptions,
        sendEvent: true,
      });
    }
    const call = { caller, context: native.context, ip: native.ip };
    let answer: unknown;
    try {
      answer = await inHandler(link, call, async () => {
        await runValidator(validator, request as never, caller.roles);
        return handler(request);
      });
    } catch (err) {
      throw answerError(err);
    }
    switch (kind) {
      case 'function':
      case 'job':
        return answer === undefined ? undefined : Parse._encode(answer);
      case 'beforeSave':
        return saveBody(answer instanceof Parse.Object ? answer : request.object, Boolean(native.original));
      case 'beforeFind':
      case 'beforeSubscribe':
        return queryWire(answer, request.query, className!);
      case 'afterFind': {
        const objects = Array.isArray(answer) ? answer : request.objects;
        return objects.map((o: unknown) => (o instanceof Parse.Object ? (o as any).toJSON() : o));
      }
      case 'afterLiveQueryEvent':
        // What is sent: the objects as the handler left them (changed in place or replaced), or nothing.
        native.sendEvent = request.sendEvent !== false;
        if (request.object instanceof Parse.Object) native.object = request.object.toJSON() as Row;
        if (request.original instanceof Parse.Object) native.original = request.original.toJSON() as Row;
        return undefined;
      default:
        return undefined;
    }
  };
}
