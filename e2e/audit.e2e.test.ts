import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, login, openSession, type Session } from './helpers/browser.ts';
import { dataControls as ui } from './helpers/data-controls.ts';
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

const dataUrl = (cls = '') => `/apps/${product.appId}/data${cls ? `/${cls}` : ''}`;

/** Creates a class with the class list's "new class name" input and its Create class button. */
async function createClass(page: Page, cls: string): Promise<void> {
  await page.goto(dataUrl());
  await ui.newClassName(page).fill(cls);
  await ui.createClass(page).click();
  await page
    .getByRole('navigation', { name: 'classes' })
    .getByRole('link', { name: cls, exact: true })
    .click();
  await page.waitForURL(`**${dataUrl(cls)}`);
  await page.getByTestId('grid').waitFor();
}

/** Add row on the open class; the new row's objectId (from the bff's answer). */
async function addRow(page: Page, cls: string): Promise<string> {
  const [res] = await Promise.all([
    page.waitForResponse(
      (r) => r.request().method() === 'POST' && new URL(r.url()).pathname.endsWith(`/classes/${cls}`),
    ),
    ui.addRow(page).click(),
  ]);
  expect(res.status()).toBe(201);
  return ((await res.json()) as { objectId: string }).objectId;
}

/** Selects one row and clicks Delete; answers the confirmation; returns what it asked. */
async function deleteRow(page: Page, id: string, accept: boolean): Promise<string> {
  await ui.selectRow(page, id).check();
  const asked = new Promise<string>((resolve) =>
    page.once('dialog', (dialog) => {
      resolve(dialog.message());
      void (accept ? dialog.accept() : dialog.dismiss());
    }),
  );
  await ui.deleteRows(page).click();
  return asked;
}

const restIds = async (cls: string) =>
  ((await product.rest('GET', `/classes/${cls}?order=createdAt`)).json.results as { objectId: string }[]).map(
    (r) => r.objectId,
  );

describe('audit page', () => {
  it('lists the changes made in the console UI with user, action and target, filters by action, shows the diff', async () => {
    const s = await session();
    const { page, screenshot, problems } = s;
    await login(page);
    const app = `/apps/${product.appId}`;

    // Config: a new parameter, saved through the review dialog.
    await page.goto(`${app}/config`);
    await page.getByLabel('New parameter name').fill('auditedFlag');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    await page.getByLabel('Value of auditedFlag').fill('on');
    await page.getByRole('button', { name: /Review changes/ }).click();
    await page
      .getByRole('dialog', { name: 'Review config changes' })
      .getByRole('button', { name: 'Save changes' })
      .click();
    await page.getByTestId('toast-success').filter({ hasText: 'Config saved' }).waitFor();
    expect((await product.rest('GET', '/config')).json.params.auditedFlag).toBe('on');

    // Data: Create class, Add row twice, delete both rows (one refusal of the confirmation
    // first), Drop class. The REST API shows each step.
    await createClass(page, 'AuditThing');
    expect((await product.rest('GET', '/schemas/AuditThing')).status).toBe(200);
    const first = await addRow(page, 'AuditThing');
    const second = await addRow(page, 'AuditThing');
    expect(await restIds('AuditThing')).toEqual([first, second]);
    await expect.poll(() => page.getByTestId('row-count').textContent()).toBe('2 rows');

    expect(await deleteRow(page, first, false)).toBe('Delete 1 selected row of AuditThing?');
    expect(await restIds('AuditThing')).toEqual([first, second]);
    await ui.selectRow(page, first).uncheck();
    expect(await deleteRow(page, first, true)).toBe('Delete 1 selected row of AuditThing?');
    await page.getByTestId('toast-success').filter({ hasText: 'Deleted 1 row' }).waitFor();
    await expect.poll(() => restIds('AuditThing')).toEqual([second]);
    await expect.poll(() => page.getByTestId('row-count').textContent()).toBe('1 row');
    expect(await deleteRow(page, second, true)).toBe('Delete 1 selected row of AuditThing?');
    await expect.poll(() => restIds('AuditThing')).toEqual([]);
    await expect.poll(() => page.getByTestId('row-count').textContent()).toBe('0 rows');

    await ui.schema(page).click();
    expect(await ui.dropClass(page).isDisabled()).toBe(true);
    await ui.confirmDrop(page).fill('AuditThing');
    await ui.dropClass(page).click();
    await page.waitForURL(new RegExp(`${app}/data$`));
    await expect
      .poll(async () => product.rest('GET', '/schemas/AuditThing'))
      .toEqual({ status: 400, json: { code: 103, error: 'Class AuditThing does not exist.' } });
    expect(
      await page
        .getByRole('navigation', { name: 'classes' })
        .getByRole('link', { name: 'AuditThing' })
        .count(),
    ).toBe(0);

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
    // Newest first: every change made above, by the one who made it.
    expect(all.map((e) => [e.action, e.target])).toEqual([
      ['schema.delete', 'AuditThing'],
      ['rows.bulkDelete', 'AuditThing'],
      ['rows.bulkDelete', 'AuditThing'],
      ['row.create', `AuditThing/${second}`],
      ['row.create', `AuditThing/${first}`],
      ['schema.create', 'AuditThing'],
      ['config.update', 'config'],
    ]);
    expect(all.every((e) => e.user === 'admin')).toBe(true);
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
    // `row` is row.create and row.update..., and the rows.* entries (bulk deletes, imports) too.
    expect(await viewer.page.getByTestId('audit-row').count()).toBe(4);
    expect(problems).toEqual([]);
    expect(viewer.problems).toEqual([]);
  });

  it('pages older entries with Load more', async () => {
    const s = await session();
    const { page } = s;
    await login(page);
    const app = `/apps/${product.appId}`;
    // 50 a page: Create class and 54 Add rows make 55 entries for AuditPaged.
    await createClass(page, 'AuditPaged');
    for (let i = 0; i < 54; i++) await addRow(page, 'AuditPaged');
    expect((await product.rest('GET', '/classes/AuditPaged?count=1&limit=0')).json.count).toBe(54);
    await page.goto(`${app}/audit?target=AuditPaged`);
    const rows = page.getByTestId('audit-row');
    await rows.first().waitFor();
    expect(await rows.count()).toBe(50);
    const action = (i: number) => rows.nth(i).getByTestId('audit-action').textContent();
    expect(await action(49)).toBe('row.create');
    await page.getByRole('button', { name: 'Load more' }).click();
    await expect.poll(() => rows.count()).toBe(55);
    await page.getByTestId('audit-count').filter({ hasText: '55 entries' }).waitFor();
    // The oldest entry, the class's creation, came with the second page; there is no third.
    expect(await action(54)).toBe('schema.create');
    expect(await page.getByRole('button', { name: 'Load more' }).count()).toBe(0);
  });
});
