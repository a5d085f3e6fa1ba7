import type { Ctx } from './context.ts';
import type { Row } from './records.ts';

/** What a find trigger sees and may rewrite: the query in its wire form. */
export interface FindQuery {
  className: string;
  where: Record<string, unknown>;
  limit?: number;
  skip?: number;
  order?: string;
  keys?: string;
  include?: string;
}

/**
 * Triggers around reads (cloud code implements them; data/reads.ts calls them). A `beforeFind`
 * answers the query to run, which still passes every access layer, so it can only narrow. An
 * `afterFind` gets rows already filtered by access control; data/ keeps only rows and fields it
 * was given, so it can never widen what the caller may see.
 */
export interface ReadTriggers {
  hasFind(className: string): boolean;
  beforeFind(ctx: Ctx, query: FindQuery): Promise<FindQuery>;
  afterFind(ctx: Ctx, query: FindQuery, rows: Row[]): Promise<Row[]>;
}

/** Triggers around the account rules (users/ calls them): a login may be refused before its session. */
export interface AccountTriggers {
  /** Throws to refuse the login; no session is created. */
  beforeLogin(ctx: Ctx, user: Row): Promise<void>;
  /** After the session exists; failures are logged, never undo the login. */
  afterLogin(ctx: Ctx, user: Row): void;
  /** After the session is gone. */
  afterLogout(ctx: Ctx, session: Row): void;
  /** Before a password reset mail goes to the user (without the password); throws to send none. */
  beforePasswordResetRequest?(ctx: Ctx, user: Row): Promise<void>;
}
