import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The closing line of scripts/summary-reporter.ts, checked by running vitest on the tiny project in
 * fixtures/summary-reporter: a failure outside a test (an afterAll, an unhandled rejection) must
 * count as failed, as it makes the run fail.
 */
const root = fileURLToPath(new URL('../..', import.meta.url));
const config = fileURLToPath(new URL('./fixtures/summary-reporter/vitest.config.ts', import.meta.url));
const vitestBin = fileURLToPath(new URL('../../node_modules/vitest/vitest.mjs', import.meta.url));

function runFixture(name: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  // A clean environment: nothing of this (outer) vitest run leaks into the inner one.
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('VITEST') && k !== 'NODE_OPTIONS'),
  );
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [vitestBin, 'run', '--config', config, name], {
      cwd: root,
      env: { ...env, NO_COLOR: '1', CI: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The counts of the last `N passed, N failed[, N skipped]` line. */
function summary(stdout: string): { passed: number; failed: number } {
  const lines = [...stdout.matchAll(/^(\d+) passed, (\d+) failed(?:, \d+ skipped)?$/gm)];
  expect(lines.length, stdout).toBe(1);
  return { passed: Number(lines[0]![1]), failed: Number(lines[0]![2]) };
}

describe('summary reporter', () => {
  it('a clean run: all passed, 0 failed, exit code 0', async () => {
    const run = await runFixture('passing.fixture.ts');
    expect(summary(run.stdout), run.stdout + run.stderr).toEqual({ passed: 1, failed: 0 });
    expect(run.code).toBe(0);
  }, 60_000);

  it.each([
    ['an afterAll in a describe', 'suite-cleanup.fixture.ts'],
    ['an afterAll at the top of the module', 'module-cleanup.fixture.ts'],
    ['an unhandled rejection', 'unhandled.fixture.ts'],
  ])(
    '%s that fails is counted as failed, and the exit code is non-zero',
    async (_, fixture) => {
      const run = await runFixture(fixture);
      const counts = summary(run.stdout);
      expect(counts.passed, run.stdout).toBe(1);
      expect(counts.failed, run.stdout + run.stderr).toBeGreaterThanOrEqual(1);
      expect(run.code).not.toBe(0);
      expect(run.code).not.toBeNull();
    },
    60_000,
  );
});
