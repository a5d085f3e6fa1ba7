import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The server's test files that can reach a store of the test database: those whose static or
 * dynamic relative imports lead, at any depth, to the test service (helpers/service.ts, which puts
 * each service it starts in a fresh schema of that database), and those that read the database's
 * URL themselves. The others run the very same test in both runs: the CLI's child processes, the
 * services a test starts itself with createService (on SQLite), the lint of layers, pure functions.
 */
export function storeTests(root = process.cwd()): string[] {
  const doors = new Set([path.resolve(root, 'server/test/helpers/service.ts')]);
  const importsOf = new Map<string, string[]>();
  const imports = (file: string): string[] => {
    let found = importsOf.get(file);
    if (!found) {
      let text = '';
      try {
        text = readFileSync(file, 'utf8');
      } catch {}
      found = [...text.matchAll(/(?:from|import\()\s*'(\.{1,2}\/[^']+\.ts)'/g)].map((m) =>
        path.resolve(path.dirname(file), m[1]!),
      );
      // A file that reads the database's URL itself counts as reaching the store.
      if (text.includes('BDS_TEST_DATABASE_URL')) found.push([...doors][0]!);
      importsOf.set(file, found);
    }
    return found;
  };
  const reaches = (test: string): boolean => {
    const seen = new Set([test]);
    const queue = [test];
    for (let file = queue.pop(); file; file = queue.pop()) {
      if (doors.has(file)) return true;
      for (const next of imports(file)) {
        if (seen.has(next)) continue;
        seen.add(next);
        queue.push(next);
      }
    }
    return false;
  };
  const tests = path.resolve(root, 'server/test');
  return (readdirSync(tests, { recursive: true }) as string[])
    .filter((name) => name.endsWith('.test.ts'))
    .map((name) => path.join(tests, name))
    .filter(reaches)
    .map((file) => path.relative(root, file))
    .sort();
}
