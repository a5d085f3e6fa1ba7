import { parseArgs } from 'node:util';
import { Secret, TOTP } from 'otpauth';
import { consoleUserSchema } from '../options.ts';
import { hashPassword } from '../passwords.ts';

const USAGE = `usage: npm run console:user -- add <name> [--read-only] [--mfa] [--apps id1,id2]
Prints the console user entry (JSON) for the bff config's "consoleUsers".
The password comes from BDS_CONSOLE_PASSWORD, or is asked for on a terminal.
Replacing a user's entry (new password or MFA secret) or removing it ends every console
session of that user when the bff next starts.`;

function fail(message: string): never {
  console.error(`[bds] ${message}`);
  console.error(USAGE);
  process.exit(2);
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

async function readPassword(): Promise<string> {
  const fromEnv = process.env.BDS_CONSOLE_PASSWORD;
  if (fromEnv) return fromEnv;
  if (!process.stdin.isTTY) fail('set BDS_CONSOLE_PASSWORD (no terminal to ask for the password)');
  const first = await promptHidden('Password: ');
  const second = await promptHidden('Repeat password: ');
  if (first !== second) fail('the passwords differ');
  return first;
}

export async function main(argv: string[]): Promise<void> {
  let parsed: ReturnType<typeof parse>;
  function parse() {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        'read-only': { type: 'boolean', default: false },
        mfa: { type: 'boolean', default: false },
        apps: { type: 'string' },
      },
    });
  }
  try {
    parsed = parse();
  } catch (err) {
    fail((err as Error).message);
  }
  const [command, username, ...rest] = parsed.positionals;
  if (command !== 'add' || !username || rest.length) fail('expected: add <name>');
  const password = await readPassword();
  if (password.length < 12) fail('the password must be at least 12 characters');
  const mfaSecret = parsed.values.mfa ? new Secret({ size: 20 }).base32 : undefined;
  const entry = {
    username,
    passwordHash: await hashPassword(password),
    role: parsed.values['read-only'] ? 'read-only' : 'admin',
    ...(parsed.values.apps ? { apps: parsed.values.apps.split(',').filter(Boolean) } : {}),
    ...(mfaSecret ? { mfaSecret } : {}),
  };
  const checked = consoleUserSchema.safeParse(entry);
  if (!checked.success) {
    const issue = checked.error.issues[0]!;
    fail(`${issue.path.join('.')}: ${issue.message}`);
  }
  console.log(JSON.stringify(entry, null, 2));
  if (mfaSecret) {
    const uri = new TOTP({
      issuer: 'BDS Console',
      label: username,
      secret: Secret.fromBase32(mfaSecret),
    }).toString();
    console.error(`TOTP secret: ${mfaSecret}`);
    console.error(`Add it to an authenticator app with this URI:\n${uri}`);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main(process.argv.slice(2)).catch((err) => {
    console.error('[bds]', err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
