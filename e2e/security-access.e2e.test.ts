import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, login, openSession, type Session } from './helpers/browser.ts';
import { type Product, startProduct } from './helpers/product.ts';

/**
 * Security → Class access (issue 14): the CLP matrix, requiresAuthentication, the dangerous-setting
 * warnings, the diff and the impact preview before saving, the protectedFields editor and its
 * "what user U sees" preview; each checked through the service's REST API as the callers concerned.
 */

let product: Product;
let browser: Browser;
let admin: Session;
/** Users signed up through REST: three in role Staff, two not. */
const users: Record<string, { id: string; token: string }> = {};
const STAFF = ['sam', 'sue', 'sid'];
const OTHERS = ['nia', 'ned'];
const rowIds: Record<string, string> = {};

async function rest(method: string, p: string, body?: unknown): Promise<any> {
  const res = await product.rest(method, p, body);
  if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(res.json)}`);
  return res.json;
}

/** A REST call as an app (application keys only), or as a signed-in user when given their token. */
async function asCaller(method: string, p: string, token?: string): Promise<{ status: number; json: any }> {
  const res = await fetch(`${product.serviceUrl}${p}`, {
    method,
    headers: {
      'X-Backend-Application-Id': 'e2e-service-app',
      'X-Backend-REST-API-Key': product.secrets.restAPIKey,
      ...(token ? { 'X-Backend-Session-Token': token } : {}),
    },
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

const accessUrl = (cls?: string) => `/apps/${product.appId}/security/access${cls ? `?class=${cls}` : ''}`;

async function openClass(page: Page, cls: string): Promise<void> {
  await page.goto(accessUrl(cls));
  await page.getByTestId('clp-matrix').waitFor();
}

async function clpOf(cls: string): Promise<Record<string, any>> {
  return (await rest('GET', `/schemas/${cls}`)).classLevelPermissions;
}

/** Reviews the draft, waits for the impact preview, then saves and waits for the service to hold it. */
async function reviewAndSave(page: Page, cls: string, expectClp: (clp: Record<string, any>) => boolean) {
  await page.getByRole('button', { name: 'Review changes' }).click();
  await reviewAndSaveOpen(page, cls, expectClp);
}

/** Saves a draft already under review (its impact preview is on screen). */
async function reviewAndSaveOpen(page: Page, cls: string, expectClp: (clp: Record<string, any>) => boolean) {
  await page.getByTestId('impact-summary').waitFor();
  await page.getByTestId('impact-preview').getByRole('button', { name: 'Save' }).click();
  await expect.poll(async () => expectClp(await clpOf(cls))).toBe(true);
  await page.getByTestId('clp-review').waitFor({ state: 'detached' });
}

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
    users[name] = { id: res.json.objectId, token: res.json.sessionToken };
  }
  await rest('POST', '/roles', {
    name: 'Staff',
    ACL: { '*': { read: true } },
    users: {
      __op: 'AddRelation',
      objects: STAFF.map((n) => ({ __type: 'Pointer', className: '_User', objectId: users[n]!.id })),
    },
  });
  for (const cls of ['Post', 'Profile', 'Doc', 'Note']) {
    await rest('POST', `/schemas/${cls}`, {
      className: cls,
      fields: {
        title: { type: 'String' },
        email: { type: 'String' },
        phone: { type: 'String' },
        owner: { type: 'Pointer', targetClass: '_User' },
      },
    });
    rowIds[cls] = (
      await rest('POST', `/classes/${cls}`, {
        title: `${cls} one`,
        email: 'row@example.com',
        phone: '555-0100',
        owner: { __type: 'Pointer', className: '_User', objectId: users.sam!.id },
        ACL: { '*': { read: true, write: true } },
      })
    ).objectId;
  }
  admin = await openSession(browser, product);
  await login(admin.page);
});

afterAll(async () => {
  await admin?.close();
  await browser?.close();
  await product?.close();
});

describe('class access', () => {
  it('picks a class into the URL and warns about dangerous settings as the draft changes', async () => {
    const { page } = admin;
    await page.goto(accessUrl());
    await page.getByLabel('Class', { exact: true }).selectOption('Note');
    await expect.poll(() => new URL(page.url()).searchParams.get('class')).toBe('Note');
    await page.getByTestId('clp-matrix').waitFor();
    const warnings = page.getByTestId('clp-warnings').locator('li');
    await expect
      .poll(() => warnings.evaluateAll((els) => els.map((e) => e.getAttribute('data-warning'))))
      .toEqual(['public-create', 'public-update', 'public-delete', 'addField-open', 'sensitive-readable']);
    expect(await warnings.allTextContents()).toContain(
      '⚠ Note is readable by everyone (public find, get) and holds email, which look like emails or secrets: protect them under * or restrict reads.',
    );
    for (const op of ['create', 'update', 'delete', 'addField'])
      await page.getByTestId(`clp-${op}-*`).uncheck();
    await expect
      .poll(() => warnings.evaluateAll((els) => els.map((e) => e.getAttribute('data-warning'))))
      .toEqual(['sensitive-readable']);
    // Protecting the email from the public clears the last warning.
    await page.getByTestId('pf-*-email').check();
    await page.getByTestId('clp-warnings').waitFor({ state: 'detached' });
    // Discard returns to the saved settings (and their warnings); nothing was written.
    await page.getByRole('button', { name: 'Discard changes' }).click();
    await expect.poll(() => warnings.count()).toBe(5);
    expect((await clpOf('Note')).create).toEqual({ '*': true });
  });

  it('turns public find off in the matrix, shows the diff, and anonymous REST find is refused', async () => {
    const { page } = admin;
    await openClass(page, 'Post');
    expect(await asCaller('GET', '/classes/Post')).toMatchObject({ status: 200 });
    await page.getByTestId('clp-find-*').uncheck();
    await page.getByRole('button', { name: 'Review changes' }).click();
    expect(await page.getByTestId('clp-diff-words').locator('li').allTextContents()).toEqual([
      'find: the public may no longer find',
    ]);
    // The structural diff names the path and both documents.
    expect(await page.getByTestId('clp-diff').getByTestId('audit-diff').textContent()).toContain(
      'find["*"]: true',
    );
    await page.getByTestId('impact-summary').waitFor();
    await page.getByTestId('impact-preview').getByRole('button', { name: 'Save' }).click();
    await expect.poll(async () => (await clpOf('Post')).find).toEqual({});
    const refused = await asCaller('GET', '/classes/Post');
    expect(refused.status).toBe(400);
    expect(refused.json).toEqual({ code: 119, error: 'Permission denied for action find on class Post.' });
    // get is untouched: the row is still readable by id.
    expect((await asCaller('GET', `/classes/Post/${rowIds.Post}`)).status).toBe(200);
  });

  it('toggles requiresAuthentication: anonymous get is refused, a signed-in user still reads', async () => {
    const { page } = admin;
    await openClass(page, 'Post');
    await page.getByTestId('clp-get-requiresAuthentication').check();
    await reviewAndSave(page, 'Post', (clp) => clp.get?.requiresAuthentication === true);
    const anonymous = await asCaller('GET', `/classes/Post/${rowIds.Post}`);
    expect(anonymous.status).toBe(404);
    expect(anonymous.json).toEqual({
      code: 101,
      error: 'Permission denied, user needs to be authenticated.',
    });
    const signedIn = await asCaller('GET', `/classes/Post/${rowIds.Post}`, users.nia!.token);
    expect(signedIn.status).toBe(200);
    expect(signedIn.json.title).toBe('Post one');
    // And off again.
    await page.getByTestId('clp-get-requiresAuthentication').uncheck();
    await reviewAndSave(page, 'Post', (clp) => clp.get?.requiresAuthentication === undefined);
    expect((await asCaller('GET', `/classes/Post/${rowIds.Post}`)).status).toBe(200);
  });

  it('grants a role and a user found by email, and the impact counts match the REST reality', async () => {
    const { page } = admin;
    await openClass(page, 'Doc');
    // Reads for Staff only (3 users), plus delete for nia found by her email.
    await page.getByLabel('Role to add').selectOption('Staff');
    await page.getByRole('button', { name: 'Add role' }).click();
    for (const op of ['find', 'get', 'count']) {
      await page.getByTestId(`clp-${op}-role:Staff`).check();
      await page.getByTestId(`clp-${op}-*`).uncheck();
    }
    await page.getByLabel('Add a user to the matrix').fill('nia@');
    await page.getByTestId('clp-add-user').getByRole('button', { name: /^nia/ }).click();
    await page.getByTestId('clp-delete-*').uncheck();
    await page.getByTestId(`clp-delete-${users.nia!.id}`).check();
    await page.getByRole('button', { name: 'Review changes' }).click();
    expect(await page.getByTestId('clp-diff-words').locator('li').allTextContents()).toEqual([
      'find: the public may no longer find',
      'find: role Staff may now find',
      'get: the public may no longer get',
      'get: role Staff may now get',
      'count: the public may no longer count',
      'count: role Staff may now count',
      'delete: the public may no longer delete',
      'delete: user nia may now delete',
    ]);
    const impact = page.getByTestId('impact-summary');
    await impact.waitFor();
    expect(await page.getByTestId('impact-users').textContent()).toBe('Computed for all 5 users.');
    expect(await page.getByTestId('impact-read-lose').getAttribute('data-count')).toBe('2');
    expect(await page.getByTestId('impact-read-gain').getAttribute('data-count')).toBe('0');
    expect(await page.getByTestId('impact-read-lose').textContent()).toMatch(
      /^2 users lose read access \((nia, ned|ned, nia)\)$/,
    );
    expect(await page.getByTestId('impact-anonymous').textContent()).toContain('lose read access');
    await page.getByTestId('impact-preview').getByRole('button', { name: 'Save' }).click();
    await expect.poll(async () => (await clpOf('Doc')).find).toEqual({ 'role:Staff': true });
    // Reality: exactly the two users outside Staff lost find; the three in it kept it.
    const canFind = async (name: string) =>
      (await asCaller('GET', '/classes/Doc', users[name]!.token)).status === 200;
    const lost = [];
    for (const name of [...STAFF, ...OTHERS]) if (!(await canFind(name))) lost.push(name);
    expect(lost).toEqual(OTHERS);
    // nia may delete although she may not read; the row is public-write by ACL.
    expect((await asCaller('DELETE', `/classes/Doc/${rowIds.Doc}`, users.ned!.token)).json).toEqual({
      code: 119,
      error: 'Permission denied for action delete on class Doc.',
    });
    expect((await asCaller('DELETE', `/classes/Doc/${rowIds.Doc}`, users.nia!.token)).status).toBe(200);
  });

  it('edits protectedFields and the preview of a user equals what REST returns to that user', async () => {
    const { page } = admin;
    await openClass(page, 'Profile');
    // * hides email and phone; role:Staff hides only email: Staff members see the phone.
    await page.getByTestId('pf-*-email').check();
    await page.getByTestId('pf-*-phone').check();
    await page.getByLabel('New pattern kind').selectOption('role');
    await page.getByLabel('New pattern role').selectOption('Staff');
    await page.getByRole('button', { name: 'Add pattern' }).click();
    await page.getByTestId('pf-role:Staff-email').check();
    // A pattern added then removed leaves no trace.
    await page.getByLabel('New pattern kind').selectOption('authenticated');
    await page.getByRole('button', { name: 'Add pattern' }).click();
    await page.getByRole('button', { name: 'Remove pattern authenticated' }).click();
    await page.getByRole('button', { name: 'Review changes' }).click();
    expect(await page.getByTestId('clp-diff-words').locator('li').allTextContents()).toEqual([
      'protectedFields: * now hides [email, phone] (was [])',
      'protectedFields: pattern role:Staff added, hiding [email]',
    ]);
    await page.getByTestId('impact-summary').waitFor();
    // Before the change every reader saw both fields; after it email is hidden from all 5 users and
    // phone from the 2 outside Staff.
    const fieldImpact = page.getByTestId('impact-fields').locator('li');
    expect(
      await fieldImpact.evaluateAll((els) =>
        els.map((e) => [e.dataset.field, e.dataset.hiddenFrom, e.dataset.visibleTo]),
      ),
    ).toEqual([
      ['email', '5', '0'],
      ['phone', '2', '0'],
    ]);
    expect(await fieldImpact.nth(1).textContent()).toMatch(
      /^phone: becomes hidden from 2 users \((nia, ned|ned, nia)\)$/,
    );
    await page.getByTestId('impact-preview').getByRole('button', { name: 'Save' }).click();
    await expect
      .poll(async () => (await clpOf('Profile')).protectedFields)
      .toEqual({ '*': ['email', 'phone'], 'role:Staff': ['email'] });
    // The editor reloads the saved settings (and stops offering a review) once the console has them.
    await page.getByTestId('clp-review').waitFor({ state: 'detached' });

    for (const name of ['sue', 'ned']) {
      await page.getByLabel('Preview as user').fill(name);
      await page
        .getByTestId('pf-preview-user')
        .getByRole('button', { name: new RegExp(`^${name}`) })
        .click();
      await expect.poll(() => page.getByTestId('pf-preview-who').textContent()).toBe(`Viewing as ${name}`);
      const table = page.getByTestId('pf-preview-table');
      await table.waitFor();
      const shown = await table
        .locator('tr[data-field]')
        .evaluateAll((rows) =>
          rows
            .filter((r) => r.getAttribute('data-visible') === 'true')
            .map((r) => r.getAttribute('data-field')),
        );
      const fromRest = await asCaller('GET', `/classes/Profile/${rowIds.Profile}`, users[name]!.token);
      expect(fromRest.status).toBe(200);
      const restFields = ['title', 'email', 'phone', 'owner'].filter((f) => f in fromRest.json);
      expect(shown).toEqual(restFields);
      expect(shown).toEqual(name === 'sue' ? ['title', 'phone', 'owner'] : ['title', 'owner']);
      // The sample row was read as that user too.
      expect(
        await table
          .locator('tr[data-field="email"] td[data-sample-present]')
          .getAttribute('data-sample-present'),
      ).toBe('false');
    }
    expect(
      await page.getByTestId('pf-preview-table').locator('tr[data-field="phone"]').textContent(),
    ).toContain('hidden: every group that applies lists it (*)');
  });

  it('sets pointer permissions, readUserFields, userField and user patterns; Cancel and column removal', async () => {
    const { page } = admin;
    await openClass(page, 'Note');
    // update only for the user the row's owner points at; count only through readUserFields.
    await page.getByTestId('clp-update-*').uncheck();
    await page.getByTestId('clp-update-pointer:owner').check();
    await page.getByTestId('clp-count-*').uncheck();
    await page.getByTestId('clp-readUserFields-owner').check();
    // A user column added by mistake is removed again.
    await page.getByLabel('Add a user to the matrix').fill('sid');
    await page.getByTestId('clp-add-user').getByRole('button', { name: /^sid/ }).click();
    await page.getByTestId(`clp-find-${users.sid!.id}`).check();
    await page.getByRole('button', { name: 'Remove user sid' }).click();
    expect(await page.getByTestId(`clp-find-${users.sid!.id}`).count()).toBe(0);
    // phone hidden from everyone but the row's owner (userField:owner hides nothing) and ned.
    await page.getByTestId('pf-*-phone').check();
    await page.getByLabel('New pattern kind').selectOption('userField');
    await page.getByLabel('New pattern field').selectOption('owner');
    await page.getByRole('button', { name: 'Add pattern' }).click();
    await page.getByLabel('New pattern kind').selectOption('user');
    await page.getByLabel('New pattern user').fill('ned');
    await page.getByTestId('pf-add-user').getByRole('button', { name: /^ned/ }).click();
    await page.locator(`[data-pattern="${users.ned!.id}"]`).waitFor();

    // Cancel on the impact preview goes back to editing; nothing is written.
    await page.getByRole('button', { name: 'Review changes' }).click();
    await page.getByTestId('impact-summary').waitFor();
    await page.getByTestId('impact-preview').getByRole('button', { name: 'Cancel' }).click();
    await page.getByTestId('impact-preview').waitFor({ state: 'detached' });
    expect((await clpOf('Note')).update).toEqual({ '*': true });

    await page.getByRole('button', { name: 'Review changes' }).click();
    expect(await page.getByTestId('clp-diff-words').locator('li').allTextContents()).toEqual([
      'count: the public may no longer count',
      'update: the public may no longer update',
      'update: users that owner points at may now update',
      'readUserFields: owner added',
      'protectedFields: * now hides [phone] (was [])',
      'protectedFields: pattern userField:owner added, hiding []',
      `protectedFields: pattern ${users.ned!.id} added, hiding []`,
    ]);
    await reviewAndSaveOpen(page, 'Note', (clp) => clp.update?.pointerFields?.[0] === 'owner');
    expect(await clpOf('Note')).toMatchObject({
      update: { pointerFields: ['owner'] },
      count: {},
      readUserFields: ['owner'],
      protectedFields: { '*': ['phone'], 'userField:owner': [], [users.ned!.id]: [] },
    });

    const id = rowIds.Note;
    const note = (name: string) => asCaller('GET', `/classes/Note/${id}`, users[name]!.token);
    expect('phone' in (await note('sam')).json).toBe(true);
    expect('phone' in (await note('ned')).json).toBe(true);
    expect('phone' in (await note('nia')).json).toBe(false);
    const count = (name: string) => asCaller('GET', '/classes/Note?count=1&limit=0', users[name]!.token);
    expect((await count('sam')).json.count).toBe(1);
    // readUserFields grants count on the rows owner points at: nia counts none, anonymous is refused.
    expect((await count('nia')).json).toEqual({ results: [], count: 0 });
    expect(await asCaller('GET', '/classes/Note?count=1&limit=0')).toEqual({
      status: 400,
      json: { code: 119, error: 'Permission denied for action count on class Note.' },
    });
    const put = (name: string) =>
      fetch(`${product.serviceUrl}/classes/Note/${id}`, {
        method: 'PUT',
        headers: {
          'X-Backend-Application-Id': 'e2e-service-app',
          'X-Backend-REST-API-Key': product.secrets.restAPIKey,
          'X-Backend-Session-Token': users[name]!.token,
          'Content-Type': 'application/json',
        },
        body: JSON.stringify({ title: `by ${name}` }),
      }).then(async (r) => ({ status: r.status, json: await r.json() }));
    expect(await put('nia')).toEqual({ status: 404, json: { code: 101, error: 'Object not found.' } });
    expect((await put('sam')).status).toBe(200);
  });

  it('shows a read-only console user the settings and no write control; the bff refuses a direct write', async () => {
    const viewer = await openSession(browser, product);
    try {
      await login(viewer.page, 'viewer');
      await openClass(viewer.page, 'Post');
      const page = viewer.page;
      expect(await page.getByTestId('clp-find-*').getAttribute('data-checked')).toBe('false');
      expect(await page.getByTestId('clp-get-*').getAttribute('data-checked')).toBe('true');
      expect(await page.getByTestId('pf-*-list').textContent()).toBe('hides nothing');
      expect(await page.locator('main input[type="checkbox"]').count()).toBe(0);
      for (const name of ['Review changes', 'Add role', 'Add pattern', 'Discard changes']) {
        expect(await page.getByRole('button', { name }).count()).toBe(0);
      }
      expect(await page.getByLabel('Add a user to the matrix').count()).toBe(0);
      // The preview is a question, not a change: read-only users may ask it (find on Post is off).
      await page.getByLabel('Preview as user').fill('sue');
      await page.getByTestId('pf-preview-user').getByRole('button', { name: /^sue/ }).click();
      await expect
        .poll(() => page.getByTestId('pf-preview-refused').textContent())
        .toBe('sue may not read Post: Permission denied for action find on class Post. (code 119).');
      const answer = await page.evaluate(async () => {
        const res = await fetch('/bff/apps/e2e-app/schemas/Post/clp', {
          method: 'PUT',
          headers: { 'Content-Type': 'application/json', 'X-Console-CSRF': '1' },
          body: JSON.stringify({ classLevelPermissions: { find: { '*': true } } }),
        });
        return { status: res.status, body: await res.json() };
      });
      expect(answer).toEqual({
        status: 403,
        body: { code: 119, error: 'Read-only console users cannot change anything.' },
      });
      expect((await clpOf('Post')).find).toEqual({});
      expect(viewer.problems).toEqual([]);
    } finally {
      await viewer.close();
    }
  });

  it('sends no key and no user session token to the browser', async () => {
    const responses = await admin.responses();
    expect(responses.some((r) => r.url.includes('/security/impact'))).toBe(true);
    expect(responses.some((r) => r.url.includes('/security/evaluate'))).toBe(true);
    const secrets = [...Object.values(product.secrets), ...Object.values(users).map((u) => u.token)];
    const leaks = responses.filter((r) => secrets.some((x) => r.body.toString('latin1').includes(x)));
    expect(leaks.map((r) => r.url)).toEqual([]);
  });
});
