import { constants, existsSync } from 'node:fs';
import { access } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadOptions, OptionError, type ServiceOptions } from './config/options.ts';
import { randomSecret } from './kernel/ids.ts';

/** `npm run server`: the service alone. Options from --config/BDS_CONFIG, then env. */
export async function main(argv = process.argv.slice(2), extra: Record<string, unknown> = {}) {
  let configFile: string | undefined;
  try {
    const { values } = parseArgs({ args: argv, options: { config: { type: 'string' } }, strict: true });
    configFile = values.config;
  } catch (err) {
    console.error(`[bds] ${(err as Error).message}`);
    process.exit(2);
  }
  let loaded: ReturnType<typeof loadOptions>;
  try {
    loaded = loadOptions(process.env, configFile, extra);
  } catch (err) {
    if (err instanceof OptionError) {
      console.error(`[bds] ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
  const { options } = loaded;
  // The service's code loads only once the options are good: a bad option fails in a moment.
  const { serve } = await import('./index.ts');
  const { service, url } = await serve(options);
  console.log(`[bds] service listening at ${url.replace('127.0.0.1', 'localhost')}`);
  console.log(`[bds] data dir: ${options.dataDir}`);
  if (loaded.keysFile) {
    // Development keys, generated once and kept in the data dir; printed so a developer can use them.
    console.log(`[bds] development keys (${loaded.keysFile}):`);
    console.log(`        application id: ${options.appId}`);
    console.log(`        master key:     ${options.masterKey}`);
    if (options.restAPIKey) console.log(`        REST API key:   ${options.restAPIKey}`);
    if (options.javascriptKey) console.log(`        JavaScript key: ${options.javascriptKey}`);
  }
  const shutdown = async (signal: string) => {
    console.log(`[bds] ${signal}: draining in-flight requests`);
    await service.close();
    console.log('[bds] store closed');
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
  return service;
}

const TRANSFER_USAGE =
  'usage: npm run server -- export --out FILE [--sessions] | import --in FILE | import --from-parse URL ' +
  '--parse-app-id ID --parse-master-key KEY [--parse-postgres URL | --parse-users FILE] [--parse-sessions] [--state FILE] ' +
  '[--config FILE] [--data-dir DIR] [--database-url URL]';

/**
 * `npm run server -- export --out FILE` and `import --in FILE` (docs/transfer.md): the app of the
 * store the options name (`--data-dir`/BDS_DATA_DIR, `--database-url`/BDS_DATABASE_URL, or
 * `--config`), moved through an NDJSON file. Answers the exit code: 0 done, 1 failed, 2 bad options,
 * 3 a bad export file, 4 an import target that is not empty.
 */
export async function runTransfer(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const command = argv[0];
  let values: {
    out?: string;
    in?: string;
    sessions?: boolean;
    config?: string;
    'data-dir'?: string;
    'database-url'?: string;
    'from-parse'?: string;
    'parse-app-id'?: string;
    'parse-master-key'?: string;
    'parse-postgres'?: string;
    'parse-users'?: string;
    'parse-sessions'?: boolean;
    state?: string;
  };
  try {
    if (command !== 'export' && command !== 'import') throw new Error(TRANSFER_USAGE);
    ({ values } = parseArgs({
      args: argv.slice(1),
      options: {
        out: { type: 'string' },
        in: { type: 'string' },
        sessions: { type: 'boolean' },
        config: { type: 'string' },
        'data-dir': { type: 'string' },
        'database-url': { type: 'string' },
        'from-parse': { type: 'string' },
        'parse-app-id': { type: 'string' },
        'parse-master-key': { type: 'string' },
        'parse-postgres': { type: 'string' },
        'parse-users': { type: 'string' },
        'parse-sessions': { type: 'boolean' },
        state: { type: 'string' },
      },
      strict: true,
    }));
    const fromParse = values['from-parse'] !== undefined;
    const parseFlags = [
      'parse-app-id',
      'parse-master-key',
      'parse-postgres',
      'parse-users',
      'parse-sessions',
      'state',
    ] as const;
    if (!fromParse && parseFlags.some((flag) => values[flag] !== undefined)) {
      throw new Error(
        `--${parseFlags.find((flag) => values[flag] !== undefined)} goes with import --from-parse.`,
      );
    }
    if (fromParse) {
      if (command !== 'import' || values.in || values.out || values.sessions) {
        throw new Error('--from-parse is an import, without --in, --out or --sessions.');
      }
      if (!values['parse-app-id'] || !values['parse-master-key'])
        throw new Error('import --from-parse needs --parse-app-id and --parse-master-key.');
      if (values['parse-postgres'] && values['parse-users'])
        throw new Error('give --parse-postgres or --parse-users, not both.');
      if (!/^https?:\/\//.test(values['from-parse']!))
        throw new Error('--from-parse needs the http(s) URL of parse-server.');
    }
    if (command === 'export' && (!values.out || values.in))
      throw new Error(`export needs --out FILE. ${TRANSFER_USAGE}`);
    if (command === 'import' && !fromParse && (!values.in || values.out || values.sessions)) {
      throw new Error(`import needs --in FILE (and takes no --out or --sessions). ${TRANSFER_USAGE}`);
    }
  } catch (err) {
    const message = (err as Error).message;
    console.error(
      `[bds] ${message.includes('usage:') ? message : `${message.replace(/\.?$/, '.')} ${TRANSFER_USAGE}`}`,
    );
    return 2;
  }
  const readable = values['from-parse']
    ? values['parse-users']
    : command === 'import'
      ? values.in
      : undefined;
  if (readable) {
    // Before the store is opened (which would create an empty one).
    try {
      await access(readable, constants.R_OK);
    } catch (err) {
      console.error(`[bds] import failed: cannot read ${readable}: ${(err as Error).message}`);
      return 3;
    }
  }
  let options: ServiceOptions;
  try {
    // Flags win over the env; the keys are not used (nothing is served), so none are generated.
    const storeEnv = { ...env };
    if (values['data-dir']) storeEnv.BDS_DATA_DIR = values['data-dir'];
    if (values['database-url']) storeEnv.BDS_DATABASE_URL = values['database-url'];
    options = loadOptions(storeEnv, values.config, { appId: 'transfer', masterKey: randomSecret() }).options;
  } catch (err) {
    console.error(`[bds] ${(err as Error).message}`);
    return 2;
  }
  // An export of a data dir holding no store would make an empty one and export nothing.
  const sqliteFile = options.databaseURI
    ? options.databaseURI.startsWith('sqlite:') && options.databaseURI.slice('sqlite:'.length)
    : path.join(options.dataDir, 'data.sqlite');
  if (command === 'export' && sqliteFile && sqliteFile !== ':memory:' && !existsSync(sqliteFile)) {
    console.error(`[bds] export failed: there is no store at ${sqliteFile}.`);
    return 2;
  }
  const { openTransfer, transferFiles } = await import('./transfer/open.ts');
  const { SERVER_VERSION } = await import('./http/routes/misc.ts');
  const { TransferError } = await import('./transfer/format.ts');
  const { FROM_PARSE_STATE_FILE } = await import('./transfer/from-parse.ts');
  let app: Awaited<ReturnType<typeof openTransfer>>;
  try {
    app = await openTransfer(options, (data) => transferFiles(options, data));
  } catch (err) {
    console.error(
      `[bds] ${command} failed: cannot open the store: ${err instanceof Error ? err.message : err}`,
    );
    return 1;
  }
  try {
    if (command === 'export') {
      const s = await app.exportTo(values.out!, {
        service: SERVER_VERSION,
        sessions: values.sessions ?? false,
      });
      console.log(
        `[bds] exported ${s.classes} classes, ${s.rows} rows, ${s.relations} relation members and ${s.files} files (${s.lines} lines) to ${values.out}`,
      );
    } else if (values['from-parse']) {
      const s = await app.importFromParse({
        serverURL: values['from-parse'],
        appId: values['parse-app-id']!,
        masterKey: values['parse-master-key']!,
        postgresURL: values['parse-postgres'],
        usersFile: values['parse-users'],
        sessions: values['parse-sessions'] ?? false,
        stateFile: values.state ?? path.join(options.dataDir, FROM_PARSE_STATE_FILE),
        progress: ({ className, rows, done }) => {
          if (done) console.log(`[bds] ${className}: ${rows} rows`);
          else if (process.stdout.isTTY) process.stdout.write(`[bds] ${className}: ${rows} rows…\r`);
        },
      });
      const kind = s.since ? `changes since ${s.since}` : 'a full import';
      console.log(
        `[bds] imported from parse-server (${kind}${s.resumed ? ', resumed' : ''}): ${s.classes} classes, ${s.rows} rows, ${s.relations} relation members, ${s.files} files and ${s.passwords} password hashes${values['parse-sessions'] ? `, ${s.sessions} sessions` : ''}${s.since ? `; ${s.deleted} rows deleted here, gone there` : ''}`,
      );
      const leftOut = Object.entries(s.authDataNotImported);
      if (leftOut.length > 0) {
        console.log(
          `[bds] authData not imported, users per provider (they link it again): ${leftOut.map(([provider, users]) => `${provider} ${users}`).join(', ')}`,
        );
      }
    } else {
      const s = await app.importFrom(values.in!);
      console.log(
        `[bds] imported ${s.classes} classes, ${s.rows} rows, ${s.relations} relation members and ${s.files} files from ${values.in}`,
      );
    }
    return 0;
  } catch (err) {
    if (err instanceof TransferError) {
      console.error(`[bds] ${command} failed: ${err.message}`);
      return err.exitCode;
    }
    console.error(`[bds] ${command} failed:`, err instanceof Error ? err.message : err);
    return 1;
  } finally {
    await app.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const command = process.argv[2];
  if (command === 'export' || command === 'import') {
    runTransfer(process.argv.slice(2)).then(
      (code) => {
        process.exitCode = code;
      },
      (err) => {
        console.error(`[bds] ${command} failed:`, err instanceof Error ? err.message : err);
        process.exitCode = 1;
      },
    );
  } else {
    main().catch((err) => {
      console.error('[bds] failed to start:', err instanceof Error ? err.message : err);
      process.exit(1);
    });
  }
}
