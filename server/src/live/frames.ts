import { isObject, LiveCode, LiveText, MAX_REQUEST_ID, type RequestId } from '@bds/client/protocol';
import { keyPathProblem } from '../kernel/names.ts';
import { jsonProblem } from '../kernel/validate.ts';

export interface ErrorFrame {
  op: 'error';
  code: number;
  error: string;
  reconnect: boolean;
  requestId?: RequestId;
}

export class FrameError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly requestId?: RequestId,
    /** Whether the client should connect again (the SDKs do when told so). */
    readonly reconnect = false,
  ) {
    super(message);
  }
}

export function errorFrame(
  code: number,
  error: string,
  requestId?: RequestId,
  reconnect = false,
): ErrorFrame {
  return requestId === undefined
    ? { op: 'error', code, error, reconnect }
    : { op: 'error', code, error, reconnect, requestId };
}

/** A parsed client frame: an object with a string `op` (the rest is checked per op). */
export function parseFrame(text: string): Record<string, unknown> & { op: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new FrameError(LiveCode.MALFORMED, LiveText.notJson);
  }
  if (!isObject(value)) throw new FrameError(LiveCode.MALFORMED, LiveText.notObject);
  const problem = jsonProblem(value);
  if (problem) throw new FrameError(LiveCode.MALFORMED, LiveText.problem(problem));
  if (typeof value.op !== 'string' || value.op === '')
    throw new FrameError(LiveCode.MALFORMED, LiveText.noOp);
  return value as Record<string, unknown> & { op: string };
}

export function requestIdOf(frame: Record<string, unknown>): RequestId {
  const id = frame.requestId;
  if (typeof id === 'number' && Number.isSafeInteger(id) && id >= 0) return id;
  if (typeof id === 'string' && id.length > 0 && id.length <= MAX_REQUEST_ID) return id;
  throw new FrameError(LiveCode.MALFORMED, LiveText.requestId);
}

/** What a subscribe or update asks for, checked for shape (access is decided later). */
export interface SubscriptionRequest {
  requestId: RequestId;
  className: string;
  where: Record<string, unknown>;
  keys: string[] | undefined;
  watch: string[] | undefined;
  include: string[];
  sessionToken: string | undefined;
  snapshot: boolean;
  since: string | undefined;
}

const MAX_LIST = 100;

/** What a subscription's query may hold (docs/protocol.md#realtime-frames; `fields` is the old name of `keys`). */
const QUERY_PROPERTIES = new Set(['className', 'where', 'keys', 'fields', 'watch', 'include']);

function pathList(
  value: unknown,
  requestId: RequestId,
  text: (detail: string) => string,
): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || value.length > MAX_LIST) {
    throw new FrameError(
      LiveCode.INVALID_QUERY,
      text(`it must be a list of at most ${MAX_LIST} field names.`),
      requestId,
    );
  }
  for (const item of value) {
    const problem = typeof item === 'string' ? keyPathProblem(item) : 'it is not a string';
    if (problem)
      throw new FrameError(LiveCode.INVALID_QUERY, text(`${JSON.stringify(item)}: ${problem}`), requestId);
  }
  return [...new Set(value as string[])];
}

export function parseSubscription(frame: Record<string, unknown>): SubscriptionRequest {
  const requestId = requestIdOf(frame);
  if (frame.masterKey !== undefined) {
    throw new FrameError(LiveCode.PERMISSION, LiveText.masterKeyOnSubscribe, requestId);
  }
  const query = frame.query;
  if (!isObject(query) || typeof query.className !== 'string' || query.className === '') {
    throw new FrameError(LiveCode.MALFORMED, LiveText.query, requestId);
  }
  if (query.masterKey !== undefined) {
    throw new FrameError(LiveCode.PERMISSION, LiveText.masterKeyOnSubscribe, requestId);
  }
  // As the incumbent answers it (1, reconnect: true), which is what the SDKs act on.
  if (Object.keys(query).some((key) => !QUERY_PROPERTIES.has(key))) {
    throw new FrameError(LiveCode.MALFORMED, LiveText.additionalProperties, requestId, true);
  }
  const where = query.where ?? {};
  if (!isObject(where)) {
    throw new FrameError(LiveCode.INVALID_QUERY, 'Invalid where: it must be a JSON object.', requestId);
  }
  const token = frame.sessionToken;
  if (token !== undefined && token !== null && typeof token !== 'string') {
    throw new FrameError(LiveCode.MALFORMED, LiveText.sessionTokenType, requestId);
  }
  const snapshot = frame.snapshot ?? false;
  if (typeof snapshot !== 'boolean') throw new FrameError(LiveCode.MALFORMED, LiveText.snapshot, requestId);
  const since = frame.since;
  if (since !== undefined && since !== null && typeof since !== 'string') {
    throw new FrameError(LiveCode.INVALID_QUERY, LiveText.since, requestId);
  }
  const include = pathList(frame.include ?? query.include, requestId, LiveText.include) ?? [];
  return {
    requestId,
    className: query.className,
    where,
    keys: pathList(query.keys ?? query.fields, requestId, LiveText.keys),
    watch: pathList(query.watch, requestId, LiveText.watch),
    include,
    sessionToken: typeof token === 'string' && token !== '' ? token : undefined,
    snapshot,
    since: typeof since === 'string' ? since : undefined,
  };
}

/**
 * A subscription as a trigger answered it (its class's beforeSubscribe, then beforeFind;
 * docs/protocol.md#cloud-code-module): the where, keys and include it answered replace the caller's, checked as a
 * frame's are; `watch` too when the answer has one (a find's never does), else it stays the
 * caller's. A list may come back as a comma-separated string (the wire form of a find's).
 */
export function narrowedBy(
  request: SubscriptionRequest,
  answered: { where: Record<string, unknown>; keys?: unknown; include?: unknown; watch?: unknown },
): SubscriptionRequest {
  return {
    ...request,
    where: answered.where,
    keys: pathList(listOf(answered.keys), request.requestId, LiveText.keys),
    watch:
      answered.watch === undefined
        ? request.watch
        : pathList(listOf(answered.watch), request.requestId, LiveText.watch),
    include: pathList(listOf(answered.include), request.requestId, LiveText.include) ?? [],
  };
}

/** A list of field names from its wire form: a list, or a comma-separated string. */
function listOf(value: unknown): unknown {
  return typeof value === 'string' ? (value === '' ? undefined : value.split(',')) : value;
}

/**
 * A subscription in the form realtime triggers get it: the wire form of a find's query (lists
 * comma-separated, as the incumbent's `Parse.Query` JSON has them), with only what it holds.
 */
export function wireQueryOf(request: SubscriptionRequest): {
  className: string;
  where: Record<string, unknown>;
  keys?: string;
  watch?: string;
  include?: string;
} {
  return {
    className: request.className,
    where: request.where,
    ...(request.keys ? { keys: request.keys.join(',') } : {}),
    ...(request.watch ? { watch: request.watch.join(',') } : {}),
    ...(request.include.length > 0 ? { include: request.include.join(',') } : {}),
  };
}
