import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, login, openSession, type Session } from './helpers/browser.ts';
import { type Product, startProduct } from './helpers/product.ts';

/**
 * The console's Performance page in Chromium: a class large enough and queried often enough gets
 * its automatic index from the service (small autoIndex bounds, a round every 100 ms); a shape
 * seen fewer times is a suggestion an admin builds with one click, sees listed, and drops through
 * the confirm dialog; the Audit page lists both. A read-only user sees the report without those
 * controls.
 */

let product: Product;
let browser: Browser;
const sessions: Session[] = [];

const SIGHTINGS = 5;
const WINDOW_MS = 600_000;
const AUTO_SHAPE = 'Game|eq:|range:score|sort:';
const AUTO_INDEX = 'Game:auto:score';
const SUGGESTED_SHAPE = 'Game|eq:player|range:|sort:';
const SUGGESTED_INDEX = 'Game:auto:player';

beforeAll(async () => {
  product = await startProduct({
    service: {
      autoIndex: { minRows: 100, minSightings: SIGHTINGS, windowMs: WINDOW_MS, checkIntervalMs: 100 },
    },
  });
  browser = await launchBrowser();
}, 120_000);

afterAll(async () => {
  for (const s of sessions) await s.close();
  await browser?.close();
  await product?.close();
});

async function session(username: string): Promise<Session> {
  const s = await openSession(browser, product);
  sessions.push(s);
  await login(s.page, username);
  return s;
}

async function openPerformancePage(page: Page): Promise<void> {
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Performance' }).click();
  await page.waitForURL(`**/apps/${product.appId}/performance`);
  await page.getByRole('heading', { name: 'Performance', level: 1 }).waitFor();
}

/** A find on Game as the service sees it from an app (master key). */
async function find(where: Record<string, unknown>, times: number): Promise<void> {
  for (let i = 0; i < times; i++) {
    const res = await product.rest('GET', `/classes/Game?where=${encodeURIComponent(JSON.stringify(where))}`);
    expect(res.status).toBe(200);
  }
}

const autoIndexNames = async () =>
  ((await product.rest('GET', '/performance/queries')).json.indexes as { name: string }[]).map((i) => i.name);

const shapeRow = (page: Page, shape: string) =>
  page.locator(`[data-testid="shape-row"][data-shape="${shape}"]`);
const indexRow = (page: Page, name: string) =>
  page.locator(`[data-testid="index-row"][data-index="${name}"]`);

