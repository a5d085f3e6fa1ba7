import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, login, openSession, type Session } from './helpers/browser.ts';
import { type Product, startProduct } from './helpers/product.ts';

/**
 * The data browser's access tools (issue 14): the ACL editor on a row and on a selection, "View
 * as" a user, a role set or anonymous, the side-by-side comparison of two viewpoints, and "Why?".
 * Each is checked through the service's REST API as the callers concerned (real session tokens).
 */

let product: Product;
let browser: Browser;
let admin: Session;
/** Users signed up through REST (their session tokens are real ones). */
const users: Record<string, { id: string; token: string }> = {};

async function rest(method: string, p: string, body?: unknown): Promise<any> {
  const res = await product.rest(method, p, body);
  if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(res.json)}`);
  return res.json;
}

/** A REST call with application keys only, or as a signed-in user when given their name. */
async function asCaller(method: string, p: string, user?: string): Promise<{ status: number; json: any }> {
  const res = await fetch(`${product.serviceUrl}${p}`, {
    method,
    headers: {
      'X-Backend-Application-Id': 'e2e-service-app',
      'X-Backend-REST-API-Key': product.secrets.restAPIKey,
      ...(user ? { 'X-Backend-Session-Token': users[user]!.token } : {}),
    },
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

const userPointer = (name: string) => ({ __type: 'Pointer', className: '_User', objectId: users[name]!.id });
const dataUrl = (cls: string, qs = '') => `/apps/${product.appId}/data/${cls}${qs}`;
const gridIds = (page: Page) =>
  page
    .locator('[data-testid="grid"] [data-row-id]')
    .evaluateAll((els) => els.map((e) => e.getAttribute('data-row-id')).sort());

async function openClass(page: Page, cls: string, qs = ''): Promise<void> {
  await page.goto(dataUrl(cls, qs));
  await page.locator('[data-testid="grid"] [data-index="1"][data-row-id]').waitFor();
}

/** Picks a user by searching their username in a viewpoint picker named `label`. */
async function pickUser(page: Page, label: string, name: string): Promise<void> {
  await page.getByLabel(label, { exact: true }).selectOption('user');
  await page.getByLabel(`${label}: find a user`, { exact: true }).fill(name);
  await page.getByRole('button', { name: `${name} ${name}@example.com`, exact: true }).click();
}

const ALL = { '*': true };
const OPEN_CLP = { find: ALL, get: ALL, count: ALL, create: ALL, update: ALL, delete: ALL, addField: ALL };

beforeAll(async () => {
  product = await startProduct();
  browser = await launchBrowser();
  for (const name of ['ann', 'bob', 'cy']) {
    const res = await product.rest(
      'POST',
      '/users',
      { username: name, password: 'pw-secret-1', email: `${name}@example.com` },
      'rest',
    );
    expect(res.status).toBe(201);
    users[name] = { id: res.json.objectId, token: res.json.sessionToken };
  }
  // Admins is in Editors' `roles` relation: Admins' members (cy) get Editors' capabilities.
  const admins = await rest('POST', '/roles', {
    name: 'Admins',
    ACL: { '*': { read: true } },
    users: { __op: 'AddRelation', objects: [userPointer('cy')] },
  });
  await rest('POST', '/roles', {
    name: 'Editors',
    ACL: { '*': { read: true } },
    roles: {
      __op: 'AddRelation',
      objects: [{ __type: 'Pointer', className: '_Role', objectId: admins.objectId }],
    },
  });
  // secret is protected from everyone but Editors (the intersection of * and role:Editors is empty).
  await rest('POST', '/schemas/Post', {
    className: 'Post',
    fields: { title: { type: 'String' }, secret: { type: 'String' } },
    classLevelPermissions: { ...OPEN_CLP, protectedFields: { '*': ['secret'], 'role:Editors': [] } },
  });
  const post = (objectId: string, ACL: Record<string, unknown>) =>
    rest('POST', '/classes/Post', { objectId, title: objectId, secret: `s-${objectId}`, ACL });
  await post('post_pub', { '*': { read: true } });
  await post('post_bob', { [users.bob!.id]: { read: true, write: true } });
  await post('post_editors', { 'role:Editors': { read: true } });
  await post('post_sel1', {});
  await post('post_sel2', {});
  await post('post_annrw', { [users.ann!.id]: { read: true, write: true } });
  await post('post_hidden', { [users.bob!.id]: { read: true } });
  // Locked: no client may find, get or count it (CLP), whatever the rows' ACLs say.
  await rest('POST', '/schemas/Locked', {
    className: 'Locked',
    fields: { title: { type: 'String' } },
    classLevelPermissions: { ...OPEN_CLP, find: {}, get: {}, count: {} },
  });
  await rest('POST', '/classes/Locked', { objectId: 'locked_1', title: 'x', ACL: { '*': { read: true } } });
  admin = await openSession(browser, product);
  await login(admin.page);
}, 120_000);

afterAll(async () => {
  await admin?.close();
  await browser?.close();
  await product?.close();
});

describe('ACL editor', () => {
  it("edits a row's ACL (impact preview, then save) and the user's REST read follows", async () => {
    const { page } = admin;
    expect((await asCaller('GET', '/classes/Post/post_bob', 'ann')).status).toBe(404);
    await openClass(page, 'Post', '?row=post_bob');
    await page.getByRole('button', { name: 'Edit ACL', exact: true }).click();
    const editor = page.getByTestId('acl-editor');
    await expect
      .poll(() => editor.getByTestId('acl-read-words').textContent())
      .toBe('Readable by: the user bob.');
    await editor.getByLabel('add user', { exact: true }).fill('ann@');
    await editor.getByRole('button', { name: 'ann ann@example.com', exact: true }).click();
    await expect
      .poll(() => editor.getByTestId('acl-read-words').textContent())
      .toBe('Readable by: these 2 users (bob and ann).');
    expect(await editor.getByTestId('acl-write-words').textContent()).toBe('Writable by: the user bob.');
    expect(await editor.getByLabel('read user ann', { exact: true }).isChecked()).toBe(true);
    expect(await editor.getByLabel('write user ann', { exact: true }).isChecked()).toBe(false);
    await editor.getByRole('button', { name: 'Review impact', exact: true }).click();
    await page.getByTestId('impact-preview').waitFor();
    // Nothing is saved before the confirmation.
    expect((await asCaller('GET', '/classes/Post/post_bob', 'ann')).status).toBe(404);
    await page.getByTestId('impact-preview').getByRole('button', { name: 'Save ACL', exact: true }).click();
    await expect.poll(async () => (await asCaller('GET', '/classes/Post/post_bob', 'ann')).status).toBe(200);
    expect((await rest('GET', '/classes/Post/post_bob')).ACL).toEqual({
      [users.bob!.id]: { read: true, write: true },
      [users.ann!.id]: { read: true },
    });
    // ann reads it but still may not write it.
    const write = await fetch(`${product.serviceUrl}/classes/Post/post_bob`, {
      method: 'PUT',
      headers: {
        'X-Backend-Application-Id': 'e2e-service-app',
        'X-Backend-REST-API-Key': product.secrets.restAPIKey,
        'X-Backend-Session-Token': users.ann!.token,
        'Content-Type': 'application/json',
      },
      body: JSON.stringify({ title: 'by ann' }),
    });
    expect(write.status).toBe(404);
    await page.getByTestId('acl-editor').waitFor({ state: 'detached' });
  });

  it('sets one ACL on a selection of rows', async () => {
    const { page } = admin;
    expect((await asCaller('GET', '/classes/Post/post_sel1')).status).toBe(404);
    await openClass(page, 'Post');
    await page.getByLabel('select post_sel1', { exact: true }).check();
    await page.getByRole('button', { name: 'ACL 1', exact: true }).waitFor();
    await page.getByLabel('select post_sel2', { exact: true }).check();
    await page.getByRole('button', { name: 'ACL 2', exact: true }).click();
    const editor = page.getByTestId('acl-editor');
    await editor.getByTestId('acl-master-only').waitFor();
    expect(await editor.getByTestId('acl-master-only').textContent()).toBe(
      'Master key only: no user, role or anonymous caller can read or write these rows.',
    );
    await editor.getByRole('button', { name: 'Add public', exact: true }).click();
    expect(await editor.getByTestId('acl-master-only').count()).toBe(0);
    expect(await editor.getByTestId('acl-read-words').textContent()).toBe(
      'Readable by: the public (everyone, signed in or not).',
    );
    await editor.getByRole('button', { name: 'Review impact', exact: true }).click();
    await page.getByTestId('impact-preview').getByRole('button', { name: 'Save ACL', exact: true }).click();
    for (const id of ['post_sel1', 'post_sel2'])
      await expect.poll(async () => (await asCaller('GET', `/classes/Post/${id}`)).status).toBe(200);
    expect((await rest('GET', '/classes/Post/post_sel2')).ACL).toEqual({ '*': { read: true } });
    // Anonymous callers read them, nobody but the master key writes them.
    const put = await fetch(`${product.serviceUrl}/classes/Post/post_sel1`, {
      method: 'PUT',
      headers: {
        'X-Backend-Application-Id': 'e2e-service-app',
        'X-Backend-REST-API-Key': product.secrets.restAPIKey,
        'Content-Type': 'application/json',
      },
      body: JSON.stringify({ title: 'anon' }),
    });
    expect(put.status).toBe(404);
  });

  it('puts a role chain and an empty ACL in words', async () => {
    const { page } = admin;
    // cy reads through the chain (Admins inherits from Editors); ann does not.
    expect((await asCaller('GET', '/classes/Post/post_editors', 'cy')).status).toBe(200);
    expect((await asCaller('GET', '/classes/Post/post_editors', 'ann')).status).toBe(404);
    await openClass(page, 'Post', '?row=post_editors');
    await expect
      .poll(() => page.getByTestId('row-acl-words').textContent())
      .toBe(
        'Readable by: members of Editors, which includes members of Admins. Writable by: no one but the master key.',
      );
    await page.getByRole('button', { name: 'Edit ACL', exact: true }).click();
    const editor = page.getByTestId('acl-editor');
    await expect
      .poll(() => editor.getByTestId('acl-read-words').textContent())
      .toBe('Readable by: members of Editors, which includes members of Admins.');
    await editor.getByRole('button', { name: 'remove role Editors', exact: true }).click();
    await editor.getByTestId('acl-master-only').waitFor();
    expect(await editor.getByTestId('acl-read-words').textContent()).toBe(
      'Readable by: no one but the master key.',
    );
    // Back again, with write as well: both in words, through the chain.
    await editor.getByLabel('add role', { exact: true }).selectOption('Editors');
    await editor.getByRole('button', { name: 'Add role', exact: true }).click();
    await editor.getByLabel('write role Editors', { exact: true }).check();
    await expect
      .poll(() => editor.getByTestId('acl-write-words').textContent())
      .toBe('Writable by: members of Editors, which includes members of Admins.');
    await editor.getByLabel('read role Editors', { exact: true }).uncheck();
    expect(await editor.getByTestId('acl-read-words').textContent()).toBe(
      'Readable by: no one but the master key.',
    );
    await editor.getByRole('button', { name: 'Cancel', exact: true }).click();
    expect((await rest('GET', '/classes/Post/post_editors')).ACL).toEqual({ 'role:Editors': { read: true } });
  });
});

describe('view as', () => {
  it('shows the rows and fields a user gets, as a REST find with their session does', async () => {
    const { page } = admin;
    await openClass(page, 'Post');
    await pickUser(page, 'view as', 'ann');
    await expect
      .poll(() => page.getByTestId('viewas-banner').textContent())
      .toContain('Viewing as ann — not as master');
    expect(new URL(page.url()).searchParams.get('as')).toBe(`user:${users.ann!.id}`);
    const find = await asCaller('GET', '/classes/Post?order=objectId', 'ann');
    expect(find.status).toBe(200);
    const restIds = find.json.results.map((r: any) => r.objectId).sort();
    expect(restIds).toContain('post_pub');
    expect(restIds).not.toContain('post_hidden');
    await expect.poll(() => gridIds(page)).toEqual(restIds);
    await expect.poll(() => page.getByTestId('row-count').textContent()).toBe(`${restIds.length} rows`);
    // Fields: the row detail holds exactly what ann's REST get answers (secret is protected).
    await page.locator('[data-row-id="post_pub"] [data-field="objectId"]').click();
    const detail = page.getByTestId('row-detail');
    await expect
      .poll(async () => JSON.parse((await detail.getByTestId('row-json').textContent()) ?? '{}').objectId)
      .toBe('post_pub');
    const got = await asCaller('GET', '/classes/Post/post_pub', 'ann');
    expect(got.json.secret).toBeUndefined();
    expect(JSON.parse((await detail.getByTestId('row-json').textContent())!)).toEqual(got.json);
    expect(await detail.locator('[data-detail-field="secret"][data-hidden]').count()).toBe(1);
    // Why? on that cell: the protectedFields layer hides it, by the groups that apply to ann.
    await detail.getByRole('button', { name: 'why secret', exact: true }).click();
    await page.getByTestId('why-field-hidden').waitFor();
    expect(await page.getByTestId('why-field-hidden').textContent()).toBe(
      'secret is hidden from this viewpoint by these groups.',
    );
    expect(await page.getByTestId('why-result').getAttribute('data-allowed')).toBe('true');
    await page.getByRole('button', { name: 'Close', exact: true }).click();
    // No real writes while viewing as someone else.
    expect(await page.getByRole('button', { name: 'Edit ACL', exact: true }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Add row', exact: true }).count()).toBe(0);
    await page.getByRole('button', { name: 'Back to master', exact: true }).click();
    await page.getByTestId('viewas-banner').waitFor({ state: 'detached' });
    const master = (await rest('GET', '/classes/Post?order=objectId')).results
      .map((r: any) => r.objectId)
      .sort();
    await expect.poll(() => gridIds(page)).toEqual(master);
  });

  it('views as a role set and as anonymous', async () => {
    const { page } = admin;
    await openClass(page, 'Post');
    await page.getByLabel('view as', { exact: true }).selectOption('roles');
    await page.getByRole('group', { name: 'view as: roles' }).getByLabel('Editors', { exact: true }).check();
    await expect
      .poll(() => page.getByTestId('viewas-banner').textContent())
      .toContain('Viewing as role Editors');
    // cy (Admins, so Editors through the chain) gets the same rows as the role set Editors.
    const cy = (await asCaller('GET', '/classes/Post?order=objectId', 'cy')).json.results;
    await expect.poll(() => gridIds(page)).toEqual(cy.map((r: any) => r.objectId).sort());
    await page.getByLabel('view as', { exact: true }).selectOption('anonymous');
    await expect
      .poll(() => page.getByTestId('viewas-banner').textContent())
      .toContain('Viewing as anonymous');
    const anon = (await asCaller('GET', '/classes/Post?order=objectId')).json.results;
    await expect.poll(() => gridIds(page)).toEqual(anon.map((r: any) => r.objectId).sort());
  });
});

describe('why', () => {
  it("explains a refused read by the row's ACL, with what would allow it", async () => {
    const { page } = admin;
    expect((await asCaller('GET', '/classes/Post/post_hidden', 'ann')).status).toBe(404);
    await openClass(page, 'Post', `?as=user:${users.ann!.id}&row=post_hidden`);
    await page.getByTestId('row-error').waitFor();
    expect(await page.getByTestId('row-error').textContent()).toBe(
      'Error 101: Object not found. — this viewpoint cannot read this row.',
    );
    await page.getByRole('button', { name: 'Why? (this row)', exact: true }).click();
    const result = page.getByTestId('why-result');
    await result.waitFor();
    expect(await result.getAttribute('data-decided-by')).toBe('acl');
    expect(await result.getAttribute('data-allowed')).toBe('false');
    expect(await page.getByTestId('why-layer-clp').getAttribute('data-verdict')).toBe('allowed');
    expect(await page.getByTestId('why-layer-acl').getAttribute('data-verdict')).toBe('refused');
    expect(await page.getByTestId('why-verdict').textContent()).toContain('Refused by the row ACL');
    expect(await page.getByTestId('why-verdict').textContent()).toContain(
      'would answer 101 Object not found.',
    );
    expect((await page.getByTestId('why-to-allow').locator('li').count()) > 0).toBe(true);
    await page.getByRole('button', { name: 'Close', exact: true }).click();
    // The toolbar's Why?: any operation, row and viewpoint. Anonymous may find Post (CLP)...
    await page.getByRole('button', { name: 'Why?', exact: true }).click();
    await page.getByLabel('why viewpoint', { exact: true }).selectOption('anonymous');
    await expect.poll(() => page.getByTestId('why-result').getAttribute('data-allowed')).toBe('true');
    expect(await page.getByTestId('why-verdict').textContent()).toBe('Allowed: find on Post.');
    // ...but not get bob's row (ACL), as a REST get with application keys only says.
    expect((await asCaller('GET', '/classes/Post/post_hidden')).status).toBe(404);
    await page.getByLabel('why operation', { exact: true }).selectOption('get');
    await page.getByLabel('why objectId', { exact: true }).fill('post_hidden');
    await expect.poll(() => page.getByTestId('why-result').getAttribute('data-decided-by')).toBe('acl');
    expect(await page.getByTestId('why-result').getAttribute('data-allowed')).toBe('false');
    await page.getByRole('button', { name: 'Close', exact: true }).click();
  });

  it('explains a refused find by the CLP, the ACL not reached', async () => {
    const { page } = admin;
    const anon = await asCaller('GET', '/classes/Locked');
    expect(anon.status).toBe(400);
    expect(anon.json).toEqual({ code: 119, error: 'Permission denied for action find on class Locked.' });
    await openClass(page, 'Locked');
    await page.getByLabel('view as', { exact: true }).selectOption('anonymous');
    await page.getByTestId('rows-error').waitFor();
    expect(await page.getByTestId('rows-error').textContent()).toContain(
      `Error ${anon.json.code}: ${anon.json.error}`,
    );
    await page.getByTestId('rows-error').getByRole('button', { name: 'Why?', exact: true }).click();
    const result = page.getByTestId('why-result');
    await result.waitFor();
    expect(await result.getAttribute('data-decided-by')).toBe('clp');
    expect(await page.getByTestId('why-layer-clp').getAttribute('data-verdict')).toBe('refused');
    expect(await page.getByTestId('why-layer-acl').getAttribute('data-verdict')).toBe('skipped');
    expect((await page.getByTestId('why-to-allow').locator('li').count()) > 0).toBe(true);
    await page.getByRole('button', { name: 'Close', exact: true }).click();
  });

  it('runs edits as dry runs while viewing as a user: nothing changes, a refusal has its Why?', async () => {
    const { page } = admin;
    await openClass(page, 'Post', `?as=user:${users.ann!.id}`);
    await page.getByTestId('viewas-banner').waitFor();
    const edit = async (id: string, text: string) => {
      await page.locator(`[data-row-id="${id}"] [data-field="title"]`).dblclick();
      await page.getByTestId('cell-editor').fill(text);
      await page.getByTestId('cell-editor').press('Enter');
    };
    // ann may write post_annrw: the dry run would succeed, and nothing is stored.
    await edit('post_annrw', 'dry title');
    const result = page.getByTestId('dry-run-result');
    await expect.poll(() => result.getAttribute('data-status')).toBe('200');
    expect(await result.textContent()).toContain('would be saved. Nothing was saved.');
    expect((await rest('GET', '/classes/Post/post_annrw')).title).toBe('post_annrw');
    // post_pub is public read only: refused, with the refusal the service would answer.
    await edit('post_pub', 'dry title');
    await expect.poll(() => result.getAttribute('data-status')).toBe('404');
    expect(await result.textContent()).toContain('would be refused — Error 101: Object not found.');
    expect((await rest('GET', '/classes/Post/post_pub')).title).toBe('post_pub');
    await result.getByRole('button', { name: 'Why?', exact: true }).click();
    const why = page.getByTestId('why-result');
    await why.waitFor();
    expect(await why.getAttribute('data-decided-by')).toBe('acl');
    expect(await page.getByLabel('why operation', { exact: true }).inputValue()).toBe('update');
    await page.getByRole('button', { name: 'Close', exact: true }).click();
    await page.getByRole('button', { name: 'dismiss dry run', exact: true }).click();
    await result.waitFor({ state: 'detached' });
  });
});

describe('side by side', () => {
  it('compares two viewpoints and marks rows and fields that differ', async () => {
    const { page } = admin;
    await openClass(page, 'Post');
    await page.getByRole('button', { name: 'Compare viewpoints', exact: true }).click();
    await page.getByTestId('compare').waitFor();
    // Left: master (the default); right: ann.
    await pickUser(page, 'right viewpoint', 'ann');
    await expect
      .poll(() => page.getByTestId('compare-summary').getAttribute('data-differences'))
      .not.toBe('');
    const right = page.getByTestId('compare-right');
    await expect
      .poll(() => right.locator('[data-row-id="post_hidden"]').getAttribute('data-diff'))
      .toBe('missing');
    expect(
      await right.locator('[data-row-id="post_pub"] [data-field="secret"]').getAttribute('data-diff'),
    ).toBe('hidden');
    expect(
      await page
        .getByTestId('compare-left')
        .locator('[data-row-id="post_pub"] [data-field="secret"]')
        .textContent(),
    ).toBe('s-post_pub');
    // The counts are what REST gives master and ann.
    const master = (await rest('GET', '/classes/Post?limit=100')).results.length;
    const ann = (await asCaller('GET', '/classes/Post?limit=100', 'ann')).json.results.length;
    // Every row ann reads differs (secret hidden); every row she does not read is missing.
    expect(Number(await page.getByTestId('compare-summary').getAttribute('data-differences'))).toBe(master);
    expect(await right.locator('[data-diff="missing"]').count()).toBe(master - ann);
    await right.locator('[data-row-id="post_hidden"]').getByRole('button', { name: 'Why?' }).click();
    await expect.poll(() => page.getByTestId('why-result').getAttribute('data-decided-by')).toBe('acl');
    await page.getByRole('button', { name: 'Close', exact: true }).click();
    // The same viewpoint on both sides: no difference.
    await pickUser(page, 'left viewpoint', 'ann');
    await expect.poll(() => page.getByTestId('compare-summary').getAttribute('data-differences')).toBe('0');
    expect(await right.locator('[data-diff]').count()).toBe(0);
  });
});

describe('read-only console user', () => {
  it('may view as and ask Why?, and gets no ACL write control', async () => {
    const viewer = await openSession(browser, product);
    try {
      const { page } = viewer;
      await login(page, 'viewer');
      await openClass(page, 'Post', '?row=post_pub');
      await page.getByTestId('row-detail').getByTestId('row-json').waitFor();
      await page.getByLabel('select post_pub', { exact: true }).check();
      expect(await page.getByRole('button', { name: 'Edit ACL', exact: true }).count()).toBe(0);
      // An admin has "ACL 1" here (the selection's ACL editor).
      expect(await page.getByRole('button', { name: 'ACL 1', exact: true }).count()).toBe(0);
      await page.getByLabel('view as', { exact: true }).selectOption('anonymous');
      await page.getByTestId('viewas-banner').waitFor();
      const anon = (await asCaller('GET', '/classes/Post?order=objectId')).json.results;
      await expect.poll(() => gridIds(page)).toEqual(anon.map((r: any) => r.objectId).sort());
      // No editor opens, not even a dry run.
      await page.locator('[data-row-id="post_pub"] [data-field="title"]').dblclick();
      expect(await page.getByTestId('cell-editor').count()).toBe(0);
      await page.getByRole('button', { name: 'Why? (this row)', exact: true }).click();
      await expect.poll(() => page.getByTestId('why-result').getAttribute('data-allowed')).toBe('true');
    } finally {
      await viewer.close();
    }
  });
});
