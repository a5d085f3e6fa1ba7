import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedRows } from './data-browser-seed.ts';
import { launchBrowser, login, openSession, type Session } from './helpers/browser.ts';
import { type Product, startProduct } from './helpers/product.ts';

/**
 * The data browser tried as a new user would (issue 12): each test drives a defect's fix or a
 * daily-use feature in Chromium, against the real service and bff.
 */

let product: Product;
let browser: Browser;
let admin: Session;
let tmp: string;
const MANY = 12_000; // above LARGE_CLASS_ROWS (10,000): the sort notice shows
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

async function openClass(page: Page, cls: string, qs = ''): Promise<void> {
  await page.goto(dataUrl(cls, qs));
  await firstRow(page).waitFor();
}

/**
 * Records, in the page, each value the import progress bar shows (`data-done`) and the class's
 * row count asked for right after it was shown.
 */
const PROGRESS_PROBE = (countUrl: string) => `(() => {
  const samples = (window.__progress = []);
  let last = null;
  new MutationObserver(() => {
    const v = document.querySelector('[data-testid="transfer-progress"]')?.getAttribute('data-done');
    if (v === null || v === undefined || v === last) return;
    last = v;
    const sample = { done: Number(v), count: null };
    samples.push(sample);
    fetch(${JSON.stringify(countUrl)})
      .then((r) => r.json())
      .then((j) => { sample.count = j.count; }, () => { sample.count = -1; });
  }).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-done'] });
})()`;
/** The probe's samples, once every count has come back. */
const PROGRESS_SAMPLES = `new Promise((resolve) => {
  const check = () =>
    window.__progress.every((x) => x.count !== null) ? resolve(window.__progress) : setTimeout(check, 50);
  check();
})`;

/** The console's audit log as the logged-in page sees it. */
async function auditEntries(page: Page, action: string): Promise<any[]> {
  return page.evaluate(
    async (a) =>
      ((await (await fetch(`/bff/audit?action=${a}&limit=1000`)).json()) as { results: any[] }).results,
    action,
  );
}

beforeAll(async () => {
  product = await startProduct();
  browser = await launchBrowser();
  tmp = mkdtempSync(path.join(tmpdir(), 'bds-e2e-daily-'));
  await rest('POST', '/schemas/Owner', { className: 'Owner', fields: { name: { type: 'String' } } });
  ownerId = (await rest('POST', '/classes/Owner', { name: 'Ada' })).objectId;
  await rest('POST', '/schemas/Pet', {
    className: 'Pet',
    fields: {
      name: { type: 'String' },
      n: { type: 'Number' },
      owner: { type: 'Pointer', targetClass: 'Owner' },
      meta: { type: 'Object' },
    },
  });
  for (const [i, name] of ['Max', 'Bella', 'Coco'].entries())
    await rest('POST', '/classes/Pet', { name, n: i, meta: { i } });
  await rest('POST', '/schemas/Many', {
    className: 'Many',
    fields: {
      i: { type: 'Number' },
      owner: { type: 'Pointer', targetClass: 'Owner' },
      meta: { type: 'Object' },
    },
  });
  await seedRows(product.service, 'Many', MANY, (i) => ({ i: MANY - i, meta: { i } }));
  admin = await openSession(browser, product, { timezoneId: 'UTC' });
  await login(admin.page);
}, 120_000);

afterAll(async () => {
  await admin?.close();
  await browser?.close();
  await product?.close();
  rmSync(tmp, { recursive: true, force: true });
});

