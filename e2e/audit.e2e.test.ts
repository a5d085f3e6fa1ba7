import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, login, openSession, type Session } from './helpers/browser.ts';
import { type Product, startProduct } from './helpers/product.ts';

let product: Product;
let browser: Browser;
const sessions: Session[] = [];

async function session(): Promise<Session> {
  const s = await openSession(browser, product);
  sessions.push(s);
  return s;
}

beforeAll(async () => {
  product = await startProduct();
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  await product?.close();
});

/** A state-changing call to the bff from the logged-in page (session cookie + CSRF header). */
async function bff(s: Session, method: string, path: string, body: unknown): Promise<number> {
  return Number(
    await s.page.evaluate(
      async ([m, p, b]) => {
        const res = await fetch(`/bff${p}`, {
          method: m,
          headers: { 'Content-Type': 'application/json', 'X-Console-CSRF': '1' },
          body: JSON.stringify(b),
        });
        return res.status;
      },
      [method, path, body] as const,
    ),
  );
}

describe('audit page', () => {
  it('lists console changes with user, action and target, filters by action, shows the diff', async () => {
    const s = await session();
    const { page, screenshot, problems } = s;
    await login(page);
    const app = `/apps/${product.appId}`;
    expect(await bff(s, 'PUT', `${app}/config`, { params: { auditedFlag: 'on', limit: 5 } })).toBe(200);
    expect(await bff(s, 'POST', `${app}/classes/AuditThing`, { name: 'first', score: 1 })).toBe(201);
    expect(await bff(s, 'POST', `${app}/classes/AuditThing`, { name: 'second', score: 2 })).toBe(201);

    await page
      .getByRole('navigation', { name: 'Sections' })
      .getByRole('link', { name: 'Audit', exact: true })
      .click();
    await page.waitForURL(`**${app}/audit`);
    await page.getByRole('heading', { name: 'Audit' }).waitFor();
    const rows = page.getByTestId('audit-row');
    await rows.first().waitFor();
    expect(await page.getByText('Coming in a later release.').count()).toBe(0);

    const listed = async () =>
      Promise.all(
        (await rows.all()).map(async (r) => ({
          user: await r.getByTestId('audit-user').textContent(),
          action: await r.getByTestId('audit-action').textContent(),
          target: await r.getByTestId('audit-target').textContent(),
        })),
      );
    const all = await listed();
    // Newest first: the two row creates, then the config change.
    expect(all.map((e) => e.action)).toEqual(['row.create', 'row.create', 'config.update']);
    expect(all.every((e) => e.user === 'admin')).toBe(true);
    expect(all[0]?.target).toMatch(/^AuditThing\/\w+$/);
    expect(all[2]?.target).toBe('config');
    // Local time shown, ISO on hover.
    const time = rows.first().locator('time');
    expect(await time.getAttribute('title')).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);

    // Filter by action: kept in the URL, only matching entries.
    await page.getByLabel('Action').fill('config');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL(/[?&]action=config/);
    await expect.poll(async () => (await listed()).map((e) => e.action)).toEqual(['config.update']);

    // The before/after diff of the config change.
    await rows
      .first()
      .getByRole('button', { name: /Show changes/ })
      .click();
    const diff = page.getByTestId('audit-diff');
    await diff.waitFor();
    const text = (await diff.textContent()) ?? '';
    expect(text).toContain('params.auditedFlag');
    expect(text).toContain('"on"');
    await screenshot('audit');

    // Reload keeps the filter; a read-only user sees the same log with no edit controls.
    await page.reload();
    await rows.first().waitFor();
    expect(await page.getByLabel('Action').inputValue()).toBe('config');
    expect(await rows.count()).toBe(1);

    const viewer = await session();
    await login(viewer.page, 'viewer');
    await viewer.page.goto(`${app}/audit?action=row`);
    await viewer.page.getByTestId('audit-row').first().waitFor();
    expect(await viewer.page.getByTestId('audit-row').count()).toBe(2);
    expect(problems).toEqual([]);
    expect(viewer.problems).toEqual([]);
  });

  it('pages older entries with Load more', async () => {
    const s = await session();
    await login(s.page);
    const app = `/apps/${product.appId}`;
    // 50 a page: 55 more creates make 58 entries in all.
    for (let i = 0; i < 55; i++)
      expect(await bff(s, 'POST', `${app}/classes/AuditPaged`, { n: i })).toBe(201);
    await s.page.goto(`${app}/audit?target=AuditPaged`);
    const rows = s.page.getByTestId('audit-row');
    await rows.first().waitFor();
    expect(await rows.count()).toBe(50);
    await s.page.getByRole('button', { name: 'Load more' }).click();
    await expect.poll(() => rows.count()).toBe(55);
    await s.page.getByTestId('audit-count').filter({ hasText: '55 entries' }).waitFor();
  });
});
