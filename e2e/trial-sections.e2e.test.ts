import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, login, openSession, type Session } from './helpers/browser.ts';
import { type Product, startProduct } from './helpers/product.ts';

/**
 * Sections of the console as a new admin tries them (issue "The console, tried as a new admin
 * would"): the analytics chart's axes, push without its option.
 */
let product: Product;
let browser: Browser;
const sessions: Session[] = [];

async function section(name: string): Promise<Page> {
  const s = await openSession(browser, product);
  sessions.push(s);
  await login(s.page);
  await s.page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name, exact: true }).click();
  await s.page.getByRole('heading', { name, exact: true }).waitFor();
  return s.page;
}

beforeAll(async () => {
  // Analytics kept, push not configured (the service's default).
  product = await startProduct({ service: { analytics: { adapter: 'store' } } });
  browser = await launchBrowser();
});

afterAll(async () => {
  for (const s of sessions) await s.close();
  await browser?.close();
  await product?.close();
});

describe('analytics: the axes fit the data', () => {
  it('one hour of events is drawn on that hour (per hour) or that day (per day), counts from 0', async () => {
    for (const at of ['2026-06-01T10:05:00Z', '2026-06-01T10:20:00Z', '2026-06-01T10:40:00Z']) {
      expect((await product.rest('POST', '/events/Signup', { at }, 'rest')).status).toBe(200);
    }
    const page = await section('Analytics');
    const axes = page.getByTestId('events-chart-axes');
    await page.getByTestId('events-chart').locator('canvas').waitFor();
    await expect
      .poll(() => axes.textContent())
      .toBe('Time axis (UTC): 2026-06-01 00:00 to 2026-06-02 00:00, per day. Count axis: 0 to 4.');
    await page.getByLabel('Interval').selectOption('hour');
    await expect
      .poll(() => axes.textContent())
      .toBe('Time axis (UTC): 2026-06-01 10:00 to 2026-06-01 11:00, per hour. Count axis: 0 to 4.');
    await sessions.at(-1)!.screenshot('analytics-one-hour');
  });
});

describe('push: "not configured" when the section opens', () => {
  it('says so with how to configure it, and offers no compose form', async () => {
    const page = await section('Push');
    const off = page.getByTestId('push-off');
    await off.waitFor();
    expect(await off.locator('p').first().textContent()).toBe(
      'Push is not configured: the service sends no notifications.',
    );
    expect(await off.locator('p').nth(1).textContent()).toBe(
      'Start the service with the option push holding APNs and/or FCM credentials (README, "Files, push, analytics, aggregation and idempotency"), then reload this page:',
    );
    expect(await off.locator('pre').textContent()).toContain('"fcm": { "projectId": "…"');
    expect(await page.getByRole('region', { name: 'Compose a push' }).count()).toBe(0);
    // The rest of the section still works.
    await page.getByRole('region', { name: 'Pushes' }).waitFor();
  });
});
