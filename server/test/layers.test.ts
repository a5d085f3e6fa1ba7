import { execFile } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const run = promisify(execFile);

/**
 * `npm run lint`'s layer check (which `npm test` runs on the whole tree first) on one file and the
 * modules it imports directly: enough to see a rule catch an upward import.
 */
async function depcruise(target: string): Promise<{ code: number; output: string }> {
  try {
    const { stdout } = await run(
      process.execPath,
      [
        path.join(ROOT, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs'),
        target,
        '--config',
        '.dependency-cruiser.cjs',
        '--max-depth',
        '1',
      ],
      { cwd: ROOT },
    );
    return { code: 0, output: stdout };
  } catch (err) {
    const e = err as { code: number; stdout: string };
    return { code: e.code, output: e.stdout };
  }
}

describe('layers import downward only', () => {
  it('an upward import fails, naming the file and the rule', async () => {
    const probe = path.join(ROOT, 'server/src/access/zz-upward-probe.ts');
    writeFileSync(probe, "import type { Core } from '../data/core.ts';\nexport type Probe = Core;\n");
    try {
      const { code, output } = await depcruise('server/src/access/zz-upward-probe.ts');
      expect(code).not.toBe(0);
      expect(output).toContain('layer-access');
      expect(output).toContain('server/src/access/zz-upward-probe.ts');
      expect(output).toContain('server/src/data/core.ts');
      expect(output).toContain('1 dependency violations');
    } finally {
      rmSync(probe, { force: true });
    }
  });
});
