import { ErrorCode } from '@bds/client/protocol';
import type { Request, RequestHandler } from 'express';
import helmet from 'helmet';
import { consoleRequestRefusal, SAFE_METHODS } from './capabilities.ts';
import { type ConsoleUser, consoleUserOf } from './context.ts';
import { sendError } from './errors.ts';

/** Header the SPA sets on every state-changing request; a cross-site form cannot set it. */
export const CSRF_HEADER = 'X-Console-CSRF';

/** Security headers with a strict CSP: no inline script or style, no eval, no framing. */
export function securityHeaders(): RequestHandler {
  return helmet({
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'", 'data:'],
        connectSrc: ["'self'"],
        fontSrc: ["'self'"],
        objectSrc: ["'none'"],
        baseUri: ["'self'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
      },
    },
    frameguard: { action: 'deny' },
    referrerPolicy: { policy: 'same-origin' },
  });
}

/** Responses under /bff/ are never cached (they carry data and session state). */
export const noStore: RequestHandler = (_req, res, next) => {
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Pragma', 'no-cache');
  next();
};

function requestOrigin(req: Request): string | undefined {
  const origin = req.get('origin');
  if (origin && origin !== 'null') return origin;
  if (origin === 'null') return 'null';
  const referer = req.get('referer');
  if (!referer) return undefined;
  try {
    return new URL(referer).origin;
  } catch {
    return 'null';
  }
}

/**
 * CSRF defence for every state-changing /bff/ request (login and logout included): the custom
 * header the SPA sets and a same-origin `Origin` (or, without one, `Referer`).
 */
export const csrfGuard: RequestHandler = (req, res, next) => {
  if (SAFE_METHODS.has(req.method)) return next();
  if (req.get(CSRF_HEADER) !== '1') {
    return sendError(
      res,
      403,
      ErrorCode.OPERATION_FORBIDDEN,
      `Cross-site request refused: missing ${CSRF_HEADER} header.`,
    );
  }
  const origin = requestOrigin(req);
  const expected = `${req.protocol}://${req.host}`;
  if (origin !== expected) {
    return sendError(
      res,
      403,
      ErrorCode.OPERATION_FORBIDDEN,
      'Cross-site request refused: origin does not match.',
    );
  }
  next();
};

export { READ_ONLY_POSTS } from './capabilities.ts';

/**
 * Console users without the `write` capability cannot change anything (capabilities.ts says which
 * requests are changes). Mounted on the /bff/ router after the session middleware (login and
 * logout are registered before it), so every route added later is covered.
 */
export const readOnlyGuard: RequestHandler = (req, res, next) => {
  const refusal = consoleRequestRefusal(consoleUserOf(req).role, req.method, req.path);
  if (refusal) return sendError(res, 403, ErrorCode.OPERATION_FORBIDDEN, refusal);
  next();
};

export function mayOpenApp(user: ConsoleUser, appId: string): boolean {
  return !user.apps || user.apps.includes(appId);
}

/** Per-app access for every route under /bff/apps/:appId/. */
export const appAccessGuard: RequestHandler = (req, res, next) => {
  const appId = String(req.params.appId ?? '');
  if (!mayOpenApp(consoleUserOf(req), appId)) {
    return sendError(res, 403, ErrorCode.OPERATION_FORBIDDEN, 'This console user has no access to this app.');
  }
  next();
};
