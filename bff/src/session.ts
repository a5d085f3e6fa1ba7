import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ErrorCode } from '@bds/client/protocol';
import type { NextFunction, Request, RequestHandler, Response, Router } from 'express';
import { getIronSession, type IronSession } from 'iron-session';
import { Secret, TOTP } from 'otpauth';
import { z } from 'zod';
import { asConsoleUser } from './console-caller.ts';
import { ConsoleUserDirectory } from './console-users.ts';
import { type ConsoleSessions, type ConsoleUser, consoleUserOf } from './context.ts';
import { sendError } from './errors.ts';
import type { BffOptions, ConsoleUserConfig } from './options.ts';
import { verifyPassword } from './passwords.ts';
import { LoginThrottle } from './throttle.ts';

export const SESSION_COOKIE = 'bds_console';
export const SESSION_SECRET_FILE = 'console-session-secret';
/** The server-side session records (one bff process per data dir). */
export const SESSIONS_FILE = 'console-sessions.json';
/** Older sessions of a user are ended when a login would exceed this many. */
export const MAX_SESSIONS_PER_USER = 50;

export const NOT_LOGGED_IN = 'Not logged in.';
export const SESSION_EXPIRED = 'Session expired; log in again.';

interface SessionData {
  username?: string;
  /** The id of the server-side record; a cookie whose record is gone is refused. */
  sid?: string;
  /** ms since epoch: the idle timeout counts from here (the record's createdAt, the absolute one). */
  lastSeen?: number;
}

/** What the bff keeps per console session, in `<dataDir>/console-sessions.json`. */
interface SessionRecord {
  username: string;
  /** ms since epoch: the absolute timeout counts from here. */
  createdAt: number;
  /** `credentialOf(user)` at login: a changed password or MFA secret ends the session. */
  credential: string;
}

export { credentialOf } from './console-users.ts';

/**
 * Server-side console sessions: the cookie names a record, and a cookie is only good while its
 * record lives. Logout deletes that session's record (other browsers of the user stay logged in),
 * "sign out everywhere" deletes every record of the user, and a record whose user is gone or
 * whose credential changed (password or MFA secret replaced) is dropped. Kept in
 * memory and written through to a 0600 file on every change (logins and logouts, not requests),
 * so sessions survive a restart and revocations stay revoked; a lost or unreadable file ends
 * every session (fail closed).
 */
export class SessionStore {
  private readonly records = new Map<string, SessionRecord>();
  private readonly file: string;

  constructor(
    dataDir: string,
    private readonly isValid: (record: SessionRecord) => boolean,
  ) {
    this.file = path.join(dataDir, SESSIONS_FILE);
    let stored: unknown;
    try {
      stored = JSON.parse(readFileSync(this.file, 'utf8'));
    } catch (err) {
      // Missing or corrupt: no session survives.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' && !(err instanceof SyntaxError)) throw err;
    }
    const sessions = (stored as { sessions?: unknown } | undefined)?.sessions;
    if (sessions && typeof sessions === 'object') {
      for (const [sid, r] of Object.entries(sessions as Record<string, Partial<SessionRecord>>)) {
        if (
          r &&
          typeof r.username === 'string' &&
          typeof r.createdAt === 'number' &&
          typeof r.credential === 'string'
        ) {
          const record = { username: r.username, createdAt: r.createdAt, credential: r.credential };
          if (this.isValid(record)) this.records.set(sid, record);
        }
      }
    }
    if (stored !== undefined && this.records.size !== Object.keys(sessions ?? {}).length) this.persist();
  }

  get(sid: string): SessionRecord | undefined {
    return this.records.get(sid);
  }

  /** A new session for the user; returns its id. */
  create(username: string, createdAt: number, credential: string): string {
    for (const [sid, r] of this.records) if (!this.isValid(r)) this.records.delete(sid);
    const own = [...this.records].filter(([, r]) => r.username === username);
    own.sort((a, b) => a[1].createdAt - b[1].createdAt);
    for (const [sid] of own.slice(0, Math.max(0, own.length - MAX_SESSIONS_PER_USER + 1))) {
      this.records.delete(sid);
    }
    const sid = randomBytes(18).toString('base64url');
    this.records.set(sid, { username, createdAt, credential });
    this.persist();
    return sid;
  }

