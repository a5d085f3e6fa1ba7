import type { Client } from '@bds/client';
import type { AuditEntry } from '@bds/client/protocol';

export type { AuditEntry } from '@bds/client/protocol';

import type { Request } from 'express';
import type { ParseSourceConfig } from './options.ts';

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
  /** The parse-servers this app may import from, keys included (server-side only). */
  parseSources(appId: string): ParseSourceConfig[];
  /** Every configured secret (master, REST, JavaScript, client, webhook keys): for leak scans and log scrubbing. */
  secrets(): string[];
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

/** A filter of the data browser saved by a console user: theirs, or every user's once shared. */
export interface SavedFilter {
  id: number;
  className: string;
  /** The console user who saved it (the only one who may share or delete it). */
  owner: string;
  name: string;
  where: Record<string, unknown>;
  savedAt: string;
  /** Listed to every console user of the app (else to its owner only). */
  shared: boolean;
}

export interface SavedFilterStore {
  /** The viewer's own filters and the shared ones. */
  list(app: string, className: string, viewer: string): SavedFilter[];
  /** Saves, or replaces the owner's filter of the same name. */
  save(
    app: string,
    className: string,
    owner: string,
    name: string,
    where: Record<string, unknown>,
  ): SavedFilter;
  get(app: string, id: number): SavedFilter | null;
  setShared(app: string, id: number, shared: boolean): SavedFilter;
  delete(id: number): void;
  close(): void;
}

/** The console sessions as the API routes may read them (session.ts keeps them). */
export interface ConsoleSessions {
  /**
   * Whether the console session of `req` still holds: the session middleware's check, without a
   * cookie sent back (a long-lived stream asks again while its answer is under way).
   */
  holds(req: Request): Promise<boolean>;
}

export interface BffContext {
  apps: AppRegistry;
  audit: AuditLog;
  filters: SavedFilterStore;
  /** Absent where routes are mounted without the session middleware (route tests). */
  sessions?: ConsoleSessions;
}

/** Set by the session middleware on every authenticated request. */
export function consoleUserOf(req: Request): ConsoleUser {
  const user = (req as Request & { consoleUser?: ConsoleUser }).consoleUser;
  if (!user) throw new Error('consoleUserOf called on a route without the session middleware');
  return user;
}
