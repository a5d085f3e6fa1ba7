import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { NextFunction, Request, RequestHandler, Response, Router } from 'express';
import { getIronSession, type IronSession } from 'iron-session';
import { Secret, TOTP } from 'otpauth';
import { z } from 'zod';
import type { ConsoleUser } from './context.ts';
import { BffCode, sendError } from './errors.ts';
import type { BffOptions, ConsoleUserConfig } from './options.ts';
import { verifyPassword } from './passwords.ts';
import { LoginThrottle } from './throttle.ts';

export const SESSION_COOKIE = 'bds_console';
export const SESSION_SECRET_FILE = 'console-session-secret';

interface SessionData {
  username?: string;
  /** ms since epoch */
  createdAt?: number;
  lastSeen?: number;
}

/**
 * The iron-session password: `sessionSecret` when given, else a random one generated once and
 * kept in `<dataDir>/console-session-secret` with mode 0600.
 */
export function resolveSessionSecret(options: Pick<BffOptions, 'sessionSecret' | 'dataDir'>): string {
  if (options.sessionSecret) return options.sessionSecret;
  const file = path.join(options.dataDir, SESSION_SECRET_FILE);
  const read = () => {
    if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
    const secret = readFileSync(file, 'utf8').trim();
    if (secret.length < 32) throw new Error(`${file} holds a session secret shorter than 32 characters`);
    return secret;
  };
  try {
    return read();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  mkdirSync(options.dataDir, { recursive: true });
  try {
    writeFileSync(file, `${randomBytes(32).toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return read();
}

const LOCAL_HOSTS = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);

function isLocalhost(req: Request): boolean {
  const host = req.hostname ?? '';
  return LOCAL_HOSTS.has(host) || host.endsWith('.localhost');
}

const loginBody = z.strictObject({
  username: z.string().min(1).max(128),
  password: z.string().min(1).max(1024),
  totp: z
    .string()
    .regex(/^\d{6}$/, 'must be a 6-digit code')
    .optional(),
});

export function publicUser(user: ConsoleUserConfig): ConsoleUser {
  return user.apps
    ? { username: user.username, role: user.role, apps: [...user.apps] }
    : {
        username: user.username,
        role: user.role,
      };
}

export interface Sessions {
  /** POST /login, POST /logout, GET /session on the /bff router. */
  registerRoutes(router: Router): void;
  /** Sets req.consoleUser or answers 401. */
  requireUser: RequestHandler;
}

export function createSessions(options: BffOptions): Sessions {
  const password = resolveSessionSecret(options);
  const users = new Map(options.consoleUsers.map((u) => [u.username, u]));
  const throttle = new LoginThrottle(options.loginThrottle);
  const lastTotpStep = new Map<string, number>();
  const idleMs = options.idleTimeoutSeconds * 1000;
  const absoluteMs = options.absoluteTimeoutSeconds * 1000;
  const touchEveryMs = Math.min(60_000, Math.floor(idleMs / 10));

  const open = (req: Request, res: Response): Promise<IronSession<SessionData>> =>
    getIronSession<SessionData>(req, res, {
      password,
      cookieName: SESSION_COOKIE,
      // The seal outlives the absolute timeout by iron's clock skew; createdAt/lastSeen decide.
      ttl: options.absoluteTimeoutSeconds + 60,
      cookieOptions: {
        maxAge: options.absoluteTimeoutSeconds,
        httpOnly: true,
        sameSite: 'strict',
        secure: options.secureCookies === 'auto' ? !isLocalhost(req) : options.secureCookies,
        path: '/bff',
      },
    });

  /** The current console user, or the reason there is none. Refreshes the idle timer. */
  const current = async (req: Request, res: Response): Promise<ConsoleUser | string> => {
    const session = await open(req, res);
    if (!session.username) return 'Not logged in.';
    const now = Date.now();
    const user = users.get(session.username);
    if (
      !user ||
      typeof session.createdAt !== 'number' ||
      typeof session.lastSeen !== 'number' ||
      now - session.createdAt > absoluteMs ||
      now - session.lastSeen > idleMs
    ) {
      session.destroy();
      return 'Session expired; log in again.';
    }
    if (now - session.lastSeen >= touchEveryMs) {
      session.lastSeen = now;
      await session.save();
    }
    return publicUser(user);
  };

  const requireUser: RequestHandler = async (req, res, next) => {
    const user = await current(req, res);
    if (typeof user === 'string') return sendError(res, 401, BffCode.forbidden, user);
    (req as Request & { consoleUser?: ConsoleUser }).consoleUser = user;
    next();
  };

  const login = async (req: Request, res: Response, _next: NextFunction) => {
    const parsed = loginBody.safeParse(req.body ?? {});
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const field = issue.path.join('.') || 'body';
      return sendError(res, 400, BffCode.badRequest, `Invalid login request: ${field} ${issue.message}.`);
    }
    const { username, password: given, totp } = parsed.data;
    const keys = [`ip:${req.ip ?? 'unknown'}`, `user:${username.toLowerCase()}`];
    const wait = throttle.waitSeconds(keys);
    if (wait > 0) {
      res.setHeader('Retry-After', String(wait));
      return sendError(
        res,
        429,
        BffCode.throttled,
        `Too many login attempts; try again in ${wait} second${wait === 1 ? '' : 's'}.`,
      );
    }
    const user = users.get(username);
    const ok = await verifyPassword(given, user?.passwordHash);
    if (!ok || !user) {
      throttle.failure(keys);
      return sendError(res, 401, BffCode.invalidLogin, 'Invalid username or password.');
    }
    if (user.mfaSecret) {
      if (!totp) return res.json({ mfaRequired: true });
      const step = validTotpStep(user.mfaSecret, totp);
      if (step === null || step <= (lastTotpStep.get(user.username) ?? -1)) {
        throttle.failure(keys);
        return sendError(res, 401, BffCode.invalidLogin, 'Invalid authentication code.');
      }
      lastTotpStep.set(user.username, step);
    }
    throttle.success([keys[1]!]);
    const session = await open(req, res);
    const now = Date.now();
    session.username = user.username;
    session.createdAt = now;
    session.lastSeen = now;
    await session.save();
    res.json({ user: publicUser(user) });
  };

  return {
    requireUser,
    registerRoutes(router) {
      router.post('/login', login);
      router.post('/logout', async (req, res) => {
        const session = await open(req, res);
        session.destroy();
        res.json({ ok: true });
      });
      router.get('/session', async (req, res) => {
        const user = await current(req, res);
        if (typeof user === 'string') return sendError(res, 401, BffCode.forbidden, user);
        res.json({ user });
      });
    },
  };
}

/** The TOTP time step the token is valid for (±1 step), or null. */
function validTotpStep(secret: string, token: string): number | null {
  const totp = new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30, algorithm: 'SHA1' });
  const delta = totp.validate({ token, window: 1 });
  if (delta === null) return null;
  return Math.floor(Date.now() / 30_000) + delta;
}
