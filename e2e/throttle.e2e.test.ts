import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { launchBrowser, openSession } from './helpers/browser.ts';
import { PASSWORD, type Product, startProduct } from './helpers/product.ts';

// Its own product: throttling counts per IP too, and every browser here comes from 127.0.0.1.
let product: Product;
let browser: Browser;

beforeAll(async () => {
  product = await startProduct({ bff: { loginThrottle: { freeAttempts: 2, baseDelaySeconds: 30 } } });
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  await product?.close();
});

it('tells the user when login attempts are throttled', async () => {
  const { page, screenshot, close } = await openSession(browser, product);
  await page.goto('/login');
  const error = page.getByTestId('login-error');
  const attempt = async (password: string) => {
    await page.getByLabel('Username').fill('admin');
    await page.getByLabel('Password').fill(password);
    const answered = page.waitForResponse((r) => r.url().endsWith('/bff/login'));
    await page.getByRole('button', { name: 'Log in' }).click();
    return (await answered).status();
  };
  expect(await attempt('wrong 1')).toBe(401);
  expect(await attempt('wrong 2')).toBe(401);
  expect(await attempt('wrong 3')).toBe(401);
  // Locked now: even the right password waits.
  expect(await attempt(PASSWORD)).toBe(429);
  await expect
    .poll(() => error.textContent())
    .toMatch(/Too many login attempts; try again in \d+ seconds?\./);
  expect(await error.textContent()).toContain('code 155');
  await screenshot('login-throttled');
  await close();
});
