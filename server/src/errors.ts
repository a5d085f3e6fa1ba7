/** Protocol error codes (PROTOCOL.md "Errors"). */
export const ErrorCode = {
  INTERNAL_SERVER_ERROR: 1,
  CONNECTION_FAILED: 100,
  OBJECT_NOT_FOUND: 101,
  INVALID_QUERY: 102,
  INVALID_CLASS_NAME: 103,
  MISSING_OBJECT_ID: 104,
  INVALID_KEY_NAME: 105,
  INVALID_POINTER: 106,
  INVALID_JSON: 107,
  INCORRECT_TYPE: 111,
  OBJECT_TOO_LARGE: 116,
  OPERATION_FORBIDDEN: 119,
  INVALID_FILE_NAME: 122,
  INVALID_ACL: 123,
  INVALID_EMAIL_ADDRESS: 125,
  FILE_SAVE_ERROR: 130,
  DUPLICATE_VALUE: 137,
  INVALID_ROLE_NAME: 139,
  SCRIPT_FAILED: 141,
  VALIDATION_ERROR: 142,
  REQUEST_LIMIT_EXCEEDED: 155,
  DUPLICATE_REQUEST: 159,
  INVALID_EVENT_NAME: 160,
  USERNAME_MISSING: 200,
  PASSWORD_MISSING: 201,
  USERNAME_TAKEN: 202,
  EMAIL_TAKEN: 203,
  EMAIL_MISSING: 204,
  EMAIL_NOT_FOUND: 205,
  SESSION_MISSING: 206,
  INVALID_SESSION_TOKEN: 209,
  MFA_ERROR: 210,
  MFA_TOKEN_REQUIRED: 211,
  INVALID_SCHEMA_OPERATION: 255,
} as const;

export type ErrorCodeValue = (typeof ErrorCode)[keyof typeof ErrorCode];

/** The one error type of the service: a protocol code and a message safe to show to the caller. */
export class BdsError extends Error {
  readonly code: number;
  /** HTTP status override; when absent it is derived from the code. */
  readonly status: number | undefined;

  constructor(code: number, message: string, status?: number) {
    super(message);
    this.name = 'BdsError';
    this.code = code;
    this.status = status;
  }

  get httpStatus(): number {
    if (this.status !== undefined) return this.status;
    return httpStatusFor(this.code);
  }

  toJSON(): { code: number; error: string } {
    return { code: this.code, error: this.message };
  }
}

export function httpStatusFor(code: number): number {
  switch (code) {
    case ErrorCode.OBJECT_NOT_FOUND:
      return 404;
    case ErrorCode.INTERNAL_SERVER_ERROR:
      return 500;
    case ErrorCode.CONNECTION_FAILED:
      return 502;
    case ErrorCode.REQUEST_LIMIT_EXCEEDED:
      return 429;
    default:
      return 400;
  }
}

export const notFound = () => new BdsError(ErrorCode.OBJECT_NOT_FOUND, 'Object not found.');
export const invalidQuery = (message: string) => new BdsError(ErrorCode.INVALID_QUERY, message);
export const incorrectType = (message: string) => new BdsError(ErrorCode.INCORRECT_TYPE, message);
export const unauthorized = () => new BdsError(ErrorCode.OPERATION_FORBIDDEN, 'unauthorized', 403);
export const masterKeyRequired = () =>
  new BdsError(ErrorCode.OPERATION_FORBIDDEN, 'unauthorized: master key is required', 403);

/** Turns anything thrown into a protocol error; unknown failures never leak their details. */
export function toBdsError(err: unknown): BdsError {
  if (err instanceof BdsError) return err;
  return new BdsError(ErrorCode.INTERNAL_SERVER_ERROR, 'Internal server error.');
}
