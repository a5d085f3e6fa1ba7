import path from 'node:path';
import { parseArgs } from 'node:util';
import { Secret, TOTP } from 'otpauth';
import {
  readUsersFile,
  type UsersFile,
  UsersFileError,
  usersFileOf,
  writeUsersFile,
} from '../console-users.ts';
import { type ConsoleUserConfig, consoleUserSchema } from '../options.ts';
import { hashPassword } from '../passwords.ts';

const USAGE = `usage: npm run console:user -- <command> [options]
  add <name> [--read-only] [--mfa] [--apps id1,id2]   a new console user
  passwd <name>                                      a new password
  mfa <name> [--off]                                 a new TOTP secret (or none)
  remove <name>                                      removes the user
  list                                               the users, their role and MFA
Options: --data-dir <dir> (default BDS_DATA_DIR, else ./data: the data dir of npm start).
add prints the entry it wrote (JSON); with --print it only prints it (for a config file's
"consoleUsers") and writes nothing.
Users are kept in <dataDir>/console-users.json (mode 0600). A running console applies every
change at once: a removed user, or one whose password, MFA, role or apps changed, loses every
console session. Passwords come from BDS_CONSOLE_PASSWORD, or are asked for on a terminal.`;

/** A refusal of the command line: the message, then the usage; exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** Where the command writes what it did (stdout) and what the user must keep (the TOTP secret). */
export interface Io {
  out(line: string): void;
  err(line: string): void;
  /** The password: BDS_CONSOLE_PASSWORD, else asked twice on the terminal. */
  password(): Promise<string>;
}

/** Reads a line from the terminal without echoing it. */
async function promptHidden(question: string): Promise<string> {
  const stdin = process.stdin;
  process.stderr.write(question);
  stdin.setRawMode(true);
  stdin.resume();
  stdin.setEncoding('utf8');
  return new Promise((resolve) => {
    let value = '';
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n') {
          stdin.setRawMode(false);
          stdin.pause();
          stdin.off('data', onData);
          process.stderr.write('\n');
          resolve(value);
          return;
        }
        if (ch === '\u0003') process.exit(130);
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
        else value += ch;
      }
    };
    stdin.on('data', onData);
  });
}

const processIo: Io = {
  out: (line) => console.log(line),
  err: (line) => console.error(line),
  async password() {
    const fromEnv = process.env.BDS_CONSOLE_PASSWORD;
    if (fromEnv) return fromEnv;
    if (!process.stdin.isTTY)
      throw new UsageError('set BDS_CONSOLE_PASSWORD (no terminal to ask for the password)');
    const first = await promptHidden('Password: ');
    const second = await promptHidden('Repeat password: ');
    if (first !== second) throw new UsageError('the passwords differ');
    return first;
  },
};

/**
 * The data dir: --data-dir, else BDS_DATA_DIR, else ./data. A relative one is taken from where
 * npm was started (INIT_CWD), as `npm start` takes it, not from the bff workspace npm runs in.
 */
export function dataDirOf(flag: string | undefined, env: NodeJS.ProcessEnv): string {
  const dir = flag ?? env.BDS_DATA_DIR ?? './data';
  return path.resolve(env.INIT_CWD ?? process.cwd(), dir);
}

async function newPasswordHash(io: Io): Promise<string> {
  const password = await io.password();
  if (password.length < 12) throw new UsageError('the password must be at least 12 characters');
  return hashPassword(password);
}

/** A checked entry (the same schema as the bff's), or the first problem as a UsageError. */
function checked(entry: ConsoleUserConfig): ConsoleUserConfig {
  const result = consoleUserSchema.safeParse(entry);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    throw new UsageError(`${issue.path.join('.')}: ${issue.message}`);
  }
  return result.data;
}

function printTotp(io: Io, username: string, secret: string): void {
  const uri = new TOTP({
    issuer: 'BDS Console',
    label: username,
    secret: Secret.fromBase32(secret),
  }).toString();
  io.err(`TOTP secret: ${secret}`);
  io.err(`Add it to an authenticator app with this URI:\n${uri}`);
}

