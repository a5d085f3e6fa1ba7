import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLOUD_MODULE } from '../server/test/helpers/cloud.ts';
import { launchBrowser, login, openSession, type Session } from './helpers/browser.ts';
import { type Product, startProduct } from './helpers/product.ts';

/**
 * The data browser and the Cloud section where admins expect the incumbent's dashboard (issue
 * "The console, tried as a new admin would", items 13 and 14): Relation and File cells edited from
 * the grid, a "Why?" on a hidden cell, saved filters per console user, every trigger per class,
 * and a function run on the selected rows.
 */
let product: Product;
let browser: Browser;
const sessions: Session[] = [];
const ids: Record<string, string> = {};
/** A 1x1 PNG. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

async function rest(method: string, p: string, body?: unknown): Promise<any> {
  const res = await product.rest(method, p, body);
  if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(res.json)}`);
  return res.json;
}

async function session(username = 'admin'): Promise<Page> {
  const s = await openSession(browser, product);
  sessions.push(s);
  await login(s.page, username);
  return s.page;
}

const cell = (page: Page, id: string, field: string) =>
  page.locator(`[data-row-id="${id}"] [data-field="${field}"]`);

async function openClass(page: Page, cls: string, qs = ''): Promise<void> {
  await page.goto(`/apps/${product.appId}/data/${cls}${qs}`);
  await page.locator('[data-testid="grid"] [data-index="1"][data-row-id]').waitFor();
}

/** The members of Team.members of a team, as the service has them. */
async function members(teamId: string): Promise<string[]> {
  const where = {
    $relatedTo: { object: { __type: 'Pointer', className: 'Team', objectId: teamId }, key: 'members' },
  };
  const res = await rest('GET', `/classes/Player?where=${encodeURIComponent(JSON.stringify(where))}`);
  return res.results.map((r: { objectId: string }) => r.objectId).sort();
}

const OPEN = { '*': true };

beforeAll(async () => {
  product = await startProduct({ service: { cloud: CLOUD_MODULE, hooks: { allowInsecureUrls: true } } });
  browser = await launchBrowser();
  await rest('POST', '/schemas/Player', { fields: { name: { type: 'String' } } });
  for (const name of ['ada', 'bo']) ids[name] = (await rest('POST', '/classes/Player', { name })).objectId;
  // Anyone may read teams; only the master key may change them.
  await rest('POST', '/schemas/Team', {
    fields: {
      name: { type: 'String' },
      members: { type: 'Relation', targetClass: 'Player' },
      logo: { type: 'File' },
    },
    classLevelPermissions: {
      find: OPEN,
      get: OPEN,
      count: OPEN,
      create: {},
      update: {},
      delete: {},
      addField: {},
    },
  });
  ids.team = (await rest('POST', '/classes/Team', { name: 'reds' })).objectId;
  // code is hidden from everyone but the master key.
  await rest('POST', '/schemas/Vault', {
    fields: { label: { type: 'String' }, code: { type: 'String' } },
    classLevelPermissions: {
      find: OPEN,
      get: OPEN,
      count: OPEN,
      create: OPEN,
      update: OPEN,
      delete: OPEN,
      addField: {},
      protectedFields: { '*': ['code'] },
    },
  });
  ids.vault = (await rest('POST', '/classes/Vault', { label: 'front door', code: '1234' })).objectId;
});

afterAll(async () => {
  for (const s of sessions) await s.close();
  await browser?.close();
  await product?.close();
});

