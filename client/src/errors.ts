/**
 * Errors of the HTTP channel and of local refusals. Protocol errors (a 400/404 answer carrying
 * `{code, error}`) are not thrown: they come back as `{success: false, code, error}`.
 */
export class BdsClientError extends Error {
  /** Protocol code when the server sent one. */
  readonly code: number | undefined;
  /** HTTP status when a response was received. */
  readonly status: number | undefined;

  constructor(message: string, options: { code?: number; status?: number; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = options.code;
    this.status = options.status;
  }
}

/** Bad call from the caller's side (wrong option shape, invalid name, self-referencing role). */
export class ArgumentError extends BdsClientError {}

/** 401/403 answers, and local refusals that need a credential the client does not hold. */
export class AuthenticationError extends BdsClientError {}

/** The session token is revoked, expired or unknown (protocol code 209). */
export class InvalidSessionError extends AuthenticationError {}

/** A cloud function or job failed; carries the response. */
export class CloudCodeError extends BdsClientError {
  readonly response: unknown;
  constructor(message: string, options: { code?: number; status?: number; response?: unknown } = {}) {
    super(message, options);
    this.response = options.response;
  }
}

/** 5xx answers. */
export class ServerError extends BdsClientError {}

/** The request never got an HTTP answer (DNS, refused connection, aborted). */
export class ConnectionError extends BdsClientError {}

/** Raised by the `...OrThrow` forms for a protocol error that the plain forms return. */
export class ProtocolError extends BdsClientError {}

/**
 * A realtime refusal or failure: realtime not enabled, a connection that cannot be opened, or an
 * error frame of the service (`code` is the realtime code: 1 malformed, 2 unknown request, 3
 * unknown op, 4 invalid query, 5 resume window exceeded, 119 permission, 155 too many, 209 session).
 */
export class RealtimeError extends BdsClientError {
  /** The service's `reconnect` hint of an error frame. */
  readonly reconnect: boolean;
  /** The subscription the error frame was about, if any. */
  readonly requestId: number | string | undefined;
  constructor(
    message: string,
    options: { code?: number; reconnect?: boolean; requestId?: number | string; cause?: unknown } = {},
  ) {
    super(message, options);
    this.reconnect = options.reconnect ?? false;
    this.requestId = options.requestId;
  }
}
