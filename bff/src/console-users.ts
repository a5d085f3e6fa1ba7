import { createHash } from 'node:crypto';
import {
  type FSWatcher,
  mkdirSync,
  readFileSync,
  renameSync,
  type Stats,
  statSync,
  watch,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { type ConsoleUserConfig, consoleUserProblems, consoleUserSchema, OptionError } from './options.ts';

/**
 * The data dir's console users file (`<dataDir>/console-users.json`, mode 0600): `npm start`
 * writes its first admin there, `npm run console:user` adds, removes and changes users there, and
 * a running bff reads it again whenever it changes. This module is the one place that reads and
 * writes it.
 */
export const USERS_FILE = 'console-users.json';

export const usersFileSchema = z.strictObject({
  consoleUsers: z.array(consoleUserSchema),
  /** Only for the demo user `npm start` generates: its login, printed at every start. */
  demoLogin: z.strictObject({ username: z.string(), password: z.string() }).optional(),
});
export type UsersFile = z.output<typeof usersFileSchema>;

/** A users file that cannot be used; the message names the file and the problem. */
export class UsersFileError extends Error {
  override name = 'UsersFileError';
}

export const usersFileOf = (dataDir: string): string => path.join(dataDir, USERS_FILE);

/** The file's users, checked; `undefined` when there is no file. Throws a UsersFileError. */
export function readUsersFile(file: string): UsersFile | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new UsersFileError(`cannot read ${file}: ${(err as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new UsersFileError(`${file} is not valid JSON: ${(err as Error).message}`);
  }
  const parsed = usersFileSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const where = issue.path.length ? issue.path.join('.') : '(file)';
    const detail = issue.code === 'unrecognized_keys' ? `unknown key "${issue.keys[0]}"` : issue.message;
    throw new UsersFileError(`${file}: ${where}: ${detail}`);
  }
  // App ids are checked by the bff that reads it (the file alone does not know them).
  const duplicate = consoleUserProblems(parsed.data.consoleUsers, new Set()).find(
    (p) => p.path[1] === 'username',
  );
  if (duplicate) {
    const name = parsed.data.consoleUsers[duplicate.path[0] as number]!.username;
    throw new UsersFileError(`${file}: consoleUsers.${duplicate.path.join('.')}: "${name}" is a duplicate`);
  }
  return parsed.data;
}

/** Writes the file whole (a temporary file renamed over it), mode 0600. */
export function writeUsersFile(file: string, data: UsersFile): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(data, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, file);
}

/** A fingerprint of what a console user logs in with (password hash and MFA secret). */
export function credentialOf(user: Pick<ConsoleUserConfig, 'passwordHash' | 'mfaSecret'>): string {
  return createHash('sha256')
    .update(`${user.passwordHash}\0${user.mfaSecret ?? ''}`)
    .digest('base64url')
    .slice(0, 22);
}

/** What a change of the users file did. */
export interface UsersChange {
  added: string[];
  removed: string[];
  /** Users whose entry differs in any way (password, MFA secret, role, apps). */
  changed: string[];
}

/** How long a users file that cannot be read may stay so before its users are refused. */
export const UNREADABLE_GRACE_MS = 1000;

const entryText = (u: ConsoleUserConfig) =>
  JSON.stringify([u.username, u.passwordHash, u.role, u.apps ?? null, u.mfaSecret ?? null]);

const stampOf = (st: Stats | undefined) => (st ? `${st.ino}:${st.size}:${st.mtimeMs}` : 'none');

/**
 * The console users a running bff accepts: those of its options, then those of the data dir's
 * users file. The file is read again when it changes (a watch on the data dir, and a look at its
 * size and time before each session check and login, which also covers file systems without
 * watches), so additions, removals, password, MFA, role and app changes apply at once; `onChange`
 * hears who was removed or changed, so their sessions end. A file that cannot be read at start
 * stops the start; one that cannot be read later (a hand edit gone wrong) is looked at again,
 * and after UNREADABLE_GRACE_MS its users are refused until it is fixed (fail closed).
 */
export class ConsoleUserDirectory {
  private readonly configured: Map<string, ConsoleUserConfig>;
  private fromFile = new Map<string, ConsoleUserConfig>();
  private readonly credentials = new Map<string, string>();
  private readonly file: string;
  private stamp = '';
  private unreadableSince: number | undefined;
  private retry: NodeJS.Timeout | undefined;
  private watcher: FSWatcher | undefined;

  constructor(
    private readonly opts: {
      configured: ConsoleUserConfig[];
      dataDir: string;
      appIds: ReadonlySet<string>;
      onChange(change: UsersChange): void;
      onProblem(message: string): void;
      now?: () => number;
    },
  ) {
    this.configured = new Map(opts.configured.map((u) => [u.username, u]));
    this.file = usersFileOf(opts.dataDir);
    this.stamp = stampOf(this.stat());
    let stored: UsersFile | undefined;
    try {
      stored = readUsersFile(this.file);
    } catch (err) {
      throw new OptionError(USERS_FILE, (err as Error).message);
    }
    const { users, problems } = this.usable(stored?.consoleUsers ?? []);
    if (problems.length) throw new OptionError(USERS_FILE, problems[0]!);
    this.fromFile = users;
    for (const u of this.all()) this.credentials.set(u.username, credentialOf(u));
  }

  get(username: string): ConsoleUserConfig | undefined {
    return this.configured.get(username) ?? this.fromFile.get(username);
  }

  /** The user's credential fingerprint (a session made with another one is no longer good). */
  credential(username: string): string | undefined {
    return this.credentials.get(username);
  }

  /** Follows the file from now on (until close). */
  watch(): void {
    try {
      mkdirSync(this.opts.dataDir, { recursive: true });
      this.watcher = watch(this.opts.dataDir, { persistent: false }, (_event, name) => {
        if (!name || name === USERS_FILE) this.refresh();
      });
      this.watcher.on('error', () => this.watcher?.close());
    } catch {
      // No watch on this file system: the look before each session check still applies changes.
    }
  }

  /** Reads the file again if it changed since the last read. */
  refresh(): void {
    const stat = this.stat();
    const stamp = stampOf(stat);
    if (stamp === this.stamp && this.unreadableSince === undefined) return;
    let stored: UsersFile | undefined;
    try {
      stored = readUsersFile(this.file);
    } catch (err) {
      this.unreadable((err as Error).message, stamp);
      return;
    }
    this.stamp = stamp;
    this.unreadableSince = undefined;
    clearTimeout(this.retry);
    const { users, problems } = this.usable(stored?.consoleUsers ?? []);
    for (const problem of problems) this.opts.onProblem(problem);
    this.replace(users);
  }

  close(): void {
    clearTimeout(this.retry);
    this.watcher?.close();
  }

  private now(): number {
    return (this.opts.now ?? Date.now)();
  }

  private stat(): Stats | undefined {
    try {
      return statSync(this.file);
    } catch {
      return undefined;
    }
  }

  private all(): ConsoleUserConfig[] {
    return [...this.configured.values(), ...this.fromFile.values()];
  }

  /** The file's entries this bff can use, and why it leaves the others out. */
  private usable(entries: ConsoleUserConfig[]): {
    users: Map<string, ConsoleUserConfig>;
    problems: string[];
  } {
    const problems: string[] = [];
    const users = new Map<string, ConsoleUserConfig>();
    const unknownApp = new Map(
      consoleUserProblems(entries, this.opts.appIds)
        .filter((p) => p.path[1] === 'apps')
        .map((p) => [p.path[0] as number, p.message]),
    );
    entries.forEach((u, i) => {
      if (this.configured.has(u.username)) {
        problems.push(
          `${this.file}: console user "${u.username}" is also in the options; the options' entry applies`,
        );
      } else if (unknownApp.has(i)) {
        problems.push(`${this.file}: console user "${u.username}": ${unknownApp.get(i)}`);
      } else users.set(u.username, u);
    });
    return { users, problems };
  }

  private unreadable(message: string, stamp: string): void {
    const t = this.now();
    this.unreadableSince ??= t;
    if (t - this.unreadableSince < UNREADABLE_GRACE_MS) {
      // Perhaps caught half written: look again before refusing anyone.
      clearTimeout(this.retry);
      this.retry = setTimeout(() => this.refresh(), UNREADABLE_GRACE_MS);
      this.retry.unref();
      return;
    }
    if (this.stamp === stamp && this.fromFile.size === 0) return;
    this.stamp = stamp;
    this.opts.onProblem(`${message}; its console users are refused until it is fixed`);
    this.replace(new Map());
  }

  private replace(next: Map<string, ConsoleUserConfig>): void {
    const before = this.fromFile;
    this.fromFile = next;
    const change: UsersChange = { added: [], removed: [], changed: [] };
    for (const [name, u] of next) {
      const old = before.get(name);
      if (!old) change.added.push(name);
      else if (entryText(old) !== entryText(u)) change.changed.push(name);
    }
    for (const name of before.keys()) if (!next.has(name)) change.removed.push(name);
    this.credentials.clear();
    for (const u of this.all()) this.credentials.set(u.username, credentialOf(u));
    if (change.added.length || change.removed.length || change.changed.length) this.opts.onChange(change);
  }
}