describe('Relation cells: members added and removed from the grid', () => {
  it('adds a member by id, refuses an id that names no row, removes it; the service has each change', async () => {
    const page = await session();
    await openClass(page, 'Team');
    await page.getByRole('button', { name: `edit members of ${ids.team}` }).click();
    const editor = page.getByTestId('relation-editor');
    await editor.getByTestId('relation-empty').waitFor();
    await editor.getByLabel('add to members').fill(ids.ada!);
    await editor.getByRole('button', { name: 'Add', exact: true }).click();
    await expect
      .poll(() => editor.getByTestId('relation-member').allTextContents())
      .toEqual([`${ids.ada}Remove`]);
    expect(await members(ids.team!)).toEqual([ids.ada]);

    await editor.getByLabel('add to members').fill('zzzzzzzzzz');
    await editor.getByRole('button', { name: 'Add', exact: true }).click();
    await expect.poll(() => editor.getByRole('alert').textContent()).toBe('No Player row zzzzzzzzzz.');
    expect(await members(ids.team!)).toEqual([ids.ada]);

    await editor.getByLabel('add to members').fill(ids.bo!);
    await editor.getByRole('button', { name: 'Add', exact: true }).click();
    await expect.poll(() => editor.getByTestId('relation-member').count()).toBe(2);
    await sessions.at(-1)!.screenshot('trial-relation-editor');
    await editor.getByRole('button', { name: `remove ${ids.ada} from members` }).click();
    await expect.poll(() => members(ids.team!)).toEqual([ids.bo]);
    await expect
      .poll(() => editor.getByTestId('relation-member').allTextContents())
      .toEqual([`${ids.bo}Remove`]);
    await editor.getByRole('button', { name: 'close members' }).click();
    expect(await editor.count()).toBe(0);
  });

  it('viewing as anonymous, adding a member is a dry run refused by the CLP, as the API would refuse it', async () => {
    const page = await session();
    await openClass(page, 'Team', '?as=anonymous');
    await page.getByRole('button', { name: `edit members of ${ids.team}` }).click();
    const editor = page.getByTestId('relation-editor');
    await editor.getByLabel('add to members').fill(ids.ada!);
    await editor.getByRole('button', { name: 'Add', exact: true }).click();
    const dry = page.getByTestId('dry-run-result');
    await dry.waitFor();
    expect(await dry.getAttribute('data-status')).toBe('400');
    expect(await dry.textContent()).toContain(
      'Error 119: Permission denied for action update on class Team.',
    );
    expect(await members(ids.team!)).toEqual([ids.bo]);
  });
});

describe('File cells: upload or replace a file from the grid', () => {
  it('uploads into an empty cell, then replaces it; the row names the files the service issued', async () => {
    const page = await session();
    await openClass(page, 'Team');
    await page.getByRole('button', { name: `edit logo of ${ids.team}` }).click();
    await page
      .getByLabel('upload the file of logo')
      .setInputFiles({ name: 'red logo.png', mimeType: 'image/png', buffer: PNG });
    await expect
      .poll(async () => (await rest('GET', `/classes/Team/${ids.team}`)).logo?.name ?? '')
      .toMatch(/^[0-9a-f]{32}_red logo\.png$/);
    await expect
      .poll(() => cell(page, ids.team!, 'logo').getByTestId('file-value').textContent())
      .toBe('red logo.png');
    await page.getByRole('button', { name: `edit logo of ${ids.team}` }).click();
    await page
      .getByLabel('replace the file of logo')
      .setInputFiles({ name: 'blue.png', mimeType: 'image/png', buffer: PNG });
    await expect
      .poll(async () => (await rest('GET', `/classes/Team/${ids.team}`)).logo?.name ?? '')
      .toMatch(/^[0-9a-f]{32}_blue\.png$/);
    await expect
      .poll(() => cell(page, ids.team!, 'logo').getByTestId('file-value').textContent())
      .toBe('blue.png');
  });

  it('viewing as someone else, no upload is offered (it would be made with the master key)', async () => {
    const page = await session();
    await openClass(page, 'Team', '?as=anonymous');
    await page.getByRole('button', { name: `edit logo of ${ids.team}` }).click();
    await page.getByTestId('file-editor-viewas').waitFor();
    expect(await page.getByLabel(/the file of logo$/).count()).toBe(0);
  });
});

describe('a "Why?" on a grid cell the viewpoint does not get', () => {
  it('a protected cell says it is not shown, and its Why? names the protectedFields group that hides it', async () => {
    const page = await session();
    await openClass(page, 'Vault', '?as=anonymous');
    const code = cell(page, ids.vault!, 'code');
    await code.getByTestId('not-shown').waitFor();
    expect(await cell(page, ids.vault!, 'label').textContent()).toBe('front door');
    await code.getByRole('button', { name: `why code of ${ids.vault}` }).click();
    const hidden = page.getByTestId('why-field-hidden');
    await hidden.waitFor();
    expect(await hidden.textContent()).toBe('code is hidden from this viewpoint by these groups.');
    expect(await page.getByLabel('why operation').inputValue()).toBe('get');
    expect(await page.getByLabel('why objectId').inputValue()).toBe(ids.vault);
  });
});

