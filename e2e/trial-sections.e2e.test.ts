import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLOUD_MODULE } from '../server/test/helpers/cloud.ts';
import { launchBrowser, login, openSession, type Session } from './helpers/browser.ts';
import { type Product, startProduct } from './helpers/product.ts';

/**
 * Sections of the console as a new admin tries them (issue "The console, tried as a new admin
 * would"): the analytics chart's axes, push without its option, one user picker everywhere.
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
  product = await startProduct({ service: { analytics: { adapter: 'store' }, cloud: CLOUD_MODULE } });
  browser = await launchBrowser();
  for (const name of ['pablo', 'pia']) {
    const res = await product.rest(
      'POST',
      '/users',
      { username: name, password: 'pw-secret-1', email: `${name}@example.com` },
      'rest',
    );
    expect(res.status).toBe(201);
  }
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

/** Where each section asks for a user, and what it shows once one is picked. */
const PICKERS: Array<{
  section: string;
  open(page: Page): Promise<void>;
  label: string;
  picked(page: Page): Promise<string | null>;
}> = [
  {
    section: 'Data, View as',
    open: async (page) => {
      await page.goto(`/apps/${product.appId}/data/_User`);
      await page.getByLabel('view as', { exact: true }).selectOption('user');
    },
    label: 'view as: find a user',
    picked: (page) => page.getByTestId('viewas-banner').locator('span').first().textContent(),
  },
  {
    section: 'API console, Run as',
    open: async (page) => {
      await page.goto(`/apps/${product.appId}/api-console`);
      await page.getByLabel('Run as').selectOption('user');
    },
    label: 'Find user',
    picked: (page) => page.getByTestId('picked-user').locator('strong').textContent(),
  },
  {
    section: 'Realtime inspector',
    open: async (page) => {
      await page.goto(`/apps/${product.appId}/realtime`);
      await page.getByLabel('Class').selectOption('_User');
      await page.getByRole('region', { name: 'Inspector 1' }).getByLabel('Viewpoint').selectOption('user');
    },
    label: 'Username',
    picked: (page) => page.getByTestId('inspector-user').locator('strong').textContent(),
  },
  {
    section: 'Cloud, run a function as',
    open: async (page) => {
      await page.goto(`/apps/${product.appId}/cloud`);
      await page.getByLabel('Run as', { exact: true }).selectOption('user');
    },
    label: 'Username',
    picked: (page) => page.getByTestId('run-as-user').locator('strong').textContent(),
  },
];

describe('one user picker in every section', () => {
  for (const where of PICKERS) {
    it(`${where.section}: the same search, keyboard and empty state`, async () => {
      const s = await openSession(browser, product);
      sessions.push(s);
      const { page } = s;
      await login(page);
      await where.open(page);
      const box = page.getByLabel(where.label, { exact: true });
      const matches = page.getByRole('list', { name: `${where.label}: matches` });
      // The start of a username or an email, by username.
      await box.fill('p');
      await expect
        .poll(() => matches.getByRole('button').allTextContents())
        .toEqual(['pablo pablo@example.com', 'pia pia@example.com']);
      await box.fill('zz');
      await expect.poll(() => matches.textContent()).toBe('No user matches “zz”.');
      // Escape clears the search.
      await box.fill('pa');
      await matches.getByRole('button').first().waitFor();
      await box.press('Escape');
      expect(await box.inputValue()).toBe('');
      expect(await matches.count()).toBe(0);
      // ↓ goes to the matches, ↓ again to the next, Enter picks.
      await box.fill('p');
      await matches.getByRole('button').nth(1).waitFor();
      await box.press('ArrowDown');
      await page.keyboard.press('ArrowDown');
      await page.keyboard.press('Enter');
      await expect.poll(() => where.picked(page)).toContain('pia');
    });
  }
});
