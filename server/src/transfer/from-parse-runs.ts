import { randomBytes } from 'node:crypto';
import path from 'node:path';
import {
  FILTERED,
  type FromParseClassProgress,
  type FromParseRun,
  type FromParseStart,
  isObject,
} from '@bds/client/protocol';
import type { Data } from '../data/data.ts';
import { BdsError, ErrorCode } from '../kernel/errors.ts';
import type { Logger } from '../kernel/log.ts';
import type { TransferFiles } from './format.ts';
import { FROM_PARSE_STATE_FILE, importFromParse } from './from-parse.ts';

/**
 * Imports from parse-server started in the service (the console's; docs/transfer.md, "From the
 * console"): the same importFromParse as the CLI, run in the background, one at a time, with the
 * same state file as the CLI's default (so a second run, from either, reads only the changes).
 * The incumbent's master key and database URL live in the running import's memory only: never in
 * the state file, a log line or an answer (an error message that quotes them is redacted).
 */

/** Finished runs kept for GET (the oldest forgotten first). */
const RUNS_KEPT = 20;

export class FromParseRuns {
  private readonly runs = new Map<string, FromParseRun>();
  private running: FromParseRun | undefined;
  private closing = false;

  constructor(
    private readonly data: Data,
    private readonly files: TransferFiles,
    private readonly log: Logger,
    /** Whether the service takes sign-ins with a provider (its option `auth` and cloud module). */
    private readonly supportsProvider: (provider: string) => boolean,
  ) {}

  /** Starts an import; 400 for a bad body, 409 while another runs. Answers the run as GET does. */
  start(body: unknown): FromParseRun {
    const input = checkStart(body);
    if (this.closing) throw new BdsError(ErrorCode.OPERATION_FORBIDDEN, 'The service is closing.', 503);
    if (this.running) {
      throw new BdsError(
        ErrorCode.OPERATION_FORBIDDEN,
        `An import from parse-server is running (${this.running.id}); start another once it ends.`,
        409,
      );
    }
    const run: FromParseRun = {
      id: randomBytes(9).toString('base64url'),
      status: 'running',
      serverURL: input.serverURL,
      appId: input.appId,
      sessions: input.sessions ?? false,
      postgres: input.postgresURL !== undefined,
      startedAt: new Date().toISOString(),
      finishedAt: null,
      classes: [],
      summary: null,
      error: null,
    };
    this.running = run;
    this.runs.set(run.id, run);
    for (const id of this.runs.keys()) {
      if (this.runs.size <= RUNS_KEPT) break;
      if (id !== run.id) this.runs.delete(id);
    }
    this.log.info(
      { run: run.id, serverURL: run.serverURL, appId: run.appId },
      'import from parse-server started',
    );
    void this.execute(run, input);
    return view(run);
  }

  /** A run's progress and, once it ended, its summary or error; 101 for an unknown id. */
  get(id: string): FromParseRun {
    const run = this.runs.get(id);
    if (!run) throw new BdsError(ErrorCode.OBJECT_NOT_FOUND, `No import from parse-server ${id}.`);
    return view(run);
  }

  /**
   * For a service that closes: the running import stops after its current page (failed, its
   * progress kept in the state file, so the next start goes on from there).
   */
  async close(): Promise<void> {
    this.closing = true;
    while (this.running) await new Promise((resolve) => setTimeout(resolve, 20));
  }

  private async execute(run: FromParseRun, input: FromParseStart): Promise<void> {
    const secrets = [input.masterKey, input.postgresURL].filter((s): s is string => Boolean(s));
    const byClass = new Map<string, FromParseClassProgress>();
    try {
      run.summary = await importFromParse(this.data, this.files, {
        serverURL: input.serverURL,
        appId: input.appId,
        masterKey: input.masterKey,
        postgresURL: input.postgresURL,
        sessions: input.sessions ?? false,
        supportsProvider: this.supportsProvider,
        stateFile: path.join(this.data.core.options.dataDir, FROM_PARSE_STATE_FILE),
        progress: ({ className, rows, total, done }) => {
          if (this.closing) throw new Error('the service closed; start the import again to go on.');
          let entry = byClass.get(className);
          if (!entry) {
            entry = { className, rows: 0, total: null, done: false };
            byClass.set(className, entry);
            run.classes.push(entry);
          }
          entry.rows = rows;
          if (total !== undefined) entry.total = rows + total;
          entry.done = done;
        },
      });
      run.status = 'done';
      this.log.info({ run: run.id, summary: run.summary }, 'import from parse-server done');
    } catch (err) {
      run.status = 'failed';
      run.error = redact(err instanceof Error ? err.message : String(err), secrets);
      this.log.warn({ run: run.id, error: run.error }, 'import from parse-server failed');
    } finally {
      run.finishedAt = new Date().toISOString();
      this.running = undefined;
    }
  }
}

/** A copy, so an answer being serialised never sees a run change under it. */
const view = (run: FromParseRun): FromParseRun => structuredClone(run);

function redact(text: string, secrets: string[]): string {
  let out = text;
  for (const secret of secrets) out = out.replaceAll(secret, FILTERED);
  return out;
}

const bad = (message: string) => new BdsError(ErrorCode.INVALID_JSON, message);
const KEYS = new Set(['serverURL', 'appId', 'masterKey', 'postgresURL', 'sessions']);

/** The body of a start, checked: every field named in the message that refuses it. */
function checkStart(body: unknown): FromParseStart {
  if (!isObject(body)) throw bad('The body must be a JSON object.');
  for (const key of Object.keys(body)) {
    if (!KEYS.has(key)) throw bad(`Unknown field ${key}: an import takes ${[...KEYS].join(', ')}.`);
  }
  const { serverURL, appId, masterKey, postgresURL, sessions } = body;
  if (typeof serverURL !== 'string' || !isHttpUrl(serverURL))
    throw bad('serverURL must be the http(s) URL of parse-server.');
  if (typeof appId !== 'string' || appId === '' || appId.length > 200)
    throw bad('appId must be the application id of parse-server.');
  if (typeof masterKey !== 'string' || masterKey === '' || masterKey.length > 1000)
    throw bad('masterKey must be the master key of parse-server.');
  if (
    postgresURL !== undefined &&
    (typeof postgresURL !== 'string' || !/^postgres(ql)?:\/\/./.test(postgresURL))
  )
    throw bad('postgresURL must be a postgres:// URL of the database of parse-server.');
  if (sessions !== undefined && typeof sessions !== 'boolean') throw bad('sessions must be true or false.');
  return {
    serverURL,
    appId,
    masterKey,
    ...(postgresURL !== undefined ? { postgresURL: postgresURL as string } : {}),
    ...(sessions !== undefined ? { sessions } : {}),
  };
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && text.length <= 2000;
  } catch {
    return false;
  }
}