describe('saved filters per console user', () => {
  it('a saved filter is its owner’s until shared; once shared, another console user sees it', async () => {
    const page = await session();
    await openClass(page, 'Player');
    await page.getByRole('button', { name: /^Filter/ }).click();
    const fb = page.getByTestId('filter-builder');
    await fb.getByRole('button', { name: 'JSON', exact: true }).click();
    await fb.getByLabel('where JSON').fill('{"name":"ada"}');
    await fb.getByLabel('saved filter name').fill('just ada');
    await fb.getByRole('button', { name: 'Save filter' }).click();
    await fb.getByRole('button', { name: 'share saved filter just ada' }).waitFor();

    const other = await session('viewer');
    await openClass(other, 'Player');
    await other.getByRole('button', { name: /^Filter/ }).click();
    await other.getByTestId('filter-builder').waitFor();
    expect(await other.getByTestId('saved-filter').count()).toBe(0);

    await fb.getByRole('button', { name: 'share saved filter just ada' }).click();
    await fb.getByRole('button', { name: 'stop sharing saved filter just ada' }).waitFor();
    await other.reload();
    await other.getByRole('button', { name: /^Filter/ }).click();
    const chip = other.getByTestId('saved-filter');
    await chip.waitFor();
    expect(await chip.textContent()).toBe('just ada(admin)');
  });
});

describe('Cloud: every trigger per class, and a function on the selected rows', () => {
  it('lists in-process and webhook triggers of each class with their kind', async () => {
    await rest('POST', '/schemas/Note', {});
    await rest('POST', '/hooks/triggers', {
      className: 'Note',
      triggerName: 'afterSave',
      url: 'http://127.0.0.1:9/after-save',
    });
    const page = await session();
    await page.goto(`/apps/${product.appId}/cloud?tab=triggers`);
    const note = page.getByRole('region', { name: 'Triggers of Note' });
    await note.waitFor();
    const rows = await note
      .getByTestId('trigger')
      .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
    expect(rows).toEqual([
      ['beforeSave', 'cloud code', ''],
      ['afterSave', 'cloud code', ''],
      ['afterSave', 'webhook', 'http://127.0.0.1:9/after-save'],
      ['beforeDelete', 'cloud code', ''],
      ['afterDelete', 'cloud code', ''],
      ['beforeFind', 'cloud code', ''],
    ]);
  });

  it('runs a function once per selected row with its objectId, and shows each row’s answer', async () => {
    const page = await session();
    await openClass(page, 'Player');
    await page.getByLabel(`select ${ids.ada}`, { exact: true }).check();
    await page.getByLabel(`select ${ids.bo}`, { exact: true }).check();
    await page.getByRole('button', { name: 'Run function on 2 selected rows…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Run a function on 2 selected rows of Player' });
    await dialog.getByLabel('Function to run').selectOption('echo');
    await dialog.getByLabel('Other params (JSON)').fill('{"tag": "x"}');
    await dialog.getByRole('button', { name: 'Run on 2 selected rows' }).click();
    await expect
      .poll(() => dialog.getByTestId('run-on-rows-summary').textContent())
      .toBe('2 succeeded, 0 failed.');
    for (const id of [ids.ada!, ids.bo!]) {
      expect(await dialog.locator(`[data-testid="row-answer"][data-row="${id}"] pre`).textContent()).toBe(
        JSON.stringify({ tag: 'x', className: 'Player', objectId: id }),
      );
    }
    await sessions.at(-1)!.screenshot('trial-run-on-rows');
    await dialog.getByLabel('Function to run').selectOption('fail');
    await dialog.getByRole('button', { name: 'Run on 2 selected rows' }).click();
    await expect
      .poll(() => dialog.getByTestId('run-on-rows-summary').textContent())
      .toBe('0 succeeded, 2 failed.');
    expect(await dialog.locator(`[data-testid="row-answer"][data-row="${ids.ada}"] pre`).textContent()).toBe(
      'Error 141: it broke',
    );
  });
});