describe('the Performance page', () => {
  it('shows the slow shapes and the automatic index; an admin builds the suggested index, drops it, and the audit log has both', async () => {
    const admin = await session('admin');
    const { page } = admin;
    await openPerformancePage(page);
    expect(await page.getByTestId('performance-empty').textContent()).toBe(
      "No finds recorded yet. Finds by a field (not by objectId) on the app's classes show here.",
    );

    // 200 rows (minRows 100); the player shape seen twice, the score shape five times.
    for (let from = 0; from < 200; from += 50) {
      const requests = Array.from({ length: 50 }, (_, i) => ({
        method: 'POST',
        path: '/classes/Game',
        body: { score: from + i, player: `p${(from + i) % 7}` },
      }));
      expect((await product.rest('POST', '/batch', { requests })).status).toBe(200);
    }
    await find({ player: 'p1' }, 2);
    await find({ score: { $gte: 150 } }, SIGHTINGS);
    await expect.poll(autoIndexNames).toEqual([AUTO_INDEX]);
    await find({ score: { $gte: 190 } }, 1);

    await page.getByRole('button', { name: 'Refresh' }).click();
    const auto = shapeRow(page, AUTO_SHAPE);
    await auto.waitFor();
    expect(await page.getByRole('heading', { name: 'Game', level: 2 }).count()).toBe(1);
    expect(await auto.getByTestId('shape-count').textContent()).toBe(String(SIGHTINGS + 1));
    expect(await auto.getByTestId('shape-index').textContent()).toBe(AUTO_INDEX);
    expect(await auto.getByRole('button', { name: 'Build index' }).count()).toBe(0);
    // When the service built it, and its effect: the mean before (five finds) and since (one).
    const built = indexRow(page, AUTO_INDEX);
    expect(await built.getByTestId('index-origin').textContent()).toBe('By the service');
    expect(await built.locator('time').first().getAttribute('datetime')).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(await built.getByTestId('index-effect').textContent()).toMatch(
      /^Before: [\d.]+ m?s mean of 5 findsSince: [\d.]+ m?s mean of 1 find$/,
    );

    // The suggestion: the player shape scans, and says why the service has not built its index.
    const suggested = shapeRow(page, SUGGESTED_SHAPE);
    expect(await suggested.getByTestId('shape-count').textContent()).toBe('2');
    expect(await suggested.getByTestId('shape-index').textContent()).toBe(
      `Scans every rowNot built automatically yet: seen 2 of ${SIGHTINGS} times within ${WINDOW_MS} ms`,
    );
    await admin.screenshot('performance');

    // One click builds it.
    await suggested.getByRole('button', { name: 'Build index' }).click();
    await page
      .getByTestId('toast-success')
      .filter({ hasText: `Index ${SUGGESTED_INDEX} built.` })
      .waitFor();
    await expect.poll(autoIndexNames).toEqual([AUTO_INDEX, SUGGESTED_INDEX]);
    await expect.poll(() => suggested.getByTestId('shape-index').textContent()).toBe(SUGGESTED_INDEX);
    expect(await suggested.getByRole('button', { name: 'Build index' }).count()).toBe(0);
    const requested = indexRow(page, SUGGESTED_INDEX);
    expect(await requested.getByTestId('index-origin').textContent()).toBe('On request');
    expect(await requested.getByTestId('index-effect').textContent()).toMatch(
      /^Before: [\d.]+ m?s mean of 2 findsSince: no find yet$/,
    );

    // Dropping asks first; Cancel keeps the index.
    const confirm = page.getByRole('dialog', { name: 'Drop this index?' });
    await requested.getByRole('button', { name: 'Drop' }).click();
    expect(await confirm.textContent()).toContain(`${SUGGESTED_INDEX} on Game.`);
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    await confirm.waitFor({ state: 'hidden' });
    expect(await autoIndexNames()).toEqual([AUTO_INDEX, SUGGESTED_INDEX]);
    await requested.getByRole('button', { name: 'Drop' }).click();
    await confirm.getByRole('button', { name: 'Drop index' }).click();
    await page
      .getByTestId('toast-success')
      .filter({ hasText: `Index ${SUGGESTED_INDEX} dropped.` })
      .waitFor();
    expect(await autoIndexNames()).toEqual([AUTO_INDEX]);
    await expect.poll(() => requested.count()).toBe(0);
    await expect.poll(() => suggested.getByTestId('shape-index').textContent()).toMatch(/^Scans every row/);
    expect(await suggested.getByRole('button', { name: 'Build index' }).count()).toBe(1);

    // The Audit page lists both, newest first, by the admin, with the class and index as target.
    await page
      .getByRole('navigation', { name: 'Sections' })
      .getByRole('link', { name: 'Audit', exact: true })
      .click();
    await page.waitForURL(`**/apps/${product.appId}/audit`);
    const rows = page.getByTestId('audit-row');
    await rows.first().waitFor();
    const listed = await Promise.all(
      (await rows.all()).map(async (r) => [
        await r.getByTestId('audit-user').textContent(),
        await r.getByTestId('audit-action').textContent(),
        await r.getByTestId('audit-target').textContent(),
      ]),
    );
    expect(listed).toEqual([
      ['admin', 'index.drop', `Game.${SUGGESTED_INDEX}`],
      ['admin', 'index.build', `Game.${SUGGESTED_INDEX}`],
    ]);
    // No key reached the browser.
    const seen = [await page.content(), ...(await admin.responses()).map((r) => r.body.toString('utf8'))];
    for (const secret of Object.values(product.secrets))
      for (const text of seen) expect(text.includes(secret), 'a key reached the browser').toBe(false);
    expect(admin.problems).toEqual([]);
  });

  it('shows a read-only user the report without build or drop controls', async () => {
    const viewer = await session('viewer');
    const { page } = viewer;
    await openPerformancePage(page);
    await shapeRow(page, SUGGESTED_SHAPE).waitFor();
    expect(await shapeRow(page, AUTO_SHAPE).getByTestId('shape-index').textContent()).toBe(AUTO_INDEX);
    expect(await indexRow(page, AUTO_INDEX).getByTestId('index-origin').textContent()).toBe('By the service');
    expect(await page.getByRole('button', { name: 'Build index' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Drop' }).count()).toBe(0);
    expect(viewer.problems).toEqual([]);
  });
});
