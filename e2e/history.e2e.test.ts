import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, login, openSession, type Session } from './helpers/browser.ts';
import { dataControls as ui } from './helpers/data-controls.ts';
import { type Product, startProduct } from './helpers/product.ts';

/**
 * Row history in the console, in Chromium: an admin edits a row in the grid, reads the edit in the
 * row's History tab (under the console user's name), reverts the row to its first version through
 * the preview dialog, deletes another row, finds it in the class's Recent changes (filtered by
 * user, field and time) and restores it; the Audit page's entry opens the row's history. A
 * read-only user reads the same history without any revert or restore control, and the bff
 * refuses a revert the page was made to send anyway.
 */

let product: Product;
let browser: Browser;
const sessions: Session[] = [];
const POLL = { timeout: 10_000 };
const ids: Record<'kept' | 'doomed' | 'gone', string> = { kept: '', doomed: '', gone: '' };

async function rest(method: string, p: string, body?: unknown): Promise<any> {
  const res = await product.rest(method, p, body);
  if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(res.json)}`);
  return res.json;
}

beforeAll(async () => {
  product = await startProduct();
  browser = await launchBrowser();
  await rest('POST', '/schemas/Post', {
    className: 'Post',
    fields: { title: { type: 'String' }, n: { type: 'Number' } },
  });
  ids.kept = (await rest('POST', '/classes/Post', { title: 'first', n: 1 })).objectId;
  ids.doomed = (await rest('POST', '/classes/Post', { title: 'doomed', n: 2 })).objectId;
  ids.gone = (await rest('POST', '/classes/Post', { title: 'gone', n: 3 })).objectId;
}, 120_000);

afterAll(async () => {
  for (const s of sessions) await s.close();
  await browser?.close();
  await product?.close();
});

async function session(username: string): Promise<Session> {
  const s = await openSession(browser, product, { timezoneId: 'UTC' });
  sessions.push(s);
  await login(s.page, username);
  return s;
}

const dataUrl = (qs = '') => `/apps/${product.appId}/data/Post${qs}`;
const cell = (page: Page, id: string, field: string) =>
  page.locator(`[data-row-id="${id}"] [data-field="${field}"]`);
const versions = (page: Page) => page.getByTestId('history-version');
const changeTexts = (scope: ReturnType<Page['locator']>) =>
  scope.getByTestId('field-change').allTextContents();

/** What each version of the open History tab says: op, who, source, changes. */
const timeline = async (page: Page) =>
  Promise.all(
    (await versions(page).all()).map(async (v) => ({
      op: await v.getByTestId('version-op').textContent(),
      who: await v.getByTestId('version-who').textContent(),
      source: await v.getByTestId('version-source').textContent(),
      changes: await changeTexts(v),
    })),
  );

const changeRows = async (page: Page) =>
  Promise.all(
    (await page.getByTestId('change-row').all()).map(async (r) => [
      await r.getAttribute('data-object-id'),
      await r.getByTestId('change-op').textContent(),
      await r.getByTestId('change-who').textContent(),
      await r.getByTestId('change-fields').textContent(),
    ]),
  );

describe('row history in the console', () => {
  it('an admin edits, reads the history, reverts, finds a deleted row in Recent changes and restores it', async () => {
    const admin = await session('admin');
    const { page } = admin;
    await page.goto(dataUrl());
    await cell(page, ids.kept, 'title').waitFor();

    // Edit a cell in the grid.
    await cell(page, ids.kept, 'title').focus();
    await page.keyboard.press('Enter');
    await page.getByTestId('cell-editor').fill('second');
    await page.keyboard.press('Enter');
    await page.getByTestId('cell-editor').waitFor({ state: 'detached' });
    await expect
      .poll(async () => (await rest('GET', `/classes/Post/${ids.kept}`)).title, POLL)
      .toBe('second');

    // Its History tab: the edit by the console user, the create by the master key.
    await cell(page, ids.kept, 'objectId').click();
    await page.getByRole('tab', { name: 'History' }).click();
    await page.waitForURL(/[?&]history=1/);
    await expect.poll(() => versions(page).count(), POLL).toBe(2);
    expect(await timeline(page)).toEqual([
      { op: 'update', who: 'console · admin', source: 'console', changes: ['title: "first" → "second"'] },
      {
        op: 'create',
        who: 'master',
        source: 'rest',
        changes: ['n: (not set) → 1', 'title: (not set) → "first"'],
      },
    ]);
    expect(await versions(page).first().locator('time').getAttribute('datetime')).toMatch(
      /^\d{4}-\d\d-\d\dT/,
    );
    // The current version has nothing to go back to.
    expect(await versions(page).first().getByRole('button', { name: 'Revert to this version' }).count()).toBe(
      0,
    );
    await admin.screenshot('history-row');

    // The edit's request, in the Logs section: its request line.
    const edit = versions(page).first().getByTestId('version-request');
    const requestHref = (await edit.getAttribute('href')) ?? '';
    const requestId = decodeURIComponent(requestHref.split('requestId=')[1] ?? '');
    expect(requestId).toMatch(/^[A-Za-z0-9._:-]{1,128}$/);
    await edit.click();
    await page.waitForURL(/\/logs\?requestId=/);
    const lines = page.getByRole('region', { name: `Lines of request ${requestId}` });
    await expect
      .poll(() => lines.getByTestId('request-line-text').first().textContent(), POLL)
      .toMatch(new RegExp(`^PUT \\S*/classes/Post/${ids.kept} → 200 in [\\d.]+ ms$`));
    await page.goBack();
    await expect.poll(() => versions(page).count(), POLL).toBe(2);

    // Revert to the create: the preview first; Cancel changes nothing.
    const create = versions(page).nth(1);
    const revertDialog = page.getByRole('dialog', { name: 'Revert to this version?' });
    await create.getByRole('button', { name: 'Revert to this version' }).click();
    expect(await changeTexts(revertDialog.getByTestId('history-preview'))).toEqual([
      'title: "second" → "first"',
    ]);
    await revertDialog.getByRole('button', { name: 'Cancel' }).click();
    await revertDialog.waitFor({ state: 'hidden' });
    expect((await rest('GET', `/classes/Post/${ids.kept}`)).title).toBe('second');
    await create.getByRole('button', { name: 'Revert to this version' }).click();
    await revertDialog.getByRole('button', { name: 'Revert row' }).click();
    await page
      .getByTestId('toast-success')
      .filter({ hasText: `Reverted Post ${ids.kept} to the version of ` })
      .waitFor();
    await expect.poll(async () => (await rest('GET', `/classes/Post/${ids.kept}`)).title, POLL).toBe('first');
    await expect.poll(() => cell(page, ids.kept, 'title').textContent(), POLL).toBe('first');
    await expect.poll(() => versions(page).count(), POLL).toBe(3);
    expect((await timeline(page))[0]).toEqual({
      op: 'revert',
      who: 'console · admin',
      source: 'console',
      changes: ['title: "second" → "first"'],
    });
    expect(await versions(page).first().getByTestId('version-revert-of').textContent()).toMatch(
      /^to the version of /,
    );
    // Back to the row's fields: the reverted value.
    await page.getByRole('tab', { name: 'Fields' }).click();
    await expect.poll(() => page.url(), POLL).not.toContain('history=1');
    expect(await page.locator('[data-detail-field="title"] dd > span').first().textContent()).toBe('first');
    await page.getByLabel('close row detail').click();

    // Delete a row in the grid, then find it in the class's Recent changes.
    await ui.selectRow(page, ids.doomed).check();
    page.once('dialog', (dialog) => void dialog.accept());
    await ui.deleteRows(page).click();
    await page.getByTestId('toast-success').filter({ hasText: 'Deleted 1 row' }).waitFor();
    await expect
      .poll(async () => (await product.rest('GET', `/classes/Post/${ids.doomed}`)).status)
      .toBe(404);
    await page.getByRole('button', { name: 'Changes', exact: true }).click();
    const panel = page.getByTestId('recent-changes');
    await panel.getByTestId('change-row').first().waitFor();
    expect(await changeRows(page)).toEqual([
      [ids.doomed, 'delete', 'console · admin', ''],
      [ids.kept, 'revert', 'console · admin', 'title'],
      [ids.kept, 'update', 'console · admin', 'title'],
      [ids.gone, 'create', 'master', 'n, title'],
      [ids.doomed, 'create', 'master', 'n, title'],
      [ids.kept, 'create', 'master', 'n, title'],
    ]);
    // Filters: who, which field, when.
    await panel.getByLabel('Changed by').fill('admin');
    await panel.getByLabel('Field').selectOption('title');
    await panel.getByRole('button', { name: 'Apply' }).click();
    await expect
      .poll(async () => (await changeRows(page)).map(([id, op]) => `${id} ${op}`), POLL)
      .toEqual([`${ids.doomed} delete`, `${ids.kept} revert`, `${ids.kept} update`]);
    await panel.getByLabel('Until').fill('2000-01-01T00:00');
    await panel.getByRole('button', { name: 'Apply' }).click();
    expect(await panel.getByTestId('changes-empty').textContent()).toBe('No recorded change matches.');
    await panel.getByLabel('Until').fill('');
    await panel.getByLabel('Since').fill('2000-01-01T00:00');
    await panel.getByRole('button', { name: 'Apply' }).click();
    await expect.poll(async () => (await changeRows(page)).length, POLL).toBe(3);
    await panel.getByRole('button', { name: 'Clear' }).click();
    await expect.poll(async () => (await changeRows(page)).length, POLL).toBe(6);
    await admin.screenshot('history-recent-changes');

    // The deleted row's history, and Restore with its preview.
    await panel
      .getByRole('button', { name: `history of ${ids.doomed}` })
      .first()
      .click();
    await page.waitForURL(new RegExp(`row=${ids.doomed}.*history=1|history=1.*row=${ids.doomed}`));
    const deleted = page.getByTestId('row-deleted');
    await deleted.waitFor();
    expect(await deleted.locator('p').textContent()).toMatch(/^Deleted .+ by console · admin\.$/);
    expect(await page.getByTestId('row-error').count()).toBe(0);
    expect((await timeline(page)).map((v) => v.op)).toEqual(['delete', 'create']);
    const restoreDialog = page.getByRole('dialog', { name: 'Restore this row?' });
    await deleted.getByRole('button', { name: 'Restore' }).click();
    expect(await changeTexts(restoreDialog.getByTestId('history-preview'))).toEqual([
      'n: (not set) → 2',
      'title: (not set) → "doomed"',
    ]);
    await restoreDialog.getByRole('button', { name: 'Restore row' }).click();
    await page
      .getByTestId('toast-success')
      .filter({ hasText: `Restored Post ${ids.doomed}` })
      .waitFor();
    expect(await rest('GET', `/classes/Post/${ids.doomed}`)).toMatchObject({ title: 'doomed', n: 2 });
    await expect.poll(() => cell(page, ids.doomed, 'title').textContent(), POLL).toBe('doomed');
    await expect
      .poll(async () => (await timeline(page)).map((v) => v.op), POLL)
      .toEqual(['restore', 'delete', 'create']);
    expect(await deleted.count()).toBe(0);

    // The Audit page: the restore's entry opens the row's history.
    await page
      .getByRole('navigation', { name: 'Sections' })
      .getByRole('link', { name: 'Audit', exact: true })
      .click();
    const entry = page.locator('[data-testid="audit-row"][data-action="row.restore"]');
    await entry.waitFor();
    expect(await entry.getByTestId('audit-target').textContent()).toBe(`Post/${ids.doomed}`);
    expect(await page.locator('[data-testid="audit-row"][data-action="row.revert"]').count()).toBe(1);
    await entry.getByRole('link', { name: `History of Post/${ids.doomed}` }).click();
    await page.waitForURL(`**${dataUrl(`?row=${ids.doomed}&history=1`)}`);
    await expect
      .poll(async () => (await timeline(page)).map((v) => v.op), POLL)
      .toEqual(['restore', 'delete', 'create']);
    expect((await timeline(page))[0]!.who).toBe('console · admin');

    // No key reached the browser.
    const seen = [await page.content(), ...(await admin.responses()).map((r) => r.body.toString('utf8'))];
    for (const secret of Object.values(product.secrets))
      for (const text of seen) expect(text.includes(secret), 'a key reached the browser').toBe(false);
    expect(admin.problems).toEqual([]);
  });

  it('a read-only user reads the history without revert or restore, and the bff refuses a forged revert', async () => {
    await rest('DELETE', `/classes/Post/${ids.gone}`);
    const viewer = await session('viewer');
    const { page } = viewer;
    await page.goto(dataUrl(`?row=${ids.kept}&history=1`));
    await expect.poll(() => versions(page).count(), POLL).toBe(3);
    expect((await timeline(page)).map((v) => v.op)).toEqual(['revert', 'update', 'create']);
    expect(await page.getByTestId('history-read-only').textContent()).toBe(
      'Read-only console users cannot revert or restore rows.',
    );
    expect(await page.getByRole('button', { name: 'Revert to this version' }).count()).toBe(0);

    // The row deleted meanwhile: in Recent changes, its history says so, with no Restore.
    await page.getByRole('button', { name: 'Changes', exact: true }).click();
    const panel = page.getByTestId('recent-changes');
    await panel.getByTestId('change-row').first().waitFor();
    expect((await changeRows(page))[0]).toEqual([ids.gone, 'delete', 'master', '']);
    await panel
      .getByRole('button', { name: `history of ${ids.gone}` })
      .first()
      .click();
    const deleted = page.getByTestId('row-deleted');
    await deleted.waitFor();
    expect(await deleted.locator('p').textContent()).toMatch(/^Deleted .+ by master\.$/);
    expect(await page.getByRole('button', { name: 'Restore' }).count()).toBe(0);

    // A revert sent anyway: refused by the bff, nothing changed.
    const create = (await product.rest('GET', `/history/Post/${ids.kept}`)).json.results.at(-1).id as string;
    const forged = await page.evaluate(
      async ({ appId, id, version }) => {
        const res = await fetch(`/bff/apps/${appId}/history/Post/${id}/revert`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', 'X-Console-CSRF': '1' },
          body: JSON.stringify({ version }),
        });
        return { status: res.status, json: await res.json() };
      },
      { appId: product.appId, id: ids.kept, version: create },
    );
    expect(forged).toEqual({
      status: 403,
      json: { code: 119, error: 'Read-only console users cannot change anything.' },
    });
    expect((await product.rest('GET', `/history/Post/${ids.kept}`)).json.results).toHaveLength(3);
    expect(viewer.problems).toEqual([]);
  });

  it('pages a long history: older versions of a row, more changes of a class', async () => {
    const busy = (await rest('POST', '/classes/Post', { title: 'busy', n: 0 })).objectId as string;
    const updates = Array.from({ length: 55 }, (_, i) => ({
      method: 'PUT',
      path: `/classes/Post/${busy}`,
      body: { n: i + 1 },
    }));
    for (const requests of [updates.slice(0, 50), updates.slice(50)])
      expect((await product.rest('POST', '/batch', { requests })).status).toBe(200);
    const total = (await rest('GET', '/history/Post?limit=1000')).results.length as number;
    expect(total).toBeGreaterThan(50);
    expect(total).toBeLessThanOrEqual(100);

    const { page } = await session('admin');
    await page.goto(dataUrl(`?row=${busy}&history=1`));
    await expect.poll(() => versions(page).count(), POLL).toBe(50);
    expect(await changeTexts(versions(page).first())).toEqual(['n: 54 → 55']);
    await page.getByRole('button', { name: 'Load older versions' }).click();
    await expect.poll(() => versions(page).count(), POLL).toBe(56);
    expect(await versions(page).last().getAttribute('data-op')).toBe('create');
    expect(await page.getByRole('button', { name: 'Load older versions' }).count()).toBe(0);

    await page.getByRole('button', { name: 'Changes', exact: true }).click();
    const rows = page.getByTestId('recent-changes').getByTestId('change-row');
    await expect.poll(() => rows.count(), POLL).toBe(50);
    await page.getByRole('button', { name: 'Load more changes' }).click();
    await expect.poll(() => rows.count(), POLL).toBe(total);
    expect(await page.getByRole('button', { name: 'Load more changes' }).count()).toBe(0);
  });
});
