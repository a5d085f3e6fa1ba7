import type { LaunchOptions } from 'playwright-core';

/**
 * Browser settings of the end-to-end suite (e2e/). Only `playwright-core` is installed (no
 * @playwright/test runner, no downloaded browsers): the suite runs under vitest
 * (`vitest run -c e2e/vitest.config.ts`, part of `npm test`) and drives Debian's Chromium with
 * these options. `.ci/run` installs the `chromium` package when /usr/bin/chromium is missing.
 *
 * Each test file starts the real product itself (service + bff + built SPA on temporary ports and
 * a temporary data dir, see e2e/helpers/product.ts); screenshots go to e2e/output/.
 */

export const CHROMIUM_PATH = process.env.BDS_CHROMIUM ?? '/usr/bin/chromium';

/** Headless, sandbox off (containers), and every flag that keeps Chromium off the network. */
export const launchOptions: LaunchOptions = {
  executablePath: CHROMIUM_PATH,
  headless: true,
  args: [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
  ],
};

export default {
  testDir: './e2e',
  testMatch: '**/*.e2e.test.ts',
  outputDir: './e2e/output',
  timeout: 60_000,
  workers: 1,
  use: {
    browserName: 'chromium',
    launchOptions,
    viewport: { width: 1280, height: 800 },
    screenshot: 'on',
  },
};
