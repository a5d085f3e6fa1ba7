import type { Response } from 'express';

/**
 * Sends a bff error in the service's `{code, error}` shape; `code` is one of the protocol's
 * ErrorCode (docs/protocol.md#errors), so the SPA handles the bff's errors and the service's alike.
 */
export function sendError(res: Response, status: number, code: number, error: string, extra?: object): void {
  res.status(status).json({ code, error, ...extra });
}
