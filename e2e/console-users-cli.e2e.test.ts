import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, login, openSession, type Session } from './helpers/browser.ts';
import { type Product, ROOT, startProduct } from './helpers/product.ts';

/**
 * `npm run console:user` while the console runs: the user it adds logs in at once, and the
 * sessions of a user it changes or removes end at once (issue "The console, tried as a new admin
 * would", item 12).
 */
const run = promisify(execFile);
let product: Product;
let browser: Browser;
const sessions: Session[] = [];

/** The command as an admin runs it, on the running console's data dir. */
async function consoleUser(args: string[], password = 'newbie password 12345') {
  const res = await run(
    process.execPath,
    ['--import', 'tsx', 'bff/src/cli/console-user.ts', ...args, '--data-dir', product.consoleDataDir],
    { cwd: ROOT, env: { ...process.env, BDS_CONSOLE_PASSWORD: password } },
  );
  return res.stderr;
}

beforeAll(async () => {
  product = await startProduct();
  browser = await launchBrowser();
});

afterAll(async () => {
  for (const s of sessions) await s.close();
  await browser?.close();
  await product?.close();
});

describe('console users changed by the command while the console runs', () => {
  it('a user added by the command logs in at once; a password change and a removal end their session', async () => {
    const s = await openSession(browser, product);
    sessions.push(s);
    const { page } = s;
    expect(await consoleUser(['add', 'newbie'])).toContain('[bds] added console user "newbie" (admin)');
    await login(page, 'newbie', 'newbie password 12345');
    await expect.poll(() => page.getByTestId('user-menu').textContent()).toContain('newbie');
    await s.screenshot('console-user-added');

    await consoleUser(['passwd', 'newbie'], 'another password 6789');
    await page.reload();
    await page.getByRole('button', { name: 'Log in' }).waitFor();
    await login(page, 'newbie', 'another password 6789');

    expect(await consoleUser(['remove', 'newbie'])).toContain('[bds] removed console user "newbie"');
    await page.reload();
    await page.getByRole('button', { name: 'Log in' }).waitFor();
    await page.getByLabel('Username').fill('newbie');
    await page.getByLabel('Password').fill('another password 6789');
    await page.getByRole('button', { name: 'Log in' }).click();
    await expect
      .poll(() => page.getByTestId('login-error').textContent())
      .toContain('Invalid username or password.');
  });
});