describe('defects', () => {
  it('Refresh (with an unchanged row count) shows the rows again, no skeletons', async () => {
    const { page } = admin;
    await openClass(page, 'Pet');
    const requests: string[] = [];
    page.on('request', (r) => r.url().includes('/classes/Pet?') && requests.push(r.url()));
    await page.getByRole('button', { name: 'Refresh' }).click();
    await expect.poll(() => requests.length, POLL).toBeGreaterThan(0);
    await firstRow(page).waitFor();
    await expect.poll(() => page.locator('[data-placeholder]').count(), POLL).toBe(0);
    expect(await page.locator('[data-testid="grid"] [data-row-id]').count()).toBe(3);
  });

  it('bulk edit and Clone: one audit entry each, and the grid shows the rows afterwards', async () => {
    const { page } = admin;
    await rest('POST', '/schemas/Bulk', {
      className: 'Bulk',
      fields: { name: { type: 'String' }, n: { type: 'Number' } },
    });
    // objectIds of our choosing (the master key may set them): the grid's order is this one.
    const ids = ['bulk_a', 'bulk_b', 'bulk_c', 'bulk_d'];
    for (const [i, objectId] of ids.entries())
      await rest('POST', '/classes/Bulk', { objectId, name: `b${i}`, n: i });
    const ofBulk = async (action: string) =>
      (await auditEntries(page, action)).filter((e) => e.target === 'Bulk' || e.target.startsWith('Bulk/'));
    await openClass(page, 'Bulk');
    const requests: string[] = [];
    page.on('request', (r) => r.url().includes('/classes/Bulk?') && requests.push(r.url()));
    const gridRows = page.locator('[data-testid="grid"] [data-row-id]');

    // Bulk edit: n = 7 on the first and third rows.
    await page.getByLabel(`select ${ids[0]}`).check();
    await page.getByLabel(`select ${ids[2]}`).check();
    await page.getByLabel('bulk edit column').selectOption('n');
    await page.getByLabel('bulk edit value').fill('7');
    await page.getByRole('button', { name: 'on 2 rows', exact: true }).click();
    await page.getByTestId('toast-success').filter({ hasText: 'Updated 2 rows' }).waitFor();
    // The rows come back (asked anew, no skeletons left), with the new values.
    await expect.poll(() => requests.length, POLL).toBeGreaterThan(0);
    await expect.poll(() => cell(page, ids[0], 'n').textContent(), POLL).toBe('7');
    await expect.poll(() => cell(page, ids[2], 'n').textContent(), POLL).toBe('7');
    expect(await cell(page, ids[1], 'n').textContent()).toBe('1');
    await expect.poll(() => page.locator('[data-placeholder]').count(), POLL).toBe(0);
    expect(await gridRows.count()).toBe(4);
    expect(
      (await rest('GET', '/classes/Bulk?where={"n":7}&order=objectId')).results.map((r: any) => r.objectId),
    ).toEqual(['bulk_a', 'bulk_c']);
    const updates = await ofBulk('rows.bulkUpdate');
    expect(
      updates.map((e) => [
        e.user,
        e.before,
        { field: e.after.field, value: e.after.value, succeeded: e.after.succeeded, failed: e.after.failed },
      ]),
    ).toEqual([
      [
        'admin',
        { field: 'n', values: { bulk_a: 0, bulk_c: 2 } },
        { field: 'n', value: 7, succeeded: 2, failed: 0 },
      ],
    ]);
    expect(await ofBulk('row.update')).toEqual([]);

    // Clone the same two rows: one bulk create.
    requests.length = 0;
    await page.getByRole('button', { name: 'Clone 2', exact: true }).click();
    await page.getByTestId('toast-success').filter({ hasText: 'Cloned 2 rows' }).waitFor();
    await expect.poll(() => page.getByTestId('row-count').textContent(), POLL).toBe('6 rows');
    await expect.poll(() => gridRows.count(), POLL).toBe(6);
    await expect.poll(() => page.locator('[data-placeholder]').count(), POLL).toBe(0);
    expect(requests.length).toBeGreaterThan(0);
    const copies = (await rest('GET', '/classes/Bulk?where={"n":7}')).results;
    expect(copies.map((r: any) => r.name).sort()).toEqual(['b0', 'b0', 'b2', 'b2']);
    const creates = await ofBulk('rows.bulkCreate');
    expect(creates.map((e) => [e.user, e.before, e.after.succeeded, e.after.failed])).toEqual([
      ['admin', null, 2, 0],
    ]);
    expect(await ofBulk('row.create')).toEqual([]);
    await admin.screenshot('daily-bulk-edit-clone');
  });

  it('cell editors draw above the rows below: pointer suggestions and the JSON Save are clickable', async () => {
    const { page } = admin;
    await openClass(page, 'Many');
    const id = (await firstRow(page).getAttribute('data-row-id'))!;
    await cell(page, id, 'owner').focus();
    await page.keyboard.press('Enter');
    const suggestion = page.getByRole('button', { name: ownerId, exact: true });
    // A click lands only on an element that is not covered (Playwright checks the hit target).
    await suggestion.click({ timeout: 5000 });
    await expect
      .poll(async () => (await rest('GET', `/classes/Many/${id}`)).owner?.objectId, POLL)
      .toBe(ownerId);

    await cell(page, id, 'meta').dblclick();
    await page.getByTestId('cell-editor').fill('{"edited": true}');
    expect(await page.getByText('Ctrl+Enter saves, Esc cancels').count()).toBe(1);
    await page.getByRole('button', { name: 'Save', exact: true }).click({ timeout: 5000 });
    await expect
      .poll(async () => (await rest('GET', `/classes/Many/${id}`)).meta, POLL)
      .toEqual({ edited: true });

    // A cell in the last fully visible row opens its editor upwards, inside the grid.
    const gridBottom = await page
      .getByTestId('grid')
      .evaluate((el) => el.getBoundingClientRect().top + el.clientHeight);
    const rows = page.locator('[data-testid="grid"] [data-row-id]');
    let low = '';
    let lowest = 0;
    for (const r of await rows.all()) {
      const box = await r.boundingBox();
      const bottom = box ? box.y + box.height : 0;
      if (bottom <= gridBottom && bottom > lowest) {
        lowest = bottom;
        low = (await r.getAttribute('data-row-id'))!;
      }
    }
    // (dispatched: a pointer double-click may first scroll the cell to the middle)
    await cell(page, low, 'meta').dispatchEvent('dblclick');
    const editor = page.locator('[data-opens]');
    expect(await editor.getAttribute('data-opens')).toBe('up');
    await page.getByRole('button', { name: 'Save', exact: true }).click({ timeout: 5000 });
    await admin.screenshot('daily-editor-up');
  });

  it('filter builder: list operators stick, bad values are refused with a message, refused queries show the error', async () => {
    const { page } = admin;
    await openClass(page, 'Pet');
    await page.getByRole('button', { name: /^Filter/ }).click();
    const fb = page.getByTestId('filter-builder');
    await fb.getByRole('button', { name: '+ condition' }).click();
    await fb.getByLabel('field', { exact: true }).fill('n');
    for (const op of ['$in', '$nin', '$all', '$containedBy']) {
      await fb.getByLabel('operator', { exact: true }).selectOption(op);
      expect(await fb.getByLabel('operator', { exact: true }).inputValue()).toBe(op);
    }
    await fb.getByLabel('value').fill('[0, 2]');
    await fb.getByLabel('operator', { exact: true }).selectOption('$in');
    await fb.getByRole('button', { name: 'Apply filter' }).click();
    await expect.poll(() => page.getByTestId('row-count').textContent(), POLL).toBe('2 rows');

    await page.getByRole('button', { name: /^Filter/ }).waitFor();
    const fb2 = page.getByTestId('filter-builder');
    await fb2.getByLabel('operator', { exact: true }).selectOption('$eq');
    await fb2.getByLabel('value').fill('abc');
    const before = page.url();
    await fb2.getByRole('button', { name: 'Apply filter' }).click();
    await expect
      .poll(() => fb2.getByRole('alert').textContent(), POLL)
      .toBe('Not applied: n: "abc" is not a number');
    expect(page.url()).toBe(before);
    expect(await fb2.getByLabel('value').inputValue()).toBe('abc');

    await fb2.getByRole('button', { name: 'JSON', exact: true }).click();
    await fb2.getByLabel('where JSON').fill('{"n":{"$bogus":1}}');
    await fb2.getByRole('button', { name: 'Apply filter' }).click();
    const refused = await product.rest(
      'GET',
      `/classes/Pet?where=${encodeURIComponent('{"n":{"$bogus":1}}')}`,
    );
    expect(refused.status).toBe(400);
    const shown = `Error ${refused.json.code}: ${refused.json.error}`;
    await expect.poll(() => page.getByTestId('rows-error').textContent(), POLL).toBe(shown);
    await expect
      .poll(() => page.getByTestId('row-count').textContent(), POLL)
      .toBe(`count refused: ${shown}`);
    expect(await page.locator('[data-placeholder]').count()).toBe(0);
    await admin.screenshot('daily-filter-refused');
  });

  it('imports a CSV into a new class: types inferred and mapped, progress in rows written, rejected rows by file line, one audit entry', async () => {
    const { page } = admin;
    await rest('POST', '/schemas/Imported', { className: 'Imported' });
    const lines = ['n,label,when,flag,note,extra'];
    for (let i = 0; i < 3000; i++) {
      const n = i === 5 ? 'x' : i === 2000 ? 'y' : String(i);
      // Row 3's note spans two lines: the rows after it keep their true line numbers.
      const note = i === 3 ? '"two\nlines"' : `note ${i}`;
      lines.push(`${n},item ${i},2024-01-0${(i % 9) + 1}T10:00:00Z,${i % 2 === 0},${note},drop`);
    }
    const file = path.join(tmp, 'new-class.csv');
    writeFileSync(file, `${lines.join('\n')}\n`);
    const importsBefore = (await auditEntries(page, 'rows.import')).length;

    await page.goto(dataUrl('Imported'));
    await page.getByTestId('grid').waitFor();
    await page.getByLabel('import file').setInputFiles(file);
    const mapping = page.getByTestId('import-mapping');
    await mapping.waitFor();
    const typeOf = (c: string) => mapping.getByLabel(`type of ${c}`, { exact: true }).inputValue();
    expect(await typeOf('n')).toBe('String'); // "x" in the sample: no single type fits but String
    expect(await typeOf('label')).toBe('String');
    expect(await typeOf('when')).toBe('Date');
    expect(await typeOf('flag')).toBe('Boolean');
    await mapping.getByLabel('type of n', { exact: true }).selectOption('Number');
    await mapping.getByLabel('type of extra').selectOption('skip');
    await admin.screenshot('daily-import-mapping');
    // Every value the progress bar shows, each with the class's row count asked right after it
    // was shown (a MutationObserver in the page: no value is missed, however fast the import).
    await page.evaluate(PROGRESS_PROBE(`/bff/apps/${product.appId}/classes/Imported/count`));
    await page.getByRole('button', { name: 'Import', exact: true }).click();
    const summary = page.getByTestId('import-summary');
    await summary.waitFor();
    expect(await summary.textContent()).toContain('Imported 2,998 rows; rejected 2.');
    // Progress counts rows written, not bytes: it starts at 0, only grows, shows a value between
    // (chunks of 500 rows), never more rows than the class had by then, and ends at the rows
    // written (the 2 rows with a bad cell are never sent).
    const samples = await page.evaluate<Array<{ done: number; count: number }>>(PROGRESS_SAMPLES);
    const done = samples.map((x) => x.done);
    expect(samples.length).toBeGreaterThanOrEqual(3);
    expect(done[0]).toBe(0);
    expect(done).toEqual([...done].sort((a, b) => a - b));
    expect(done.at(-1)).toBe(2998);
    expect(done.filter((d) => d > 0 && d < 2998).length).toBeGreaterThan(0);
    for (const x of samples) expect(x.done).toBeLessThanOrEqual(x.count);
    // Header line 1, row i on line i + 2, one more after the two-line note of row 3.
    expect(await page.getByTestId('rejected-rows').textContent()).toBe(
      'line 8: n: "x" is not a numberline 2003: n: "y" is not a number',
    );
    const schema = await rest('GET', '/schemas/Imported');
    expect(schema.fields).toMatchObject({
      n: { type: 'Number' },
      label: { type: 'String' },
      when: { type: 'Date' },
      flag: { type: 'Boolean' },
      note: { type: 'String' },
    });
    expect(schema.fields.extra).toBeUndefined();
    const row3 = (await rest('GET', '/classes/Imported?where={"n":3}')).results[0];
    expect(row3).toMatchObject({
      note: 'two\nlines',
      flag: false,
      when: { __type: 'Date', iso: '2024-01-04T10:00:00.000Z' },
    });
    expect((await rest('GET', '/classes/Imported?count=1&limit=0')).count).toBe(2998);
    // One audit entry for the import (plus one per added column), none per row.
    const imports = await auditEntries(page, 'rows.import');
    expect(imports.length).toBe(importsBefore + 1);
    expect(imports[0]).toMatchObject({
      target: 'Imported',
      after: { created: 2998, rejectedCount: 2, addedFields: ['n', 'label', 'when', 'flag', 'note'] },
    });
    expect(imports[0].after.rejected.map((r: { line: number }) => r.line)).toEqual([8, 2003]);
    expect(imports[0].after.unknownColumns).toEqual([]);
    expect((await auditEntries(page, 'row.create')).length).toBe(0);
    // Each column the import added is audited with its type (newest first), the skipped one not.
    const added = (await auditEntries(page, 'schema.addField')).filter((e) =>
      e.target.startsWith('Imported.'),
    );
    expect(added.map((e) => [e.target, e.user, e.before, e.after])).toEqual([
      ['Imported.note', 'admin', null, { type: 'String' }],
      ['Imported.flag', 'admin', null, { type: 'Boolean' }],
      ['Imported.when', 'admin', null, { type: 'Date' }],
      ['Imported.label', 'admin', null, { type: 'String' }],
      ['Imported.n', 'admin', null, { type: 'Number' }],
    ]);
    // The class list's count is fresh.
    await expect.poll(() => page.getByTestId('count-Imported').textContent(), POLL).toBe('2,998');
    await admin.screenshot('daily-import-summary');
  });

  it('imports JSON: an entry that is not an object is reported by line, objectIds kept on request', async () => {
    const { page } = admin;
    const text = [
      '[',
      '  {"objectId": "keep_a", "name": "A", "n": 1},',
      '  42,',
      '  {"objectId": "keep_b", "name": "B",',
      '   "n": "not a number"},',
      '  {"objectId": "keep_c", "name": "C", "n": 3}',
      ']',
    ].join('\n');
    const file = path.join(tmp, 'pets.json');
    writeFileSync(file, text);
    // A class of its own (Pet is for the other tests): two rows already there.
    await rest('POST', '/schemas/PetJson', {
      className: 'PetJson',
      fields: { name: { type: 'String' }, n: { type: 'Number' } },
    });
    for (const [i, name] of ['Old 1', 'Old 2'].entries())
      await rest('POST', '/classes/PetJson', { name, n: i });
    await openClass(page, 'PetJson');
    await page.getByLabel('import file').setInputFiles(file);
    await page.getByTestId('import-mapping').waitFor();
    await page.getByLabel('Keep the objectIds from the file').check();
    await page.getByRole('button', { name: 'Import', exact: true }).click();
    const summary = page.getByTestId('import-summary');
    await summary.waitFor();
    expect(await summary.textContent()).toContain('Imported 2 rows; rejected 2.');
    const rejected = (await page.getByTestId('rejected-rows').locator('li').allTextContents()).map((t) =>
      t.replace(/: Error 111: .*/, ': Error 111'),
    );
    expect(rejected).toEqual(['line 3: not a JSON object (a number)', 'line 4: Error 111']);
    expect((await rest('GET', '/classes/PetJson/keep_a')).name).toBe('A');
    expect((await rest('GET', '/classes/PetJson/keep_c')).name).toBe('C');
    expect((await product.rest('GET', '/classes/PetJson/keep_b')).status).toBe(404);
    expect((await rest('GET', '/classes/PetJson?count=1&limit=0')).count).toBe(4);
    expect(await page.getByTestId('unknown-columns').count()).toBe(0);
  });

  it('imports JSON: a Vector column takes its dimension in the mapping step; fields first seen past the sample are reported', async () => {
    const { page } = admin;
    await rest('POST', '/schemas/Vec', { className: 'Vec', fields: { name: { type: 'String' } } });
    // 205 entries, entry i on line i + 2; "colour" first appears in entry 202 (line 204), after
    // the 200 rows the mapping step reads.
    const entries = Array.from({ length: 205 }, (_, i) =>
      JSON.stringify({ name: `v${i}`, emb: [i, i + 1, i + 2], ...(i >= 202 ? { colour: 'red' } : {}) }),
    );
    const file = path.join(tmp, 'vectors.json');
    writeFileSync(file, `[\n${entries.join(',\n')}\n]\n`);
    const importsBefore = (await auditEntries(page, 'rows.import')).length;
    await page.goto(dataUrl('Vec'));
    await page.getByTestId('grid').waitFor();
    await page.getByLabel('import file').setInputFiles(file);
    const mapping = page.getByTestId('import-mapping');
    await mapping.waitFor();
    expect(await mapping.locator('[data-new-column]').count()).toBe(1);
    const type = mapping.getByLabel('type of emb', { exact: true });
    expect(await type.inputValue()).toBe('Array');
    await type.selectOption('Vector');
    // The dimension is proposed from the sampled arrays; without a usable one, no import.
    const dimension = mapping.getByLabel('dimension of emb');
    expect(await dimension.inputValue()).toBe('3');
    const importButton = page.getByRole('button', { name: 'Import', exact: true });
    await dimension.fill('0');
    expect(await mapping.getByRole('alert').textContent()).toBe(
      'The dimension of emb must be a whole number from 1 to 4096.',
    );
    expect(await importButton.isDisabled()).toBe(true);
    await dimension.fill('3');
    expect(await mapping.getByRole('alert').count()).toBe(0);
    await admin.screenshot('daily-import-vector');
    await importButton.click();
    const summary = page.getByTestId('import-summary');
    await summary.waitFor();
    expect(await summary.textContent()).toContain('Imported 205 rows; rejected 0.');
    expect(await page.getByTestId('unknown-columns').textContent()).toBe(
      'Left out, Vec has no column for: colour (first on line 204, 3 rows). Add the column and import those rows again to keep them.',
    );
    expect((await rest('GET', '/schemas/Vec')).fields.emb).toEqual({ type: 'Vector', dimension: 3 });
    expect((await rest('GET', '/classes/Vec?where={"name":"v203"}')).results[0]).toMatchObject({
      name: 'v203',
      emb: [203, 204, 205],
    });
    expect((await rest('GET', '/classes/Vec?where={"name":"v203"}')).results[0].colour).toBeUndefined();
    const imports = await auditEntries(page, 'rows.import');
    expect(imports.length).toBe(importsBefore + 1);
    expect(imports[0]).toMatchObject({
      target: 'Vec',
      after: {
        file: 'vectors.json',
        created: 205,
        rejectedCount: 0,
        addedFields: ['emb'],
        unknownColumns: [{ name: 'colour', line: 204, rows: 3 }],
      },
    });
    const added = (await auditEntries(page, 'schema.addField')).filter((e) => e.target === 'Vec.emb');
    expect(added.map((e) => [e.before, e.after])).toEqual([[null, { type: 'Vector', dimension: 3 }]]);
    await admin.screenshot('daily-import-unknown-columns');
  });

  it('creates roles and users with their own forms', async () => {
    const { page } = admin;
    await page.goto(dataUrl('_Role'));
    await page.getByTestId('grid').waitFor();
    await page.getByRole('button', { name: 'Add row' }).click();
    await page.getByRole('dialog').getByRole('textbox').fill('editors');
    await page.getByRole('button', { name: 'Create role' }).click();
    await page.getByTestId('row-detail').waitFor();
    expect((await rest('GET', '/classes/_Role?where={"name":"editors"}')).results).toHaveLength(1);

    await page.goto(dataUrl('_User'));
    await page.getByTestId('grid').waitFor();
    await page.getByRole('button', { name: 'Add row' }).click();
    const form = page.getByRole('dialog');
    await form.getByLabel('Username').fill('grace');
    await form.getByLabel('Password').fill('a long password 1');
    await form.getByLabel('Email (optional)').fill('grace@example.com');
    await admin.screenshot('daily-create-user');
    await page.getByRole('button', { name: 'Create user' }).click();
    await page.getByTestId('row-detail').waitFor();
    const users = (await rest('GET', '/classes/_User?where={"username":"grace"}')).results;
    expect(users).toHaveLength(1);
    expect(users[0].email).toBe('grace@example.com');
    const loginRes = await product.rest(
      'POST',
      '/login',
      { username: 'grace', password: 'a long password 1' },
      'rest',
    );
    expect(loginRes.status).toBe(200);
  });

  it('sorts by any sortable column; a large class without an index says so and offers the index', async () => {
    const { page } = admin;
    await openClass(page, 'Pet');
    await page.locator('[data-column="name"] button').first().click();
    await page.waitForURL(/sort=name(&|$)/);
    const byName = (await rest('GET', '/classes/Pet?order=name,objectId&limit=1')).results[0].objectId;
    await expect.poll(() => firstRow(page).getAttribute('data-row-id'), POLL).toBe(byName);
    expect(await page.getByTestId('sort-notice').count()).toBe(0);
    expect(await page.locator('[data-column="meta"]').getAttribute('title')).toContain(
      'Object columns cannot be sorted',
    );

    await openClass(page, 'Many');
    await page.locator('[data-column="i"] button').first().click();
    await page.waitForURL(/sort=i(&|$)/);
    const notice = page.getByTestId('sort-notice');
    await notice.waitFor();
    expect(await notice.textContent()).toContain(`No index on i: sorting ${MANY.toLocaleString()} rows`);
    const lowest = (await rest('GET', '/classes/Many?order=i,objectId&limit=1')).results[0].objectId;
    await expect.poll(() => firstRow(page).getAttribute('data-row-id'), POLL).toBe(lowest);
    await admin.screenshot('daily-sort-notice');
    await notice.getByRole('button', { name: 'Create index on i' }).click();
    await notice.waitFor({ state: 'detached' });
    expect((await rest('GET', '/schemas/Many')).indexes.i_1).toEqual({ i: 1 });
  });

  it('class list counts refresh after rows are added', async () => {
    const { page } = admin;
    await rest('POST', '/schemas/Fresh', { className: 'Fresh', fields: { a: { type: 'String' } } });
    await page.goto(dataUrl('Fresh'));
    await page.getByTestId('grid').waitFor();
    await expect.poll(() => page.getByTestId('count-Fresh').textContent(), POLL).toBe('0');
    await page.getByRole('button', { name: 'Add row' }).click();
    await expect.poll(() => page.getByTestId('count-Fresh').textContent(), POLL).toBe('1');
    await expect.poll(() => page.getByTestId('row-count').textContent(), POLL).toBe('1 row');
  });
});