export async function main(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
  io: Io = processIo,
): Promise<void> {
  let parsed: ReturnType<typeof parse>;
  function parse() {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        'read-only': { type: 'boolean', default: false },
        mfa: { type: 'boolean', default: false },
        apps: { type: 'string' },
        off: { type: 'boolean', default: false },
        print: { type: 'boolean', default: false },
        'data-dir': { type: 'string' },
      },
    });
  }
  try {
    parsed = parse();
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { values } = parsed;
  const [command, username, ...rest] = parsed.positionals;
  const commands = ['add', 'passwd', 'mfa', 'remove', 'list'];
  if (!command || !commands.includes(command))
    throw new UsageError(`expected one of: ${commands.join(', ')}`);
  if (command === 'list' ? username !== undefined : !username || rest.length) {
    throw new UsageError(command === 'list' ? 'expected: list' : `expected: ${command} <name>`);
  }
  const name = username ?? '';
  const usedFlag = (flag: 'read-only' | 'mfa' | 'apps' | 'off' | 'print', allowed: string[]) => {
    if (values[flag] && !allowed.includes(command))
      throw new UsageError(`--${flag} does not apply to ${command}`);
  };
  usedFlag('read-only', ['add']);
  usedFlag('mfa', ['add']);
  usedFlag('apps', ['add']);
  usedFlag('print', ['add']);
  usedFlag('off', ['mfa']);

  if (command === 'add' && values.print) {
    const mfaSecret = values.mfa ? new Secret({ size: 20 }).base32 : undefined;
    const entry = checked({
      username: name,
      passwordHash: await newPasswordHash(io),
      role: values['read-only'] ? 'read-only' : 'admin',
      ...(values.apps ? { apps: values.apps.split(',').filter(Boolean) } : {}),
      ...(mfaSecret ? { mfaSecret } : {}),
    });
    io.out(JSON.stringify(entry, null, 2));
    if (mfaSecret) printTotp(io, name, mfaSecret);
    return;
  }

  const file = usersFileOf(dataDirOf(values['data-dir'], env));
  let stored: UsersFile;
  try {
    stored = readUsersFile(file) ?? { consoleUsers: [] };
  } catch (err) {
    if (err instanceof UsersFileError) throw new UsageError(err.message);
    throw err;
  }
  const users = stored.consoleUsers;
  const index = users.findIndex((u) => u.username === name);

  if (command === 'list') {
    if (users.length === 0) io.out(`No console users in ${file}.`);
    for (const u of users) {
      const apps = u.apps ? ` apps ${u.apps.join(',')}` : '';
      io.out(`${u.username}\t${u.role}${u.mfaSecret ? '\tMFA' : ''}${apps}`);
    }
    return;
  }
  if (command === 'add' && index >= 0) {
    throw new UsageError(`console user "${name}" exists in ${file}; use passwd or mfa to change it`);
  }
  if (command !== 'add' && index < 0) throw new UsageError(`no console user "${name}" in ${file}`);

  let next: ConsoleUserConfig[];
  let done: string;
  let newSecret: string | undefined;
  if (command === 'add') {
    newSecret = values.mfa ? new Secret({ size: 20 }).base32 : undefined;
    const entry = checked({
      username: name,
      passwordHash: await newPasswordHash(io),
      role: values['read-only'] ? 'read-only' : 'admin',
      ...(values.apps ? { apps: values.apps.split(',').filter(Boolean) } : {}),
      ...(newSecret ? { mfaSecret: newSecret } : {}),
    });
    next = [...users, entry];
    io.out(JSON.stringify(entry, null, 2));
    done = `added console user "${name}" (${entry.role}${newSecret ? ', MFA' : ''}); a running console accepts them at once`;
  } else if (command === 'remove') {
    next = users.filter((_, i) => i !== index);
    done = `removed console user "${name}"; their console sessions end at once`;
  } else if (command === 'passwd') {
    const passwordHash = await newPasswordHash(io);
    next = users.map((u, i) => (i === index ? checked({ ...u, passwordHash }) : u));
    done = `changed the password of console user "${name}"; their console sessions end at once`;
  } else {
    newSecret = values.off ? undefined : new Secret({ size: 20 }).base32;
    next = users.map((u, i) => {
      if (i !== index) return u;
      const { mfaSecret: _old, ...rest } = u;
      return checked(newSecret ? { ...rest, mfaSecret: newSecret } : rest);
    });
    done = `${newSecret ? 'set a new MFA secret for' : 'turned MFA off for'} console user "${name}"; their console sessions end at once`;
  }
  // The demo login npm start prints no longer holds once its user changes.
  const demoLogin = stored.demoLogin && stored.demoLogin.username !== name ? stored.demoLogin : undefined;
  writeUsersFile(file, { consoleUsers: next, ...(demoLogin ? { demoLogin } : {}) });
  io.err(`[bds] ${done} (${file}).`);
  if (newSecret) printTotp(io, name, newSecret);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main(process.argv.slice(2)).catch((err) => {
    if (err instanceof UsageError) {
      console.error(`[bds] ${err.message}`);
      console.error(USAGE);
      process.exit(2);
    }
    console.error('[bds]', err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
