import { ErrorCode } from '@bds/client/protocol';

export { ErrorCode, type ErrorCodeValue } from '@bds/client/protocol';

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
