import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, login, openSession, type Session } from './helpers/browser.ts';
import { type Product, startProduct } from './helpers/product.ts';

/**
 * The console's schema editor with the schema options the stock SDKs use (issue 29): a column's
 * `required` and `defaultValue`, set in Chromium against the real service and bff.
 */

let product: Product;
let browser: Browser;
let admin: Session;
/** Waits on the product: generous, for a loaded 2-core machine. */
const POLL = { timeout: 15_000 };

async function rest(method: string, p: string, body?: unknown): Promise<any> {
  const res = await product.rest(method, p, body);
  if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(res.json)}`);
  return res.json;
}

const firstRow = (page: Page) => page.locator('[data-testid="grid"] [data-index="1"][data-row-id]');

beforeAll(async () => {
  product = await startProduct();
  browser = await launchBrowser();
  await rest('POST', '/schemas/Ticket', { className: 'Ticket', fields: { title: { type: 'String' } } });
  await rest('POST', '/classes/Ticket', { title: 'first' });
  admin = await openSession(browser, product, { timezoneId: 'UTC' });
  await login(admin.page);
}, 120_000);

afterAll(async () => {
  await admin?.close();
  await browser?.close();
  await product?.close();
});

describe('the schema editor', () => {
  it('adds a required column with a default, shows it, and the service applies it', async () => {
    const { page } = admin;
    await page.goto(`/apps/${product.appId}/data/Ticket`);
    await firstRow(page).waitFor();
    await page.getByRole('button', { name: 'Schema' }).click();
    await page.getByLabel('column name').fill('priority');
    await page.getByLabel('column type').selectOption('Number');
    await page.getByLabel('column required').check();
    await page.getByLabel('column default').fill('3');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    await expect
      .poll(async () => (await rest('GET', '/schemas/Ticket')).fields.priority, POLL)
      .toEqual({ type: 'Number', required: true, defaultValue: 3 });
    // The column list marks it required and names its default.
    const column = page.getByRole('button', { name: 'priority* ✕' });
    await column.waitFor();
    expect(await column.getAttribute('title')).toBe('Number, required, default 3');
    // A row created without it gets the default.
    const created = await rest('POST', '/classes/Ticket', { title: 'second' });
    expect((await rest('GET', `/classes/Ticket/${created.objectId}`)).priority).toBe(3);
  });

  it("shows the service's refusal of a default of another type", async () => {
    const { page } = admin;
    await page.getByLabel('column name').fill('rank');
    await page.getByLabel('column type').selectOption('Number');
    await page.getByLabel('column default').fill('"first"');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    const toast = page.getByTestId('toast-error').last();
    await toast.waitFor();
    expect(await toast.textContent()).toContain(
      'schema mismatch for Ticket.rank default value; expected Number but got String',
    );
    expect((await rest('GET', '/schemas/Ticket')).fields.rank).toBeUndefined();
  });
});