  delete(sid: string): void {
    if (this.records.delete(sid)) this.persist();
  }

  /** Ends every session of the user; returns how many there were. */
  deleteUser(username: string): number {
    let n = 0;
    for (const [sid, r] of this.records) {
      if (r.username === username) {
        this.records.delete(sid);
        n++;
      }
    }
    if (n) this.persist();
    return n;
  }

  private persist(): void {
    mkdirSync(path.dirname(this.file), { recursive: true });
    const tmp = `${this.file}.${process.pid}.tmp`;
    writeFileSync(tmp, `${JSON.stringify({ sessions: Object.fromEntries(this.records) })}\n`, {
      mode: 0o600,
    });
    renameSync(tmp, this.file);
  }
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

export interface Sessions extends ConsoleSessions {
  /** POST /login, POST /logout (ends this session), GET /session on the /bff router. */
  registerRoutes(router: Router): void;
  /**
   * POST /logout-everywhere: ends every session of the calling console user (theirs only, in every
   * browser). Mounted behind the session check and the read-only guard, so admins only.
   */
  registerAdminRoutes(router: Router): void;
  /** Sets req.consoleUser or answers 401. */
  requireUser: RequestHandler;
  /** Stops following the console users file. */
  close(): void;
}

/** Where the sessions report changes of the console users and problems of their file. */
export interface SessionLog {
  info(message: string): void;
  error(message: string): void;
}

/**
 * `now`: the clock of the idle and absolute timeouts and the login throttle (tests inject one).
 * The console users are the options' and the data dir's users file's (console-users.ts): a user
 * removed or changed there loses every session at once.
 */
export function createSessions(
  options: BffOptions,
  now: () => number = Date.now,
  log: SessionLog = { info() {}, error() {} },
): Sessions {
  const password = resolveSessionSecret(options);
  const users = new ConsoleUserDirectory({
    configured: options.consoleUsers,
    dataDir: options.dataDir,
    appIds: new Set(options.apps.map((a) => a.id)),
    now,
    onChange(change) {
      let ended = 0;
      for (const name of [...change.removed, ...change.changed]) {
        ended += store.deleteUser(name);
        lastTotpStep.delete(name);
      }
      const said = (label: string, names: string[]) => (names.length ? [`${label} ${names.join(', ')}`] : []);
      log.info(
        `console users changed: ${[
          ...said('added', change.added),
          ...said('removed', change.removed),
          ...said('changed', change.changed),
        ].join('; ')} (${ended} session${ended === 1 ? '' : 's'} ended)`,
      );
    },
    onProblem: (message) => log.error(message),
  });
  const throttle = new LoginThrottle(options.loginThrottle, now);
  const lastTotpStep = new Map<string, number>();
  const idleMs = options.idleTimeoutSeconds * 1000;
  const absoluteMs = options.absoluteTimeoutSeconds * 1000;
  const touchEveryMs = Math.min(60_000, Math.floor(idleMs / 10));
  const store = new SessionStore(
    options.dataDir,
    (r) => users.credential(r.username) === r.credential && now() - r.createdAt <= absoluteMs,
  );
  users.watch();

  const open = (req: Request, res: Response): Promise<IronSession<SessionData>> =>
    getIronSession<SessionData>(req, res, {
      password,
      cookieName: SESSION_COOKIE,
      // The seal outlives the absolute timeout by iron's clock skew; the record's createdAt and
      // the cookie's lastSeen decide.
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
    if (!session.username) return NOT_LOGGED_IN;
    const t = now();
    // The record names the user. A change of the users file ends the sessions of the users it
    // removed or changed; the credential is compared too, so a session never outlives its login.
    users.refresh();
    const record = typeof session.sid === 'string' ? store.get(session.sid) : undefined;
    const user = record ? users.get(record.username) : undefined;
    if (
      !user ||
      users.credential(user.username) !== record!.credential ||
      typeof session.lastSeen !== 'number' ||
      t - record!.createdAt > absoluteMs ||
      t - session.lastSeen > idleMs
    ) {
      // Every copy of this cookie ends with it.
      if (record) store.delete(session.sid!);
      session.destroy();
      return SESSION_EXPIRED;
    }
    if (t - session.lastSeen >= touchEveryMs) {
      session.lastSeen = t;
      await session.save();
    }
    return publicUser(user);
  };

  /**
   * Takes the cookie a session check would set and drops it: `holds` runs while the request's
   * own answer is already under way (its headers sent).
   */
  const withoutCookies = () =>
    ({ headersSent: false, getHeader: () => undefined, setHeader: () => undefined }) as unknown as Response;

  const requireUser: RequestHandler = async (req, res, next) => {
    const user = await current(req, res);
    if (typeof user === 'string') return sendError(res, 401, ErrorCode.OPERATION_FORBIDDEN, user);
    (req as Request & { consoleUser?: ConsoleUser }).consoleUser = user;
    // Every service call of the request (and of what it starts) names this console user.
    asConsoleUser(user.username, next);
  };

  const login = async (req: Request, res: Response, _next: NextFunction) => {
    const parsed = loginBody.safeParse(req.body ?? {});
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const field = issue.path.join('.') || 'body';
      return sendError(res, 400, ErrorCode.INVALID_JSON, `Invalid login request: ${field} ${issue.message}.`);
    }
    const { username, password: given, totp } = parsed.data;
    const keys = [`ip:${req.ip ?? 'unknown'}`, `user:${username.toLowerCase()}`];
    const wait = throttle.waitSeconds(keys);
    if (wait > 0) {
      res.setHeader('Retry-After', String(wait));
      return sendError(
        res,
        429,
        ErrorCode.REQUEST_LIMIT_EXCEEDED,
        `Too many login attempts; try again in ${wait} second${wait === 1 ? '' : 's'}.`,
      );
    }
    users.refresh();
    const user = users.get(username);
    const ok = await verifyPassword(given, user?.passwordHash);
    if (!ok || !user) {
      throttle.failure(keys);
      return sendError(res, 401, ErrorCode.OBJECT_NOT_FOUND, 'Invalid username or password.');
    }
    if (user.mfaSecret) {
      if (!totp) return res.json({ mfaRequired: true });
      const step = validTotpStep(user.mfaSecret, totp);
      if (step === null || step <= (lastTotpStep.get(user.username) ?? -1)) {
        throttle.failure(keys);
        return sendError(res, 401, ErrorCode.OBJECT_NOT_FOUND, 'Invalid authentication code.');
      }
      lastTotpStep.set(user.username, step);
    }
    throttle.success([keys[1]!]);
    const session = await open(req, res);
    // A login replaces the session this browser had.
    if (typeof session.sid === 'string') store.delete(session.sid);
    const t = now();
    session.username = user.username;
    session.sid = store.create(user.username, t, users.credential(user.username)!);
    session.lastSeen = t;
    await session.save();
    res.json({ user: publicUser(user) });
  };

  return {
    requireUser,
    holds: async (req) => typeof (await current(req, withoutCookies())) !== 'string',
    close: () => users.close(),
    registerRoutes(router) {
      router.post('/login', login);
      router.post('/logout', async (req, res) => {
        const session = await open(req, res);
        if (typeof session.sid === 'string') store.delete(session.sid);
        session.destroy();
        res.json({ ok: true });
      });
      router.get('/session', async (req, res) => {
        const user = await current(req, res);
        if (typeof user === 'string') return sendError(res, 401, ErrorCode.OPERATION_FORBIDDEN, user);
        res.json({ user });
      });
    },
    registerAdminRoutes(router) {
      router.post('/logout-everywhere', async (req, res) => {
        const ended = store.deleteUser(consoleUserOf(req).username);
        // The session check may have refreshed the cookie: clear it instead.
        res.removeHeader('set-cookie');
        (await open(req, res)).destroy();
        res.json({ ok: true, ended });
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
