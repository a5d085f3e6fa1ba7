import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, login, openSession, type Session } from './helpers/browser.ts';
import { dataControls as ui } from './helpers/data-controls.ts';
import { type Product, startProduct } from './helpers/product.ts';

/**
 * The console tried as a new admin would (issue 27), the data browser's part: a typo never
 * deletes a value, a password changes only through its own control, a malformed CSV writes
 * nothing, counts and the row panel follow every write, a refused filter keeps its text, and the
 * rough edges of the toolbar, the empty class, the import progress and the words.
 */

let product: Product;
let browser: Browser;
let admin: Session;
let tmp: string;
/** Waits on the product: generous, for a loaded 2-core machine. */
const POLL = { timeout: 15_000 };
let ownerId = '';

async function rest(method: string, p: string, body?: unknown): Promise<any> {
  const res = await product.rest(method, p, body);
  if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(res.json)}`);
  return res.json;
}

const dataUrl = (cls: string, qs = '') => `/apps/${product.appId}/data/${cls}${qs}`;
const cell = (page: Page, id: string, field: string) =>
  page.locator(`[data-row-id="${id}"] [data-field="${field}"]`);
const firstRow = (page: Page) => page.locator('[data-testid="grid"] [data-index="1"][data-row-id]');
const gridRows = (page: Page) => page.locator('[data-testid="grid"] [data-row-id]');

async function openClass(page: Page, cls: string, qs = ''): Promise<void> {
  await page.goto(dataUrl(cls, qs));
  await firstRow(page).waitFor();
}

/** The console's audit log as the logged-in page sees it (newest first). */
async function auditEntries(page: Page, action: string): Promise<any[]> {
  return page.evaluate(
    async (a) =>
      ((await (await fetch(`/bff/audit?action=${a}&limit=1000`)).json()) as { results: any[] }).results,
    action,
  );
}

/** A state-changing call to the bff from the logged-in page (with the CSRF header the SPA sends). */
async function bffCall(page: Page, method: string, p: string, body: unknown) {
  return page.evaluate(
    async ({ method, p, body }) => {
      const res = await fetch(`/bff/apps/e2e-app${p}`, {
        method,
        headers: { 'Content-Type': 'application/json', 'X-Console-CSRF': '1' },
        body: JSON.stringify(body),
      });
      return { status: res.status, json: await res.json() };
    },
    { method, p, body },
  );
}

/** Opens the editor of a grid cell with the keyboard (Enter on the focused cell). */
async function openEditor(page: Page, id: string, field: string) {
  await cell(page, id, field).focus();
  await page.keyboard.press('Enter');
  await page.getByTestId('cell-editor').first().waitFor();
}

/** Types `text` over the editor's content as a person would (key by key), then presses `commit`. */
async function typeOver(page: Page, text: string, commit = 'Enter') {
  const editor = page.getByTestId('cell-editor').first();
  await editor.focus();
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Backspace');
  if (text) await page.keyboard.type(text);
  await page.keyboard.press(commit);
}

const NOTHING_TYPED = 'Nothing typed: use Unset to remove the value.';

beforeAll(async () => {
  product = await startProduct();
  browser = await launchBrowser();
  tmp = mkdtempSync(path.join(tmpdir(), 'bds-e2e-safety-'));
  await rest('POST', '/schemas/Owner', { className: 'Owner', fields: { name: { type: 'String' } } });
  ownerId = (await rest('POST', '/classes/Owner', { objectId: 'owner_ada', name: 'Ada' })).objectId;
  admin = await openSession(browser, product, { timezoneId: 'UTC' });
  await login(admin.page);
}, 120_000);

afterAll(async () => {
  await admin?.close();
  await browser?.close();
  await product?.close();
  rmSync(tmp, { recursive: true, force: true });
});

describe('data safety', () => {
  it('a cell editor refuses what it cannot read, with a message at the cell, and changes nothing; Unset removes a value on purpose', async () => {
    const { page } = admin;
    await rest('POST', '/schemas/Safe', {
      className: 'Safe',
      fields: {
        n: { type: 'Number' },
        d: { type: 'Date' },
        o: { type: 'Object' },
        a: { type: 'Array' },
        g: { type: 'GeoPoint' },
        p: { type: 'Pointer', targetClass: 'Owner' },
        s: { type: 'String' },
      },
    });
    const values = {
      n: 5,
      d: { __type: 'Date', iso: '2024-05-06T07:08:09.000Z' },
      o: { a: 1 },
      a: [1],
      g: { __type: 'GeoPoint', latitude: 10, longitude: 20 },
      p: { __type: 'Pointer', className: 'Owner', objectId: ownerId },
      s: 'text',
      ACL: { '*': { read: true, write: true } },
    };
    await rest('POST', '/classes/Safe', { objectId: 'safe_a', ...values });
    await rest('POST', '/classes/Safe', { objectId: 'safe_b', ...values });
    const original = await rest('GET', '/classes/Safe/safe_a');
    await openClass(page, 'Safe');
    const error = page.getByTestId('cell-editor-error');
    const saved = page.getByTestId('toast-success').filter({ hasText: /^Saved / });

    // Number: a typo, two minus signs and a number too large for a double are each refused.
    for (const [typed, message] of [
      ['12e', '"12e" is not a number'],
      ['--5', '"--5" is not a number'],
      ['1e400', '"1e400" is too large for a number'],
      ['', NOTHING_TYPED],
    ]) {
      await openEditor(page, 'safe_a', 'n');
      await typeOver(page, typed!);
      await expect.poll(() => error.textContent(), POLL).toBe(message);
      // The editor stays open with the text as typed, for the user to fix or cancel.
      expect(await page.getByTestId('cell-editor').inputValue()).toBe(typed);
      await page.keyboard.press('Escape');
      await page.getByTestId('cell-editor').waitFor({ state: 'detached' });
    }

    // The other editors: empty or unreadable input is refused the same way.
    await openEditor(page, 'safe_a', 'd');
    await page.getByTestId('cell-editor').fill('');
    await page.keyboard.press('Enter');
    await expect.poll(() => error.textContent(), POLL).toBe(NOTHING_TYPED);
    // A date typed in part: the browser hands over nothing, the editor says so.
    await page.keyboard.type('05');
    await page.keyboard.press('Enter');
    await expect.poll(() => error.textContent(), POLL).toBe('The date is not complete.');
    await page.keyboard.press('Escape');

    for (const [field, typed, message] of [
      ['o', '', NOTHING_TYPED],
      ['o', '{"a": ', 'invalid JSON: Unexpected end of JSON input'],
      ['a', '{"a": 1}', 'expected a JSON array'],
      ['a', '', NOTHING_TYPED],
      ['ACL', '', NOTHING_TYPED],
      ['ACL', '{"*": {"read": "yes"}}', 'ACL entry "*": read and write must be true or false'],
      ['ACL', '{"*": {"read": true, "delete": true}}', 'ACL entry "*": only read and write are allowed'],
    ]) {
      await openEditor(page, 'safe_a', field!);
      await page.getByTestId('cell-editor').fill(typed!);
      await expect.poll(() => error.textContent(), POLL).toBe(message);
      expect(await page.getByRole('button', { name: 'Save', exact: true }).isDisabled()).toBe(true);
      await page.keyboard.press('Control+Enter');
      await page.keyboard.press('Escape');
      await page.getByTestId('cell-editor').waitFor({ state: 'detached' });
    }

    await openEditor(page, 'safe_a', 'g');
    await page.getByLabel('latitude').fill('');
    await page.getByLabel('longitude').fill('');
    await page.keyboard.press('Enter');
    await expect.poll(() => error.textContent(), POLL).toBe(NOTHING_TYPED);
    await page.getByLabel('latitude').fill('91');
    await page.getByLabel('longitude').fill('0');
    await page.keyboard.press('Enter');
    await expect
      .poll(() => error.textContent(), POLL)
      .toBe('latitude must be in [-90, 90] and longitude in [-180, 180]');
    await page.keyboard.press('Escape');

    for (const [typed, message] of [
      ['', NOTHING_TYPED],
      ['no such id!', '"no such id!" is not an objectId'],
    ]) {
      await openEditor(page, 'safe_a', 'p');
      await page.getByTestId('cell-editor').fill(typed!);
      await page.keyboard.press('Enter');
      await expect.poll(() => error.textContent(), POLL).toBe(message);
      await page.keyboard.press('Escape');
      await page.getByTestId('cell-editor').waitFor({ state: 'detached' });
    }

    // Nothing was written, and the console never said "Saved".
    expect(await rest('GET', '/classes/Safe/safe_a')).toEqual(original);
    expect(await saved.count()).toBe(0);
    expect(await cell(page, 'safe_a', 'n').textContent()).toBe('5');

    // An empty String is a value (the empty string), not a removal.
    await openEditor(page, 'safe_a', 's');
    await typeOver(page, '');
    await page.getByTestId('toast-success').filter({ hasText: 'Saved s of safe_a' }).waitFor();
    expect((await rest('GET', '/classes/Safe/safe_a')).s).toBe('');

    // Unset is the explicit removal, saved and audited as any edit.
    const updatesBefore = (await auditEntries(page, 'row.update')).length;
    await openEditor(page, 'safe_a', 'n');
    await page.getByRole('button', { name: 'Unset', exact: true }).click();
    await expect.poll(async () => 'n' in (await rest('GET', '/classes/Safe/safe_a')), POLL).toBe(false);
    await page.getByTestId('toast-success').filter({ hasText: 'Unset n of safe_a' }).waitFor();
    await expect.poll(() => cell(page, 'safe_a', 'n').textContent(), POLL).toBe('');
    const updates = await auditEntries(page, 'row.update');
    expect(updates.length).toBe(updatesBefore + 1);
    expect(updates[0]).toMatchObject({ target: 'Safe/safe_a', before: { n: 5 } });
    expect('n' in updates[0].after).toBe(false);
    // An unset cell offers no Unset.
    await openEditor(page, 'safe_a', 'n');
    expect(await page.getByRole('button', { name: 'Unset', exact: true }).count()).toBe(0);
    await page.keyboard.press('Escape');

    // Bulk edit: an empty value is refused too, on every selected row.
    await ui.selectRow(page, 'safe_a').check();
    await ui.selectRow(page, 'safe_b').check();
    await page.getByLabel('bulk edit column').selectOption('o');
    await page.getByLabel('bulk edit value').fill('');
    await page.getByRole('button', { name: 'on 2 rows', exact: true }).click();
    const refused = page.getByTestId('toast-error').filter({ hasText: 'Bulk edit' });
    await refused.waitFor();
    expect(await refused.textContent()).toContain(NOTHING_TYPED);
    expect((await rest('GET', '/classes/Safe/safe_b')).o).toEqual({ a: 1 });
    expect((await rest('GET', '/classes/Safe/safe_a')).o).toEqual({ a: 1 });
    // Unset on the selected rows is its own button, confirmed first.
    await page.getByLabel('bulk edit column').selectOption('a');
    const asked: string[] = [];
    page.once('dialog', (d) => {
      asked.push(d.message());
      void d.accept();
    });
    await page.getByRole('button', { name: 'Unset on 2 rows', exact: true }).click();
    await page.getByTestId('toast-success').filter({ hasText: 'Unset a on 2 rows' }).waitFor();
    expect(asked).toEqual(['Remove the value of a on 2 selected rows of Safe?']);
    for (const id of ['safe_a', 'safe_b'])
      expect('a' in (await rest('GET', `/classes/Safe/${id}`))).toBe(false);
    await admin.screenshot('safety-cell-editors');
  });

  it('a password changes only through its own control, with a confirmation, audited without values', async () => {
    const { page } = admin;
    const dora = await product.rest('POST', '/users', { username: 'dora', password: 'old pw 1' }, 'rest');
    expect(dora.status).toBe(201);
    const id = dora.json.objectId as string;
    const token = dora.json.sessionToken as string;
    const logIn = async (password: string) =>
      (await product.rest('POST', '/login', { username: 'dora', password }, 'rest')).status;
    /** 200 while dora's first session works, else the protocol code of the refusal. */
    const sessionWorks = async () => {
      const res = await fetch(`${product.serviceUrl}/users/me`, {
        headers: {
          'X-Backend-Application-Id': 'e2e-service-app',
          'X-Backend-REST-API-Key': product.secrets.restAPIKey,
          'X-Backend-Session-Token': token,
        },
      });
      return res.status === 200 ? 200 : ((await res.json()) as { code: number }).code;
    };
    const refusal =
      'password: a user\'s password changes only through "Set password" (Security → Users), which asks for a confirmation.';

    // "Other fields (JSON)" refuses the password, with the way to the control.
    await page.goto(`/apps/${product.appId}/security/users`);
    await page.locator('[data-testid="user-row"][data-username="dora"]').getByRole('button').click();
    const panel = page.getByRole('region', { name: 'User dora' });
    await panel.waitFor();
    await panel.getByLabel('Other fields (JSON)').fill('{"password": "typed in json"}');
    await panel.getByRole('button', { name: 'Save user' }).click();
    await expect.poll(() => panel.getByRole('alert').textContent(), POLL).toBe(refusal);
    expect(await logIn('old pw 1')).toBe(200);
    expect(await logIn('typed in json')).toBe(404);
    expect(await sessionWorks()).toBe(200);

    // The bff refuses it on every generic write route too.
    const answer = { code: 105, error: refusal };
    expect(await bffCall(page, 'PUT', `/users/${id}`, { password: 'sneaky 1' })).toEqual({
      status: 400,
      json: answer,
    });
    expect(await bffCall(page, 'PUT', `/classes/_User/${id}`, { password: 'sneaky 2' })).toEqual({
      status: 400,
      json: answer,
    });
    expect(
      await bffCall(page, 'POST', '/classes/_User/bulk/update', {
        objectIds: [id],
        field: 'password',
        value: 'sneaky 3',
      }),
    ).toEqual({ status: 400, json: answer });
    expect(await bffCall(page, 'PUT', `/classes/_User/${id}`, { authData: { x: {} } })).toEqual({
      status: 400,
      json: { code: 105, error: 'authData: credentials are not edited in the console.' },
    });
    for (const pw of ['sneaky 1', 'sneaky 2', 'sneaky 3']) expect(await logIn(pw)).toBe(404);
    expect(await sessionWorks()).toBe(200);

    // The data browser offers no editor for the password column of _User.
    await openClass(page, '_User');
    await cell(page, id, 'password').dblclick();
    expect(await page.getByTestId('cell-editor').count()).toBe(0);

    // The control: the new password twice, a warning that sessions end, then saved and audited.
    await page.goto(`/apps/${product.appId}/security/users`);
    await page.locator('[data-testid="user-row"][data-username="dora"]').getByRole('button').click();
    await panel.getByRole('button', { name: 'Set password…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Set password for dora' });
    await dialog.getByLabel('New password', { exact: true }).fill('new pw 2');
    await dialog.getByLabel('Repeat the new password').fill('new pw 3');
    expect(await dialog.getByRole('button', { name: 'Set password' }).isDisabled()).toBe(true);
    expect(await dialog.getByRole('alert').textContent()).toBe('The two passwords differ.');
    await dialog.getByLabel('Repeat the new password').fill('new pw 2');
    expect(await dialog.getByText('Every session of dora ends: they must log in again.').count()).toBe(1);
    await dialog.getByRole('button', { name: 'Set password' }).click();
    await page.getByTestId('toast-success').filter({ hasText: 'Password of dora changed' }).waitFor();
    expect(await logIn('new pw 2')).toBe(200);
    expect(await logIn('old pw 1')).toBe(404);
    expect(await sessionWorks()).toBe(209);
    const [entry] = await auditEntries(page, 'user.password');
    expect(entry).toMatchObject({
      user: 'admin',
      action: 'user.password',
      target: `_User/${id}`,
      before: null,
      after: { change: 'password changed' },
    });
    expect(JSON.stringify(entry)).not.toContain('new pw');
    await admin.screenshot('safety-set-password');
  });

  it('a malformed CSV is refused with the line and the reason, and nothing is written', async () => {
    const { page } = admin;
    await rest('POST', '/schemas/Strict', {
      className: 'Strict',
      fields: { name: { type: 'String' }, n: { type: 'Number' } },
    });
    await page.goto(dataUrl('Strict'));
    await page.getByTestId('grid').waitFor();
    const importsBefore = (await auditEntries(page, 'rows.import')).length;
    const cases: Array<[string, string, string]> = [
      [
        'unterminated.csv',
        'name,n\nalpha,1\nbeta,2\n"unterminated,gamma,3\n',
        'line 4: a quoted field is not closed before the end of the file',
      ],
      [
        'extra-field.csv',
        'name,n\nalpha,1\nbeta,2,oops\ngamma,3\n',
        'line 3: 3 fields where the header has 2',
      ],
      ['missing-field.csv', 'name,n,fresh\nalpha,1,x\nbeta\n', 'line 3: 1 field where the header has 3'],
      ['after-quote.csv', 'name,n,fresh\n"al"pha,1,x\n', 'line 2: text after the closing quote of a field'],
      [
        'stray-quote.csv',
        'name,n\nal"pha,1\n',
        'line 2: a quote inside a field that does not start with one',
      ],
      ['twice.csv', 'name,n,name\nalpha,1,beta\n', 'line 1: the column "name" appears twice in the header'],
    ];
    for (const [name, text, reason] of cases) {
      const file = path.join(tmp, name);
      writeFileSync(file, text);
      await ui.importFile(page).setInputFiles(file);
      const alert = page.getByRole('alert').filter({ hasText: 'Import refused' });
      await expect
        .poll(() => alert.textContent(), POLL)
        .toBe(`Import refused: ${name}, ${reason}. Nothing was written.`);
      expect(await page.getByTestId('import-mapping').count()).toBe(0);
    }
    expect((await rest('GET', '/classes/Strict?count=1&limit=0')).count).toBe(0);
    expect((await rest('GET', '/schemas/Strict')).fields.fresh).toBeUndefined();
    expect((await auditEntries(page, 'rows.import')).length).toBe(importsBefore);
    expect((await auditEntries(page, 'schema.addField')).filter((e) => e.target === 'Strict.fresh')).toEqual(
      [],
    );
    await admin.screenshot('safety-csv-refused');
  });
});

describe('correct state on screen', () => {
  it('row counts follow Add row, delete, import and live inserts and deletes; the class list too', async () => {
    const { page } = admin;
    await rest('POST', '/schemas/Counted', { className: 'Counted', fields: { label: { type: 'String' } } });
    for (const label of ['one', 'two', 'three']) await rest('POST', '/classes/Counted', { label });
    const listCount = page.getByTestId('count-Counted');
    const header = page.getByTestId('row-count');
    await openClass(page, 'Counted');
    await expect.poll(() => header.textContent(), POLL).toBe('3 rows');
    await expect.poll(() => listCount.textContent(), POLL).toBe('3');

    await ui.addRow(page).click();
    await page.getByTestId('row-detail').waitFor();
    await expect.poll(() => gridRows(page).count(), POLL).toBe(4);
    await expect.poll(() => header.textContent(), POLL).toBe('4 rows');
    await expect.poll(() => listCount.textContent(), POLL).toBe('4');

    // Live: rows written elsewhere are counted as they come, and deleted ones leave the grid.
    await page.getByLabel('Live', { exact: true }).check();
    await expect.poll(() => page.getByTestId('live-status').textContent(), POLL).toBe('live');
    const made: string[] = [];
    for (let i = 0; i < 5; i++)
      made.push((await rest('POST', '/classes/Counted', { label: `live ${i}` })).objectId);
    await expect.poll(() => header.textContent(), POLL).toBe('9 rows');
    await expect.poll(() => listCount.textContent(), POLL).toBe('9');
    await expect.poll(() => gridRows(page).count(), POLL).toBe(9);
    await rest('DELETE', `/classes/Counted/${made[0]}`);
    await rest('DELETE', `/classes/Counted/${made[1]}`);
    await expect.poll(() => header.textContent(), POLL).toBe('7 rows');
    await expect.poll(() => listCount.textContent(), POLL).toBe('7');
    await expect.poll(() => gridRows(page).count(), POLL).toBe(7);
    expect(await page.locator(`[data-row-id="${made[0]}"]`).count()).toBe(0);
    await page.getByLabel('Live', { exact: true }).uncheck();

    // An import and a delete made in the console.
    const file = path.join(tmp, 'counted.csv');
    writeFileSync(file, 'label\nimported 1\nimported 2\n');
    await ui.importFile(page).setInputFiles(file);
    await page.getByTestId('import-summary').waitFor();
    await expect.poll(() => header.textContent(), POLL).toBe('9 rows');
    await expect.poll(() => listCount.textContent(), POLL).toBe('9');
    page.once('dialog', (d) => void d.accept());
    await ui.selectRow(page, made[2]!).check();
    await ui.deleteRows(page).click();
    await page.getByTestId('toast-success').filter({ hasText: 'Deleted 1 row' }).waitFor();
    expect(await page.getByTestId('toast-success').filter({ hasText: 'Deleted 1 rows' }).count()).toBe(0);
    await expect.poll(() => header.textContent(), POLL).toBe('8 rows');
    await expect.poll(() => listCount.textContent(), POLL).toBe('8');
    expect((await rest('GET', '/classes/Counted?count=1&limit=0')).count).toBe(8);
    await admin.screenshot('safety-counts');
  });

  it('a deleted row closes its side panel with a notice; in live mode deleted rows leave the grid', async () => {
    const { page } = admin;
    await rest('POST', '/schemas/Gone', { className: 'Gone', fields: { label: { type: 'String' } } });
    for (const objectId of ['gone_a', 'gone_b', 'gone_c', 'gone_d'])
      await rest('POST', '/classes/Gone', { objectId, label: objectId });
    const panel = page.getByTestId('row-detail');
    const notice = (id: string) =>
      page.getByTestId('toast-info').filter({ hasText: `Row ${id} was deleted` });

    // Deleted in the console, while its panel is open.
    await openClass(page, 'Gone');
    await cell(page, 'gone_a', 'objectId').click();
    await panel.getByRole('button', { name: 'edit label' }).waitFor();
    page.once('dialog', (d) => void d.accept());
    await ui.selectRow(page, 'gone_a').check();
    await ui.deleteRows(page).click();
    await panel.waitFor({ state: 'detached' });
    await notice('gone_a').waitFor();
    expect(new URL(page.url()).searchParams.get('row')).toBeNull();

    // Deleted elsewhere: the console learns it on the next read of the row (an edit here).
    await cell(page, 'gone_b', 'objectId').click();
    await panel.getByRole('button', { name: 'edit label' }).click();
    await rest('DELETE', '/classes/Gone/gone_b');
    await panel.getByTestId('cell-editor').fill('too late');
    await page.keyboard.press('Enter');
    await panel.waitFor({ state: 'detached' });
    await notice('gone_b').waitFor();

    // Live mode: deleted elsewhere, the panel closes and the row leaves the grid (no faded row).
    // Opening a row keeps the one stream: reopening it would lose the events sent meanwhile.
    let streamsOpened = 0;
    const countStreams = (r: { url(): string }) => {
      if (r.url().includes('/realtime/stream')) streamsOpened++;
    };
    page.on('request', countStreams);
    await page.getByLabel('Live', { exact: true }).check();
    await expect.poll(() => page.getByTestId('live-status').textContent(), POLL).toBe('live');
    await cell(page, 'gone_c', 'objectId').click();
    await panel.getByRole('button', { name: 'edit label' }).waitFor();
    page.off('request', countStreams);
    expect(streamsOpened).toBe(1);
    await rest('DELETE', '/classes/Gone/gone_c');
    await panel.waitFor({ state: 'detached' });
    await notice('gone_c').waitFor();
    await expect.poll(() => page.locator('[data-row-id="gone_c"]').count(), POLL).toBe(0);
    expect(await page.locator('[data-live="gone"]').count()).toBe(0);
    await expect.poll(() => gridRows(page).count(), POLL).toBe(1);
    await page.getByLabel('Live', { exact: true }).uncheck();
  });

  it('a JSON filter the service refuses keeps the typed text, with the service message', async () => {
    const { page } = admin;
    await rest('POST', '/schemas/Filtered', { className: 'Filtered', fields: { n: { type: 'Number' } } });
    await rest('POST', '/classes/Filtered', { n: 1 });
    await openClass(page, 'Filtered');
    await page.getByRole('button', { name: /^Filter/ }).click();
    const fb = page.getByTestId('filter-builder');
    await fb.getByRole('button', { name: 'JSON', exact: true }).click();
    const typed = '{ "n": { "$bogus": 1 } }';
    await fb.getByLabel('where JSON').fill(typed);
    await fb.getByRole('button', { name: 'Apply filter' }).click();
    const refused = await product.rest('GET', `/classes/Filtered?where=${encodeURIComponent(typed)}`);
    expect(refused.status).toBe(400);
    const shown = `Error ${refused.json.code}: ${refused.json.error}`;
    await expect.poll(() => page.getByTestId('rows-error').textContent(), POLL).toBe(shown);
    const panel = page.getByTestId('filter-builder');
    await expect.poll(() => panel.getByLabel('where JSON').inputValue(), POLL).toBe(typed);
    await expect
      .poll(() => panel.getByRole('alert').textContent(), POLL)
      .toBe(`The service refused this filter: ${shown}`);
    // Reopened from the URL (a reload), the JSON tab still holds the filter, not {}.
    await page.reload();
    await page.getByTestId('rows-error').waitFor();
    await page.getByRole('button', { name: /^Filter/ }).waitFor();
    const again = page.getByTestId('filter-builder');
    await expect
      .poll(() => again.getByLabel('where JSON').inputValue(), POLL)
      .toBe(JSON.stringify(JSON.parse(typed), null, 2));
    await admin.screenshot('safety-filter-refused');
  });
});

describe('rough edges', () => {
  it('the toolbar keeps one line and the ACL button one place across classes', async () => {
    const { page } = admin;
    const long = 'AClassWithAVeryLongNameIndeedForTheToolbar';
    for (const cls of ['Ab', long]) {
      await rest('POST', `/schemas/${cls}`, { className: cls, fields: { label: { type: 'String' } } });
      await rest('POST', `/classes/${cls}`, { objectId: `${cls.slice(0, 8)}_1`, label: 'x' });
      await rest('POST', `/classes/${cls}`, { objectId: `${cls.slice(0, 8)}_2`, label: 'y' });
    }
    const acl = page.getByTestId('class-toolbar').getByRole('button', { name: /^ACL/ });
    const place = async (cls: string, select: boolean) => {
      await openClass(page, cls);
      if (select) {
        await ui.selectRow(page, `${cls.slice(0, 8)}_1`).check();
        await ui.selectRow(page, `${cls.slice(0, 8)}_2`).check();
      }
      const toolbar = page.getByTestId('class-toolbar');
      const middles = await toolbar.locator('button, label').evaluateAll((els) => [
        ...new Set(
          els.map((e) => {
            const r = e.getBoundingClientRect();
            return Math.round(r.top + r.height / 2);
          }),
        ),
      ]);
      // Every control of the toolbar on one line, and all of them in view at 1280 px.
      expect(middles.length).toBe(1);
      expect(await toolbar.evaluate((el) => [el.scrollWidth <= el.clientWidth, el.scrollWidth])).toEqual([
        true,
        expect.any(Number),
      ]);
      const box = (await acl.boundingBox())!;
      return [Math.round(box.x), Math.round(box.y)];
    };
    const first = await place('Ab', false);
    expect(await place(long, false)).toEqual(first);
    expect(await place(long, true)).toEqual(first);
    expect(await place('Ab', true)).toEqual(first);
    await admin.screenshot('safety-toolbar');
  });

  it('an empty class says "No rows" and offers Add row and Import', async () => {
    const { page } = admin;
    await rest('POST', '/schemas/Empty', { className: 'Empty', fields: { label: { type: 'String' } } });
    await page.goto(dataUrl('Empty'));
    const empty = page.getByTestId('empty-class');
    await empty.waitFor();
    expect(await empty.getByText('No rows', { exact: true }).count()).toBe(1);
    expect(await page.getByTestId('row-count').textContent()).toBe('0 rows');
    expect(await empty.getByLabel('import a file', { exact: true }).count()).toBe(1);
    await admin.screenshot('safety-empty-class');
    await empty.getByRole('button', { name: 'Add the first row' }).click();
    await page.getByTestId('row-detail').waitFor();
    await expect.poll(() => page.getByTestId('row-count').textContent(), POLL).toBe('1 row');
    await expect.poll(() => gridRows(page).count(), POLL).toBe(1);
    expect(await empty.count()).toBe(0);
  });

  it('import progress shows the real total from the start, never "0 of ~1 rows"', async () => {
    const { page } = admin;
    await rest('POST', '/schemas/Progress', { className: 'Progress', fields: { n: { type: 'Number' } } });
    const lines = ['n', ...Array.from({ length: 3000 }, (_, i) => String(i))];
    const file = path.join(tmp, 'progress.csv');
    writeFileSync(file, `${lines.join('\n')}\n`);
    await page.goto(dataUrl('Progress'));
    await page.getByTestId('grid').waitFor();
    await page.evaluate(`(() => {
      const texts = (window.__texts = []);
      new MutationObserver(() => {
        const t = document.querySelector('[data-testid="transfer-progress"]')?.textContent;
        if (t && texts[texts.length - 1] !== t) texts.push(t);
      }).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
    })()`);
    await ui.importFile(page).setInputFiles(file);
    await page.getByTestId('import-summary').waitFor();
    const texts = await page.evaluate<string[]>('window.__texts');
    expect(texts.length).toBeGreaterThan(0);
    expect(texts[0]).toBe('Importing progress.csv0 of 3,000 rows written');
    for (const t of texts) expect(t).toMatch(/^Importing progress\.csv[\d,]+ of 3,000 rows written$/);
    expect(await page.getByTestId('import-summary').textContent()).toContain(
      'Imported 3,000 rows; rejected 0.',
    );
  });

  it('the audit filter "row" finds rows.import and the bulk entries too', async () => {
    const { page } = admin;
    await page.goto(`/apps/${product.appId}/audit?action=row`);
    await page.getByTestId('audit-row').first().waitFor();
    const actions = await page.getByTestId('audit-action').allTextContents();
    expect(actions).toContain('rows.import');
    expect(actions).toContain('rows.bulkDelete');
    expect(actions).toContain('row.update');
    expect(actions.every((a) => a.startsWith('row.') || a.startsWith('rows.'))).toBe(true);
  });
});
