/**
 * An import from a running parse-server started in the service (docs/transfer.md, "From the
 * console"), master key only: `POST FROM_PARSE_PATH` starts one, `GET FROM_PARSE_PATH/<id>`
 * answers its progress and, once it ended, its summary. The incumbent's master key (and database
 * URL) are never answered.
 */

/** The service's route of imports from parse-server. */
export const FROM_PARSE_PATH = '/transfer/parse';

/** What starts an import. */
export interface FromParseStart {
  /** The incumbent's http(s) URL, its mount path included (`https://old.example.com/parse`). */
  serverURL: string;
  appId: string;
  masterKey: string;
  /** postgres://… of the incumbent's database, for its users' password hashes and relations. */
  postgresURL?: string;
  /** Whether its `_Session` rows come too (signed-in users stay signed in). */
  sessions?: boolean;
}

/** What an import's summary counts (the CLI prints the same). */
export interface FromParseCounts {
  /** The changes since this time of the incumbent (a second run), or null (a full import). */
  since: string | null;
  resumed: boolean;
  classes: number;
  rows: number;
  relations: number;
  files: number;
  passwords: number;
  sessions: number;
  deleted: number;
  /** Users' authData entries not brought, per provider. */
  authDataNotImported: Record<string, number>;
}

/** One class of a run: its rows written so far, out of those the incumbent counted. */
export interface FromParseClassProgress {
  className: string;
  rows: number;
  /** The rows to read (the incumbent's count when the class started); null before that. */
  total: number | null;
  done: boolean;
}

/** A run as `GET FROM_PARSE_PATH/<id>` answers it. */
export interface FromParseRun {
  id: string;
  status: 'running' | 'done' | 'failed';
  serverURL: string;
  appId: string;
  sessions: boolean;
  /** Whether a database URL was given (never the URL). */
  postgres: boolean;
  startedAt: string;
  finishedAt: string | null;
  /** The classes in the order they are imported, as far as the run got. */
  classes: FromParseClassProgress[];
  summary: FromParseCounts | null;
  /** Why a failed run stopped. */
  error: string | null;
}

/**
 * A parse-server the console may import from, as the bff lists it (`GET /bff/apps/<app>/transfer/
 * parse-sources`): the bff's option `apps[].parseSources` without its master key or database URL.
 */
export interface ParseImportSource {
  name: string;
  serverURL: string;
  appId: string;
  /** Whether a database URL is configured (never the URL). */
  postgres: boolean;
}

/** What the console sends to start an import: a configured source, by name. */
export interface ConsoleParseImportStart {
  source: string;
  sessions?: boolean;
}
