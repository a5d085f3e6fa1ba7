import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, login, openSession, type Session } from './helpers/browser.ts';
import { type Product, startProduct } from './helpers/product.ts';

/**
 * Issue 27, items 4, 6 and 11 (part): the impact preview is the service's deciders' own answer,
 * per operation, for every permission change the console makes (the CLP matrix, protected fields,
 * both at once, an ACL typed as JSON in the grid, role membership and inheritance); built-in
 * classes show the rules the service enforces, marked fixed; a duplicate role name is refused at
 * the form in the service's words. Each checked through the service's REST API as the callers
 * concerned.
 */

let product: Product;
let browser: Browser;
let admin: Session;
const ids: Record<string, string> = {};
const tokens: Record<string, string> = {};
const STAFF = ['sam', 'sue'];
const OTHERS = ['nia', 'ned'];

async function rest(method: string, p: string, body?: unknown): Promise<any> {
  const res = await product.rest(method, p, body);
  if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(res.json)}`);
  return res.json;
}

/** A REST call with application keys only, or as a signed-in user when given their token. */
async function asCaller(method: string, p: string, token?: string, body?: unknown) {
  const res = await fetch(`${product.serviceUrl}${p}`, {
    method,
    headers: {
      'X-Backend-Application-Id': 'e2e-service-app',
      'X-Backend-REST-API-Key': product.secrets.restAPIKey,
      ...(token ? { 'X-Backend-Session-Token': token } : {}),
      ...(body ? { 'Content-Type': 'application/json' } : {}),
    },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

const pointer = (className: string, objectId: string) => ({ __type: 'Pointer', className, objectId });
const accessUrl = (cls: string) => `/apps/${product.appId}/security/access?class=${cls}`;
const clpOf = async (cls: string) => (await rest('GET', `/schemas/${cls}`)).classLevelPermissions;
const staffMembers = async () =>
  (
    await rest(
      'GET',
      `/classes/_User?where=${encodeURIComponent(
        JSON.stringify({ $relatedTo: { object: pointer('_Role', ids.Staff!), key: 'users' } }),
      )}`,
    )
  ).results
    .map((u: { username: string }) => u.username)
    .sort();

/** The operations the preview lists as changed, as `[operation, gain, lose, anonymous]`. */
const previewedOperations = (scope: ReturnType<Page['getByTestId']>) =>
  scope
    .getByTestId('impact-operations')
    .locator('li')
    .evaluateAll((els) =>
      els.map((e) => [e.dataset.operation, e.dataset.gain, e.dataset.lose, e.dataset.anonymous]),
    );

beforeAll(async () => {
  product = await startProduct();
  browser = await launchBrowser();
  for (const name of [...STAFF, ...OTHERS]) {
    const res = await product.rest(
      'POST',
      '/users',
      { username: name, password: 'pw-secret-1', email: `${name}@example.com` },
      'rest',
    );
    expect(res.status).toBe(201);
    ids[name] = res.json.objectId;
    tokens[name] = res.json.sessionToken;
  }
  ids.Staff = (
    await rest('POST', '/roles', {
      name: 'Staff',
      ACL: { '*': { read: true } },
      users: { __op: 'AddRelation', objects: STAFF.map((n) => pointer('_User', ids[n]!)) },
    })
  ).objectId;
  ids.Leads = (await rest('POST', '/roles', { name: 'Leads', ACL: { '*': { read: true } } })).objectId;
  for (const cls of ['Shop', 'Venue', 'Ledger']) {
    await rest('POST', `/schemas/${cls}`, {
      className: cls,
      fields: { title: { type: 'String' }, city: { type: 'String' } },
    });
    ids[cls] = (
      await rest('POST', `/classes/${cls}`, {
        title: `${cls} one`,
        city: 'Oslo',
        ACL: { '*': { read: true }, 'role:Staff': { write: true } },
      })
    ).objectId;
  }
  // Ledger: updates by Leads only, rows readable by Leads only.
  await rest('PUT', '/schemas/Ledger', {
    classLevelPermissions: {
      find: { '*': true },
      get: { '*': true },
      count: { '*': true },
      create: {},
      update: { 'role:Leads': true },
      delete: {},
      addField: {},
      protectedFields: { '*': [] },
    },
  });
  await rest('PUT', `/classes/Ledger/${ids.Ledger}`, { ACL: { 'role:Leads': { read: true, write: true } } });
  admin = await openSession(browser, product);
  await login(admin.page);
});

afterAll(async () => {
  await admin?.close();
  await browser?.close();
  await product?.close();
});

describe('the impact preview answers as the service enforces', () => {
  it('removing public find: the preview says anonymous callers and every user lose find, as REST then refuses', async () => {
    const { page } = admin;
    await page.goto(accessUrl('Shop'));
    await page.getByTestId('clp-matrix').waitFor();
    await page.getByTestId('clp-find-*').uncheck();
    await page.getByRole('button', { name: 'Review changes' }).click();
    const preview = page.getByTestId('impact-preview');
    await preview.getByTestId('impact-summary').waitFor();
    expect(await preview.getByTestId('impact-anonymous').textContent()).toBe(
      'Anonymous callers (application keys only) lose read access and keep the same write access.',
    );
    expect(await previewedOperations(preview)).toEqual([['find', '0', '4', 'loses']]);
    expect(await preview.getByTestId('impact-operations').textContent()).toMatch(
      /^find: 4 users lose it \((\w+, ){3}\w+\); anonymous callers lose it$/,
    );
    await preview.getByRole('button', { name: 'Save' }).click();
    await expect.poll(async () => (await clpOf('Shop')).find).toEqual({});
    // Reality: anonymous and every user are refused find; get is untouched.
    expect(await asCaller('GET', '/classes/Shop')).toEqual({
      status: 400,
      json: { code: 119, error: 'Permission denied for action find on class Shop.' },
    });
    for (const name of [...STAFF, ...OTHERS])
      expect((await asCaller('GET', '/classes/Shop', tokens[name])).status, name).toBe(400);
    expect((await asCaller('GET', `/classes/Shop/${ids.Shop}`)).status).toBe(200);
  });

  it('a draft that changes the CLP and protected fields together keeps the field part', async () => {
    const { page } = admin;
    await page.goto(accessUrl('Venue'));
    await page.getByTestId('clp-matrix').waitFor();
    await page.getByTestId('clp-create-*').uncheck();
    await page.getByTestId('pf-*-city').check();
    await page.getByRole('button', { name: 'Review changes' }).click();
    const preview = page.getByTestId('impact-preview');
    await preview.getByTestId('impact-summary').waitFor();
    const fields = preview.getByTestId('impact-fields').locator('li');
    expect(
      await fields.evaluateAll((els) =>
        els.map((e) => [e.dataset.field, e.dataset.hiddenFrom, e.dataset.visibleTo, e.dataset.anonymous]),
      ),
    ).toEqual([['city', '4', '0', 'loses']]);
    expect(await previewedOperations(preview)).toEqual([['create', '0', '4', 'loses']]);
    await preview.getByRole('button', { name: 'Save' }).click();
    await expect.poll(async () => (await clpOf('Venue')).protectedFields).toEqual({ '*': ['city'] });
    // Reality: city is gone from every user's answer and from anonymous callers'; create is refused.
    for (const token of [undefined, ...Object.values(tokens)]) {
      const got = await asCaller('GET', `/classes/Venue/${ids.Venue}`, token);
      expect(got.status).toBe(200);
      expect('city' in got.json).toBe(false);
    }
    expect((await asCaller('POST', '/classes/Venue', tokens.sam, { title: 'x' })).status).toBe(400);
  });

  it('an ACL typed as JSON in the grid is previewed before it is saved', async () => {
    const { page } = admin;
    await page.goto(`/apps/${product.appId}/data/Shop`);
    const acl = page.locator(`[data-row-id="${ids.Shop}"] [data-field="ACL"]`);
    await acl.waitFor();
    await acl.focus();
    await page.keyboard.press('Enter');
    await page.getByTestId('cell-editor').fill('{"role:Staff": {"read": true, "write": true}}');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    // Nothing is written before the review: the preview names who loses the row.
    const review = page.getByTestId('acl-change-review');
    await review.getByTestId('impact-summary').waitFor();
    expect((await rest('GET', `/classes/Shop/${ids.Shop}`)).ACL).toEqual({
      '*': { read: true },
      'role:Staff': { write: true },
    });
    // nia, ned and anonymous callers lose the row (get, and counting it; find was refused already).
    expect(await previewedOperations(review)).toEqual([
      ['get', '0', '2', 'loses'],
      ['count', '0', '2', 'loses'],
    ]);
    expect(await review.locator('[data-operation="get"]').textContent()).toMatch(
      /^get: 2 users lose it \((nia, ned|ned, nia)\); anonymous callers lose it$/,
    );
    await review.getByRole('button', { name: 'Save ACL' }).click();
    await expect
      .poll(async () => (await rest('GET', `/classes/Shop/${ids.Shop}`)).ACL)
      .toEqual({ 'role:Staff': { read: true, write: true } });
    // Reality: nia and anonymous callers lose the row, sam keeps it.
    expect((await asCaller('GET', `/classes/Shop/${ids.Shop}`, tokens.nia)).status).toBe(404);
    expect((await asCaller('GET', `/classes/Shop/${ids.Shop}`)).status).toBe(404);
    expect((await asCaller('GET', `/classes/Shop/${ids.Shop}`, tokens.sam)).status).toBe(200);
  });

  it('removing a member of a role is previewed on every class, then applied', async () => {
    const { page } = admin;
    await page.goto(`/apps/${product.appId}/security/roles`);
    await page.getByRole('button', { name: 'Role Staff', exact: true }).click();
    await page.getByRole('region', { name: 'Role Staff' }).waitFor();
    await page.getByRole('button', { name: 'Remove sue from Staff' }).click();
    const preview = page.getByTestId('impact-preview');
    await preview.getByTestId('impact-summary').waitFor();
    expect(await staffMembers()).toEqual(['sam', 'sue']);
    expect(await preview.getByTestId('impact-users').textContent()).toBe(
      'Computed for the 1 user whose roles change, of 4 users.',
    );
    // sue loses the Shop row (readable and writable by Staff only) and writing the Venue row.
    const shop = preview.locator('[data-testid="impact-class"][data-class="Shop"]');
    expect(await previewedOperations(shop)).toEqual([
      ['get', '0', '1', 'same'],
      ['count', '0', '1', 'same'],
      ['update', '0', '1', 'same'],
      ['delete', '0', '1', 'same'],
    ]);
    const venue = preview.locator('[data-testid="impact-class"][data-class="Venue"]');
    expect(await previewedOperations(venue)).toEqual([
      ['update', '0', '1', 'same'],
      ['delete', '0', '1', 'same'],
    ]);
    expect(
      await preview.getByTestId('impact-class').evaluateAll((els) => els.map((e) => e.dataset.class)),
    ).toEqual(['Shop', 'Venue']);
    await preview.getByRole('button', { name: 'Remove', exact: true }).click();
    await expect.poll(staffMembers).toEqual(['sam']);
    expect((await asCaller('GET', `/classes/Shop/${ids.Shop}`, tokens.sue)).status).toBe(404);
    expect((await asCaller('GET', `/classes/Shop/${ids.Shop}`, tokens.sam)).status).toBe(200);
  });

  it('an inheritance edit is previewed, then applied', async () => {
    const { page } = admin;
    await page.goto(`/apps/${product.appId}/security/roles`);
    await page.getByRole('button', { name: 'Role Staff', exact: true }).click();
    await page.getByRole('region', { name: 'Role Staff' }).waitFor();
    // Staff inherits Leads' capabilities: sam may update the Ledger and read its row.
    await page.getByLabel('Staff inherits capabilities from').selectOption({ label: 'Leads' });
    await page.getByRole('button', { name: 'Inherit', exact: true }).click();
    const preview = page.getByTestId('impact-preview');
    await preview.getByTestId('impact-summary').waitFor();
    const ledger = preview.locator('[data-testid="impact-class"][data-class="Ledger"]');
    expect(await previewedOperations(ledger)).toEqual([
      ['find', '1', '0', 'same'],
      ['get', '1', '0', 'same'],
      ['count', '1', '0', 'same'],
      ['update', '1', '0', 'same'],
    ]);
    expect(await ledger.getByTestId('impact-operations').textContent()).toContain(
      'update: 1 user gains it (sam)',
    );
    expect((await asCaller('GET', `/classes/Ledger/${ids.Ledger}`, tokens.sam)).status).toBe(404);
    await preview.getByRole('button', { name: 'Apply', exact: true }).click();
    await expect
      .poll(async () => (await asCaller('GET', `/classes/Ledger/${ids.Ledger}`, tokens.sam)).status)
      .toBe(200);
    const put = await asCaller('PUT', `/classes/Ledger/${ids.Ledger}`, tokens.sam, { title: 'by sam' });
    expect(put.status).toBe(200);
  });
});

describe('built-in classes and role names', () => {
  it('_Installation shows the rules the service enforces, fixed, and no warning about public find or delete', async () => {
    const { page } = admin;
    await page.goto(accessUrl('_Installation'));
    await page.getByTestId('clp-matrix').waitFor();
    for (const op of ['find', 'delete']) {
      const fixed = page.getByTestId(`clp-fixed-${op}`);
      await fixed.waitFor();
      expect(await fixed.textContent()).toBe(
        `fixedmaster key only: ${op} on _Installation is master-only (not editable: the service applies this rule whatever the class-level permissions say)`,
      );
      expect(await page.getByTestId(`clp-${op}-*`).count()).toBe(0);
    }
    expect(await page.getByTestId('clp-fixed-create').textContent()).toContain(
      'allowed for everyone: installations are created by their device',
    );
    // get stays the CLP's to decide.
    expect(await page.getByTestId('clp-get-*').count()).toBe(1);
    const rules = page.getByTestId('class-rules');
    expect(await rules.locator('li[data-operation="find"]').textContent()).toBe(
      'find: fixed — find on _Installation is master-only. Now: master key only.',
    );
    const warnings = await page
      .locator('[data-testid="clp-warnings"] li')
      .evaluateAll((els) => els.map((e) => e.getAttribute('data-warning')));
    expect(warnings).not.toContain('public-delete');
    // The stored settings say public; the service refuses, as shown.
    expect((await clpOf('_Installation')).find).toEqual({ '*': true });
    expect(await asCaller('GET', '/installations')).toEqual({
      status: 403,
      json: { code: 119, error: 'unauthorized: master key is required' },
    });
  });

  it('_User shows the own-account rule for update and delete, no public-update warning, and REST agrees', async () => {
    const { page } = admin;
    await page.goto(accessUrl('_User'));
    await page.getByTestId('clp-matrix').waitFor();
    const rules = page.getByTestId('class-rules');
    await rules.waitFor();
    for (const op of ['update', 'delete']) {
      expect(await rules.locator(`li[data-operation="${op}"]`).textContent()).toBe(
        `${op}: with the class-level permissions — only the user whose row it is (signed in with their session) may ${op} a _User row. Now: anonymous callers: refused (Insufficient auth to ${op} user <id>., code 206); signed-in users: allowed on the rows the rule names.`,
      );
      // The CLP still applies to it: its cells stay editable.
      expect(await page.getByTestId(`clp-${op}-*`).count()).toBe(1);
    }
    const warnings = await page
      .locator('[data-testid="clp-warnings"] li')
      .evaluateAll((els) => els.map((e) => e.getAttribute('data-warning')));
    expect(warnings).toContain('public-create');
    expect(warnings).not.toContain('public-update');
    expect(warnings).not.toContain('public-delete');
    // The stored settings say public; another user is refused by the rule, as shown.
    expect((await clpOf('_User')).update).toEqual({ '*': true });
    expect(await asCaller('PUT', `/users/${ids.sam}`, tokens.nia, { nick: 'x' })).toEqual({
      status: 400,
      json: { code: 206, error: `Insufficient auth to update user ${ids.sam}.` },
    });
  });

  it('a duplicate role name is refused at the form, naming the role', async () => {
    const { page } = admin;
    await page.goto(`/apps/${product.appId}/security/roles`);
    await page.getByLabel('New role name').fill('Staff');
    await page.getByRole('button', { name: 'Create role' }).click();
    const error = page.getByTestId('create-role-error');
    await error.waitFor();
    expect(await error.textContent()).toBe('A role named Staff already exists. (code 137)');
    expect(await page.getByLabel('New role name').inputValue()).toBe('Staff');
    const roles = await rest('GET', `/roles?where=${encodeURIComponent('{"name":"Staff"}')}`);
    expect(roles.results).toHaveLength(1);
  });

  it('sends no key and no user session token to the browser', async () => {
    const responses = await admin.responses();
    expect(responses.some((r) => r.url.includes('/security/impact'))).toBe(true);
    const secrets = [...Object.values(product.secrets), ...Object.values(tokens)];
    const leaks = responses.filter((r) => secrets.some((x) => r.body.toString('latin1').includes(x)));
    expect(leaks.map((r) => r.url)).toEqual([]);
    expect(admin.problems).toEqual([]);
  });
});
