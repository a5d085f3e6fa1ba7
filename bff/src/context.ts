import type { Client } from '@bds/client';
import type { Request } from 'express';

/**
 * The contract between the bff's foundation (options, console users, sessions, security
 * middleware) and its API routes. Routes never see a key: they get a client for an app.
 */

export type ConsoleRole = 'admin' | 'read-only';

export interface ConsoleUser {
  username: string;
  role: ConsoleRole;
  /** App ids this user may open; `undefined` means every configured app. */
  apps?: string[];
}

/** An application the console can manage. Keys stay inside the AppRegistry. */
export interface AppSummary {
  id: string;
  name: string;
  serverURL: string;
}

export interface AppRegistry {
  list(): AppSummary[];
  /** A client library instance holding that app's master key (server-side only). */
  clientFor(appId: string): Client;
  has(appId: string): boolean;
  /** Every configured secret (master, REST, JavaScript, client, webhook keys): for leak scans and log scrubbing. */
  secrets(): string[];
}

export interface AuditEntry {
  id: number;
  at: string;
  user: string;
  app: string;
  action: string;
  target: string;
  before: unknown;
  after: unknown;
}

export interface AuditLog {
  record(entry: Omit<AuditEntry, 'id' | 'at'>): void;
  list(filter: {
    app?: string;
    user?: string;
    action?: string;
    target?: string;
    since?: string;
    until?: string;
    limit?: number;
    before?: number;
  }): AuditEntry[];
  close(): void;
}

export interface BffContext {
  apps: AppRegistry;
  audit: AuditLog;
}

/** Set by the session middleware on every authenticated request. */
export function consoleUserOf(req: Request): ConsoleUser {
  const user = (req as Request & { consoleUser?: ConsoleUser }).consoleUser;
  if (!user) throw new Error('consoleUserOf called on a route without the session middleware');
  return user;
}