describe('polish', () => {
  it('edits in the row panel, moves between cells with the arrow keys, Escape closes the panel, all listed under ?', async () => {
    const { page } = admin;
    await openClass(page, 'Pet');
    const ids = (await rest('GET', '/classes/Pet?order=objectId&limit=2')).results.map(
      (r: any) => r.objectId,
    );
    await cell(page, ids[0], 'objectId').click();
    const panel = page.getByTestId('row-detail');
    await panel.waitFor();
    await panel.getByRole('button', { name: 'edit name' }).click();
    await panel.getByTestId('cell-editor').fill('Edited in panel');
    await page.keyboard.press('Enter');
    await expect
      .poll(async () => (await rest('GET', `/classes/Pet/${ids[0]}`)).name, POLL)
      .toBe('Edited in panel');
    await expect.poll(() => cell(page, ids[0], 'name').textContent(), POLL).toBe('Edited in panel');
    await expect
      .poll(() => panel.locator('[data-detail-field="name"] dd').textContent(), POLL)
      .toContain('Edited in panel');
    await admin.screenshot('daily-row-panel-edit');
    await page.keyboard.press('Escape');
    await panel.waitFor({ state: 'detached' });

    await cell(page, ids[0], 'name').focus();
    await page.keyboard.press('ArrowDown');
    // (strings: this file is type-checked without the DOM library)
    const focused = () =>
      page.evaluate<string>(
        "document.activeElement.closest('[data-row-id]')?.dataset.rowId + '/' + document.activeElement.dataset.field",
      );
    await expect.poll(focused, POLL).toBe(`${ids[1]}/name`);
    await page.keyboard.press('ArrowRight');
    await expect.poll(focused, POLL).toBe(`${ids[1]}/n`);
    await page.keyboard.press('ArrowUp');
    await expect.poll(focused, POLL).toBe(`${ids[0]}/n`);
    await page.keyboard.press('ArrowLeft');
    await expect.poll(focused, POLL).toBe(`${ids[0]}/name`);
    await page.keyboard.press('Enter');
    await page.getByTestId('cell-editor').waitFor();
    await page.keyboard.press('Escape');
    await expect.poll(focused, POLL).toBe(`${ids[0]}/name`);

    await page.locator('body').click({ position: { x: 5, y: 5 } });
    await page.keyboard.press('?');
    const help = page.getByRole('dialog', { name: 'Keyboard shortcuts' });
    await help.waitFor();
    for (const text of ['Move between cells', 'Edit the focused cell'])
      expect(await help.getByText(text).count()).toBe(1);
    await page.keyboard.press('Escape');
  });

  it('Escape in a row panel editor (Boolean, JSON, text) cancels the edit and leaves the panel open; a second Escape closes it', async () => {
    const { page } = admin;
    await rest('POST', '/schemas/PanelKeys', {
      className: 'PanelKeys',
      fields: { flag: { type: 'Boolean' }, meta: { type: 'Object' }, label: { type: 'String' } },
    });
    const id = (await rest('POST', '/classes/PanelKeys', { flag: true, meta: { a: 1 }, label: 'kept' }))
      .objectId;
    await openClass(page, 'PanelKeys');
    await cell(page, id, 'objectId').click();
    const panel = page.getByTestId('row-detail');
    await panel.waitFor();
    for (const [field, typed] of [
      ['flag', null],
      ['meta', '{"a": 2}'],
      ['label', 'changed'],
    ] as const) {
      await panel.getByRole('button', { name: `edit ${field}` }).click();
      const editor = panel.getByTestId('cell-editor');
      await editor.waitFor();
      if (typed !== null) await editor.fill(typed);
      await editor.press('Escape');
      await editor.waitFor({ state: 'detached' });
      // The panel stays, showing the field as it was, with its edit button back.
      expect(await panel.isVisible()).toBe(true);
      expect(new URL(page.url()).searchParams.get('row')).toBe(id);
      await panel.getByRole('button', { name: `edit ${field}` }).waitFor();
    }
    expect(await panel.locator('[data-detail-field="flag"] dd').textContent()).toContain('true');
    expect(await panel.locator('[data-detail-field="label"] dd').textContent()).toContain('kept');
    expect(await rest('GET', `/classes/PanelKeys/${id}`)).toMatchObject({
      flag: true,
      meta: { a: 1 },
      label: 'kept',
    });
    // Nothing is being edited now: Escape closes the panel.
    await page.keyboard.press('Escape');
    await panel.waitFor({ state: 'detached' });
    expect(new URL(page.url()).searchParams.get('row')).toBeNull();
  });

  it('toasts stay few and short, headers show objectId whole and a drawn pin', async () => {
    const { page } = admin;
    await openClass(page, 'Pet');
    await page.getByRole('button', { name: 'Schema' }).click();
    await page.getByLabel('column name').fill('nickname');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    const toast = page.getByTestId('toast-success').last();
    await toast.waitFor();
    expect(await toast.textContent()).toBe('Add column nickname: done×');
    // A Vector column takes its dimension.
    await page.getByLabel('column name').fill('embedding');
    await page.getByLabel('column type').selectOption('Vector');
    await page.getByLabel('vector dimension').fill('3');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    await expect
      .poll(async () => (await rest('GET', '/schemas/Pet')).fields.embedding, POLL)
      .toEqual({ type: 'Vector', dimension: 3 });
    const ids = (await rest('GET', '/classes/Pet?order=objectId&limit=3')).results.map(
      (r: any) => r.objectId,
    );
    for (let k = 0; k < 5; k++) {
      await cell(page, ids[k % 3], 'n').dblclick();
      await page.getByTestId('cell-editor').fill(String(100 + k));
      await page.keyboard.press('Enter');
      await page.getByTestId('cell-editor').waitFor({ state: 'detached' });
    }
    await expect.poll(async () => (await rest('GET', `/classes/Pet/${ids[1]}`)).n, POLL).toBe(104);
    expect(await page.locator('[data-testid^="toast-"]').count()).toBeLessThanOrEqual(3);

    const header = page.locator('[data-column="objectId"] button').first();
    const fits = await header.evaluate((el) => el.scrollWidth <= el.clientWidth);
    expect(fits).toBe(true);
    await page.locator('[data-column="name"]').hover();
    const pin = page.getByRole('button', { name: 'pin name' });
    expect(await pin.locator('svg[data-icon="pin"]').count()).toBe(1);
    await pin.click();
    await page.getByRole('button', { name: 'unpin name' }).waitFor();
    await admin.screenshot('daily-headers');
  });

  it('dark mode draws the console border colours, not white', async () => {
    const dark = await openSession(browser, product, { colorScheme: 'dark' });
    try {
      await login(dark.page);
      await openClass(dark.page, 'Pet');
      const colours = await dark.page.evaluate<string[]>(
        `[getComputedStyle(document.querySelector('header')).borderBottomColor,
          getComputedStyle(document.querySelector('[data-testid="grid"] [data-field="name"]')).borderRightColor]`,
      );
      expect(colours[1]).toBe(colours[0]);
      expect(colours[1]).not.toBe('rgb(255, 255, 255)');
      await dark.screenshot('daily-dark-borders');
    } finally {
      await dark.close();
    }
  });

  it('at 800 px wide the sections and the class list collapse, leaving the grid the width', async () => {
    const narrow = await openSession(browser, product);
    try {
      await login(narrow.page);
      await narrow.page.setViewportSize({ width: 800, height: 700 });
      await openClass(narrow.page, 'Pet');
      expect(await narrow.page.getByRole('navigation', { name: 'Sections' }).isVisible()).toBe(false);
      const grid = (await narrow.page.getByTestId('grid').boundingBox())!;
      expect(grid.width).toBeGreaterThan(700);
      await narrow.screenshot('daily-800px');
      await narrow.page.getByRole('button', { name: 'Show class list' }).click();
      await narrow.page
        .getByRole('navigation', { name: 'classes' })
        .getByRole('link', { name: 'Owner' })
        .waitFor();
      await narrow.page.getByRole('button', { name: 'Show sections' }).click();
      await narrow.page
        .getByRole('navigation', { name: 'Sections' })
        .getByRole('link', { name: 'Config' })
        .waitFor();
    } finally {
      await narrow.close();
    }
  });

  it('saved filters are kept by the bff: another console user sees them in another browser', async () => {
    const { page } = admin;
    // A class of its own: the other tests' edits of Pet change nothing here.
    await rest('POST', '/schemas/Saved', {
      className: 'Saved',
      fields: { name: { type: 'String' }, n: { type: 'Number' } },
    });
    for (const [name, n] of [
      ['small', 5],
      ['big', 100],
      ['bigger', 150],
    ] as const)
      await rest('POST', '/classes/Saved', { name, n });
    await openClass(page, 'Saved');
    await page.getByRole('button', { name: /^Filter/ }).click();
    const fb = page.getByTestId('filter-builder');
    await fb.getByRole('button', { name: 'JSON', exact: true }).click();
    await fb.getByLabel('where JSON').fill('{"n":{"$gte":100}}');
    await fb.getByLabel('saved filter name').fill('big n');
    await fb.getByRole('button', { name: 'Save filter' }).click();
    await fb.getByRole('button', { name: 'big n', exact: true }).waitFor();
    // A saved filter is its owner's until shared (trial-parity.e2e.test.ts).
    await fb.getByRole('button', { name: 'share saved filter big n' }).click();
    await fb.getByRole('button', { name: 'stop sharing saved filter big n' }).waitFor();
    const want = (await rest('GET', '/classes/Saved?where={"n":{"$gte":100}}&count=1&limit=0')).count;
    expect(want).toBe(2);

    const viewer = await openSession(browser, product);
    try {
      await login(viewer.page, 'viewer');
      await openClass(viewer.page, 'Saved');
      await viewer.page.getByRole('button', { name: /^Filter/ }).click();
      const chip = viewer.page.getByTestId('saved-filter');
      await chip.waitFor();
      expect(await chip.textContent()).toBe('big n(admin)');
      await chip.getByRole('button', { name: 'big n', exact: true }).click();
      await expect.poll(() => viewer.page.getByTestId('row-count').textContent(), POLL).toBe(`${want} rows`);
      expect(await viewer.page.getByLabel('delete saved filter big n').count()).toBe(0);
      await viewer.screenshot('daily-saved-filter-shared');
    } finally {
      await viewer.close();
    }
  });
});
