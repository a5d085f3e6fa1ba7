/**
 * The realtime frames' error codes and texts (docs/protocol.md#realtime-frames): the service sends
 * them, the client library acts on the codes (5: subscribe again with a snapshot), tests and the
 * SDKs compare the texts exactly.
 */

/** Error codes of an `{op: "error"}` frame. */
export const LiveCode = {
  MALFORMED: 1,
  NOT_CONNECTED_OR_UNKNOWN_REQUEST: 2,
  UNKNOWN_OP: 3,
  INVALID_QUERY: 4,
  RESUME_WINDOW_EXCEEDED: 5,
  PERMISSION: 119,
  /** The class's beforeFind refused the subscription (REST answers a find the same). */
  SCRIPT_FAILED: 141,
  INVALID_SESSION: 209,
  TOO_MANY: 155,
} as const;

export type LiveCodeValue = (typeof LiveCode)[keyof typeof LiveCode];

/** The kinds of event frames: what a subscription is told about a change (docs/protocol.md#realtime-frames). */
export type LiveEventKind = 'create' | 'update' | 'delete' | 'enter' | 'leave';

/** A subscription's id on its connection: a whole number, or a string of 1 to MAX_REQUEST_ID characters. */
export type RequestId = number | string;
export const MAX_REQUEST_ID = 128;

/** The texts of the error frames. */
export const LiveText = {
  notJson: 'Malformed frame: it is not valid JSON.',
  binary: 'Malformed frame: frames are JSON text.',
  notObject: 'Malformed frame: it must be a JSON object.',
  noOp: 'Malformed frame: op is missing.',
  unknownOp: (op: string) => `Unknown op: ${JSON.stringify(op)}.`,
  problem: (problem: string) => `Malformed frame: it ${problem}.`,
  notConnected: 'Not connected: send a connect frame first.',
  alreadyConnected: 'Malformed frame: this connection is already connected.',
  unauthorized: 'unauthorized',
  invalidSession: 'Invalid session token',
  sessionEnded: 'The session of this subscription ended (logout or revoked session).',
  requestId: `Malformed frame: requestId must be a whole number >= 0 or a non-empty string of at most ${MAX_REQUEST_ID} characters.`,
  requestIdInUse: (id: RequestId) =>
    `Malformed frame: requestId ${JSON.stringify(id)} is already in use on this connection.`,
  unknownRequestId: (id: RequestId) => `Unknown requestId ${JSON.stringify(id)}.`,
  query: 'Malformed frame: query must be an object with a className.',
  sessionTokenType: 'Malformed frame: sessionToken must be a string.',
  masterKeyOnSubscribe:
    'A master key is accepted only in the connect frame; a subscription cannot ask for master authority.',
  classNotLive: (className: string) => `Class ${className} is not open to realtime subscriptions.`,
  sessionClass: 'Permission denied for action find on class _Session.',
  keys: (detail: string) => `Invalid keys: ${detail}`,
  watch: (detail: string) => `Invalid watch: ${detail}`,
  include: (detail: string) => `Invalid include: ${detail}`,
  since: 'Invalid since: it must be an eventId string.',
  snapshot: 'Malformed frame: snapshot must be a boolean.',
  resume: (since: string) =>
    `The events after ${since} are no longer kept (resume window exceeded); subscribe again with a snapshot.`,
  frameTooLarge: (bytes: number, limit: number) =>
    `Frame too large: ${bytes} bytes; the limit is ${limit} bytes.`,
  tooManySubscriptions: (limit: number) => `Too many subscriptions: at most ${limit} per connection.`,
  /** The incumbent's text (its frame schema's) for a query property it does not know; the SDKs compare it. */
  additionalProperties: 'Additional properties not allowed',
  shuttingDown: 'The service is shutting down.',
  internal: 'Internal server error.',
} as const;
