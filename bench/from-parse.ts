/**
 * `node --import tsx bench/from-parse.ts [rows]`: the speed and memory of `import --from-parse`
 * (docs/transfer.md). Starts the incumbent (parse-server, on a fresh database of the local
 * PostgreSQL, as the import tests start it), makes a class of `rows` rows (default 100,000) in its
 * tables with one SQL statement (seeding through its REST API would take longer than the import),
 * then runs the CLI import in a child process into a fresh PostgreSQL database, under
 * `/usr/bin/time` for its peak resident memory. Prints rows per second and the peak RSS.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { INCUMBENT_KEYS, startIncumbent } from '../server/test/from-parse/incumbent.ts';
import { freshPostgresDatabase } from './common.ts';

const rows = Number(process.argv[2] ?? 100_000);

async function main(): Promise<void> {
  const incumbent = await startIncumbent();
  const target = await freshPostgresDatabase(`bds_from_parse_target_${process.pid}`);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'bds-from-parse-bench-'));
  try {
    const res = await fetch(`${incumbent.url}/schemas/Item`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        'X-Parse-Application-Id': INCUMBENT_KEYS.appId,
        'X-Parse-Master-Key': INCUMBENT_KEYS.masterKey,
      },
      body: JSON.stringify({
        className: 'Item',
        fields: { n: { type: 'Number' }, name: { type: 'String' }, tags: { type: 'Array' } },
      }),
    });
    if (res.status !== 200) throw new Error(`schema: ${res.status} ${await res.text()}`);
    const client = new pg.Client({ connectionString: incumbent.databaseURI });
    await client.connect();
    await client.query(
      `INSERT INTO "Item" ("objectId", "createdAt", "updatedAt", "_rperm", "_wperm", n, name, tags)
       SELECT lpad(to_hex(i), 10, '0'), now(), now(), '{*}', '{*}', i, 'item ' || i, jsonb_build_array('a', i % 7)
       FROM generate_series(1, $1) AS i`,
      [rows],
    );
    await client.end();
    const started = performance.now();
    const { stdout, stderr } = await promisify(execFile)(
      '/usr/bin/time',
      [
        '-f',
        'maxrss_kb=%M',
        process.execPath,
        '--import',
        'tsx',
        'server/src/cli.ts',
        'import',
        '--from-parse',
        incumbent.url,
        '--parse-app-id',
        INCUMBENT_KEYS.appId,
        '--parse-master-key',
        INCUMBENT_KEYS.masterKey,
        '--parse-postgres',
        incumbent.databaseURI,
        '--database-url',
        target.uri,
        '--data-dir',
        dataDir,
      ],
      { maxBuffer: 1 << 24 },
    );
    const seconds = (performance.now() - started) / 1000;
    const rss = Number(/maxrss_kb=(\d+)/.exec(stderr)?.[1]) / 1024;
    console.log(stdout.trim());
    console.log(
      `from-parse: ${rows} rows in ${seconds.toFixed(1)} s (the whole command, start-up included): ${Math.round(rows / seconds)} rows/s; peak RSS ${rss.toFixed(0)} MiB`,
    );
  } finally {
    await incumbent.stop();
    await target.drop().catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
