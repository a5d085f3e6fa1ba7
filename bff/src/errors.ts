import type { Response } from 'express';

/** bff error codes, in the service's numbering so the SPA handles both the same way. */
export const BffCode = {
  internal: 1,
  badRequest: 107,
  invalidLogin: 101,
  forbidden: 119,
  throttled: 155,
} as const;

/** Sends a bff error in the service's `{code, error}` shape. */
export function sendError(res: Response, status: number, code: number, error: string, extra?: object): void {
  res.status(status).json({ code, error, ...extra });
}
