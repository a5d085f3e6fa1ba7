import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, login, openSession, type Session } from './helpers/browser.ts';
import { type Product, startProduct } from './helpers/product.ts';

/**
 * The Security section's Roles, Users, Sessions and Installations tabs (issue 14), driven in
 * Chromium and checked through the service's REST API.
 */

let product: Product;
let browser: Browser;
let admin: Session;
const ids: Record<string, string> = {};
const tokens: Record<string, string> = {};
const CYCLE = 'A role cannot hold itself, directly or through other roles (cycle in the role graph).';

async function rest(method: string, p: string, body?: unknown, as: 'master' | 'rest' = 'master') {
  const res = await product.rest(method, p, body, as);
  if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(res.json)}`);
  return res.json;
}

/** A REST call with a user's session token (application keys only, no master key). */
async function asUser(token: string, method: string, p: string) {
  const res = await fetch(`${product.serviceUrl}${p}`, {
    method,
    headers: {
      'X-Backend-Application-Id': 'e2e-service-app',
      'X-Backend-REST-API-Key': product.secrets.restAPIKey,
      'X-Backend-Session-Token': token,
    },
  });
  return { status: res.status, json: await res.json() };
}

const logIn = async (username: string) =>
  (await rest('POST', '/login', { username, password: `${username} pw` }, 'rest')).sessionToken as string;
const pointer = (className: string, objectId: string) => ({ __type: 'Pointer', className, objectId });
const roleUsers = async (roleId: string) =>
  (
    await rest(
      'GET',
      `/classes/_User?where=${encodeURIComponent(
        JSON.stringify({ $relatedTo: { object: pointer('_Role', roleId), key: 'users' } }),
      )}`,
    )
  ).results.map((u: { username: string }) => u.username);
const inheritorsOf = async (roleId: string) =>
  (
    await rest(
      'GET',
      `/classes/_Role?where=${encodeURIComponent(
        JSON.stringify({ $relatedTo: { object: pointer('_Role', roleId), key: 'roles' } }),
      )}`,
    )
  ).results.map((r: { name: string }) => r.name);
const readSecret = (token: string) => asUser(token, 'GET', `/classes/Secret/${ids.secret}`);
const NOT_FOUND = { status: 404, json: { code: 101, error: 'Object not found.' } };

const security = (tab: string) => `/apps/${product.appId}/security/${tab}`;
const node = (page: Page, name: string) => page.getByRole('button', { name: `Role ${name}`, exact: true });
const edge = (page: Page, from: string, to: string) =>
  page.locator(`[data-testid="role-edge"][data-from="${from}"][data-to="${to}"]`);

/** A role change is previewed first (issue 27, item 4): applied from its impact preview. */
async function applyFromPreview(page: Page, label: 'Apply' | 'Add' | 'Remove'): Promise<void> {
  const preview = page.getByTestId('impact-preview');
  await preview.getByTestId('impact-summary').waitFor();
  await preview.getByRole('button', { name: label, exact: true }).click();
}

async function openRole(page: Page, name: string): Promise<void> {
  await page.goto(security('roles'));
  await node(page, name).click();
  await page.getByRole('region', { name: `Role ${name}` }).waitFor();
}

beforeAll(async () => {
  product = await startProduct();
  browser = await launchBrowser();
  for (const name of ['ann', 'bob']) {
    const u = await rest(
      'POST',
      '/users',
      { username: name, password: `${name} pw`, email: `${name}@example.com` },
      'rest',
    );
    ids[name] = u.objectId;
  }
  for (const name of ['Viewers', 'Editors', 'Admins']) {
    ids[name] = (await rest('POST', '/roles', { name, ACL: { '*': { read: true } } })).objectId;
  }
  await rest('PUT', `/roles/${ids.Admins}`, {
    users: { __op: 'AddRelation', objects: [pointer('_User', ids.ann)] },
  });
  // A row only members of Viewers may read.
  ids.secret = (
    await rest('POST', '/classes/Secret', { title: 'for viewers', ACL: { 'role:Viewers': { read: true } } })
  ).objectId;
  tokens.ann = await logIn('ann');
  tokens.bob = await logIn('bob');
  admin = await openSession(browser, product);
  await login(admin.page);
});

afterAll(async () => {
  await browser?.close();
  await product?.close();
});

describe('roles', () => {
  it('a hierarchy edit gives a user access through a chain', async () => {
    expect(await readSecret(tokens.ann)).toEqual(NOT_FOUND);
    const { page, screenshot } = admin;
    await openRole(page, 'Editors');
    await page.getByLabel('Editors inherits capabilities from').selectOption({ label: 'Viewers' });
    await page.getByRole('button', { name: 'Inherit', exact: true }).click();
    await applyFromPreview(page, 'Apply');
    await edge(page, 'Viewers', 'Editors').waitFor({ state: 'attached' });
    await page
      .getByRole('region', { name: 'Inheritance' })
      .getByText('Editors inherits capabilities from Viewers')
      .waitFor();

    await node(page, 'Admins').click();
    await page.getByRole('region', { name: 'Role Admins' }).waitFor();
    await page.getByLabel('Admins inherits capabilities from').selectOption({ label: 'Editors' });
    await page.getByRole('button', { name: 'Inherit', exact: true }).click();
    await applyFromPreview(page, 'Apply');
    await edge(page, 'Editors', 'Admins').waitFor({ state: 'attached' });
    expect(await page.locator('[data-testid="role-edge"]').count()).toBe(2);
    await screenshot('security-roles-graph');

    // Through the REST API: the relations, then ann (a member of Admins only) reads the row.
    expect(await inheritorsOf(ids.Viewers)).toEqual(['Editors']);
    expect(await inheritorsOf(ids.Editors)).toEqual(['Admins']);
    await expect.poll(async () => (await readSecret(tokens.ann)).status).toBe(200);
    expect((await readSecret(tokens.ann)).json).toMatchObject({ objectId: ids.secret, title: 'for viewers' });
    expect(await readSecret(tokens.bob)).toEqual(NOT_FOUND);
  });

  it('a cycle attempt shows the service refusal and changes nothing', async () => {
    const { page, screenshot } = admin;
    await openRole(page, 'Viewers');
    await page.getByLabel('Viewers inherits capabilities from').selectOption({ label: 'Admins' });
    await page.getByRole('button', { name: 'Inherit', exact: true }).click();
    const refusal = page.getByTestId('inheritance-error');
    await expect
      .poll(() => refusal.textContent())
      .toBe(`"Viewers inherits capabilities from Admins" was refused: ${CYCLE} (code 139)`);
    await screenshot('security-roles-cycle');
    expect(await inheritorsOf(ids.Admins)).toEqual([]);
    expect(await page.locator('[data-testid="role-edge"]').count()).toBe(2);
  });

  it('shows effective members through the chain', async () => {
    const { page } = admin;
    await openRole(page, 'Viewers');
    const members = page.getByTestId('effective-member');
    await members.first().waitFor();
    expect(await members.allTextContents()).toEqual([
      'ann (member of Admins, which inherits capabilities from Editors, which inherits capabilities from Viewers)',
    ]);
    // The same as the service decides: ann reads the Viewers-only row, bob does not.
    expect((await readSecret(tokens.ann)).status).toBe(200);
    expect(await readSecret(tokens.bob)).toEqual(NOT_FOUND);
  });

  it('adds and removes a member', async () => {
    const { page } = admin;
    await openRole(page, 'Viewers');
    await page.getByLabel('Find users to add').fill('bob@exa');
    await page.getByRole('button', { name: 'Add bob to Viewers' }).click();
    await applyFromPreview(page, 'Add');
    await page.getByTestId('role-member').filter({ hasText: 'bob' }).waitFor();
    await expect.poll(() => roleUsers(ids.Viewers)).toEqual(['bob']);
    await expect.poll(async () => (await readSecret(tokens.bob)).status).toBe(200);
    await page
      .getByTestId('effective-member')
      .filter({ hasText: 'bob (direct member of Viewers)' })
      .waitFor();

    await page.getByRole('button', { name: 'Remove bob from Viewers' }).click();
    await applyFromPreview(page, 'Remove');
    await page.getByText('No direct members.').waitFor();
    await expect.poll(() => roleUsers(ids.Viewers)).toEqual([]);
    await expect.poll(async () => (await readSecret(tokens.bob)).status).toBe(404);
  });

  it('removes an inheritance, then creates and deletes a role', async () => {
    const { page } = admin;
    await openRole(page, 'Admins');
    await page.getByRole('button', { name: 'Stop: Admins inherits capabilities from Editors' }).click();
    await applyFromPreview(page, 'Apply');
    await edge(page, 'Editors', 'Admins').waitFor({ state: 'detached' });
    await expect.poll(() => inheritorsOf(ids.Editors)).toEqual([]);
    await expect.poll(async () => (await readSecret(tokens.ann)).status).toBe(404);

    // Put it back the other way round: "Editors grants its capabilities to Admins".
    await node(page, 'Editors').click();
    await page.getByRole('region', { name: 'Role Editors' }).waitFor();
    await page.getByLabel('Role that inherits capabilities from Editors').selectOption({ label: 'Admins' });
    await page.getByRole('button', { name: 'Grant', exact: true }).click();
    await applyFromPreview(page, 'Apply');
    await edge(page, 'Editors', 'Admins').waitFor({ state: 'attached' });
    await expect.poll(() => inheritorsOf(ids.Editors)).toEqual(['Admins']);
    await expect.poll(async () => (await readSecret(tokens.ann)).status).toBe(200);
    // The same edge removed from the other end (Editors' panel), then granted again.
    await page.getByRole('button', { name: 'Stop: Admins inherits capabilities from Editors' }).click();
    await applyFromPreview(page, 'Apply');
    await edge(page, 'Editors', 'Admins').waitFor({ state: 'detached' });
    await expect.poll(() => inheritorsOf(ids.Editors)).toEqual([]);
    await page.getByLabel('Role that inherits capabilities from Editors').selectOption({ label: 'Admins' });
    await page.getByRole('button', { name: 'Grant', exact: true }).click();
    await applyFromPreview(page, 'Apply');
    await edge(page, 'Editors', 'Admins').waitFor({ state: 'attached' });
    await expect.poll(() => inheritorsOf(ids.Editors)).toEqual(['Admins']);

    await page.getByLabel('New role name').fill('Auditors');
    await page.getByRole('button', { name: 'Create role' }).click();
    await page.getByRole('region', { name: 'Role Auditors' }).waitFor();
    const found = async () =>
      (await rest('GET', `/roles?where=${encodeURIComponent('{"name":"Auditors"}')}`)).results.length;
    expect(await found()).toBe(1);
    await page.getByRole('button', { name: 'Delete role' }).click();
    await page
      .getByRole('dialog', { name: 'Delete role Auditors?' })
      .getByRole('button', { name: 'Cancel' })
      .click();
    await page.getByRole('dialog', { name: 'Delete role Auditors?' }).waitFor({ state: 'hidden' });
    expect(await found()).toBe(1);
    await page.getByRole('button', { name: 'Delete role' }).click();
    await page
      .getByRole('dialog', { name: 'Delete role Auditors?' })
      .getByRole('button', { name: 'Delete' })
      .click();
    await node(page, 'Auditors').waitFor({ state: 'detached' });
    expect(await found()).toBe(0);
  });
});

describe('users', () => {
  it('creates a user, edits its fields and finds it by email', async () => {
    const { page, screenshot } = admin;
    await page.goto(security('users'));
    await page.getByTestId('user-row').first().waitFor();
    await page.getByRole('button', { name: 'Create user' }).click();
    const dialog = page.getByRole('dialog', { name: 'Create user' });
    await dialog.getByLabel('Username').fill('carol');
    await dialog.getByLabel('Password').fill('carol pw');
    await dialog.getByLabel('Email').fill('carol@example.com');
    await dialog.getByRole('button', { name: 'Create' }).click();
    const panel = page.getByRole('region', { name: 'User carol' });
    await panel.waitFor();
    const carol = (await rest('GET', `/users?where=${encodeURIComponent('{"username":"carol"}')}`))
      .results[0];
    expect(carol).toMatchObject({ username: 'carol', email: 'carol@example.com' });
    ids.carol = carol.objectId;
    // The password works: carol logs in through the REST API.
    expect(await logIn('carol')).toMatch(/^r:/);

    await panel.getByLabel('Email').fill('carol2@example.com');
    await panel.getByLabel('Other fields (JSON)').fill('{"nickname": "Caz"}');
    await panel.getByRole('button', { name: 'Save user' }).click();
    await expect
      .poll(async () => (await rest('GET', `/users/${ids.carol}`)).email)
      .toBe('carol2@example.com');
    expect((await rest('GET', `/users/${ids.carol}`)).nickname).toBe('Caz');
    await screenshot('security-users-edit');

    await page.getByLabel('Search users').fill('carol2@');
    await expect
      .poll(() =>
        page.getByTestId('user-row').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-username'))),
      )
      .toEqual(['carol']);
  });

  it('marks anonymous users and shows MFA status', async () => {
    const anon = await rest(
      'POST',
      '/users',
      { authData: { anonymous: { id: '9b2f7c1e-3a4d-4e5f-8a9b-0c1d2e3f4a5b' } } },
      'rest',
    );
    const { page } = admin;
    await page.goto(security('users'));
    const row = page.locator(`[data-testid="user-row"][data-username="${anon.username}"]`);
    await row.getByTestId('anonymous-badge').waitFor();
    expect(await row.getByTestId('mfa-status').textContent()).toBe('off');
    expect(
      await page
        .locator('[data-testid="user-row"][data-username="ann"]')
        .getByTestId('anonymous-badge')
        .count(),
    ).toBe(0);
  });

  it('sends a password reset mail', async () => {
    const { page } = admin;
    await page.goto(security('users'));
    await page.getByRole('button', { name: 'bob', exact: true }).click();
    const panel = page.getByRole('region', { name: 'User bob' });
    await panel.getByRole('button', { name: 'Send password reset mail' }).click();
    await page.getByTestId('toast-success').filter({ hasText: 'To bob@example.com' }).waitFor();
    await expect
      .poll(async () =>
        (await rest('GET', '/devMailbox')).results
          .filter((m: { to: string }) => m.to === 'bob@example.com')
          .map((m: { subject: string }) => m.subject),
      )
      .toEqual(['Password reset for e2e-service-app']);
  });
});

describe('sessions', () => {
  const sessionIdOf = async (token: string) =>
    (await rest('GET', `/sessions?where=${encodeURIComponent(JSON.stringify({ sessionToken: token }))}`))
      .results[0].objectId as string;

  it('revokes a session in the Sessions tab and one in a user panel; no token reaches the browser', async () => {
    const first = await logIn('carol');
    const second = await logIn('carol');
    const firstId = await sessionIdOf(first);
    const secondId = await sessionIdOf(second);
    const { page, screenshot, responses } = admin;

    await page.goto(security('sessions'));
    const row = page.locator(`[data-testid="session-row"][data-session="${firstId}"]`);
    await row.waitFor();
    expect(await row.textContent()).toContain('carol');
    await screenshot('security-sessions');
    await page.getByRole('button', { name: `Revoke session ${firstId}` }).click();
    await row.waitFor({ state: 'detached' });
    await expect
      .poll(() => asUser(first, 'GET', '/users/me'))
      .toEqual({ status: 400, json: { code: 209, error: 'Invalid session token' } });
    expect((await asUser(second, 'GET', '/users/me')).status).toBe(200);

    await page.goto(security('users'));
    await page.getByRole('button', { name: 'carol', exact: true }).click();
    const panel = page.getByRole('region', { name: 'User carol' });
    await panel.locator(`[data-testid="session-row"][data-session="${secondId}"]`).waitFor();
    await panel.getByRole('button', { name: `Revoke session ${secondId}` }).click();
    await panel
      .locator(`[data-testid="session-row"][data-session="${secondId}"]`)
      .waitFor({ state: 'detached' });
    await expect
      .poll(() => asUser(second, 'GET', '/users/me'))
      .toEqual({ status: 400, json: { code: 209, error: 'Invalid session token' } });

    const seen = await responses();
    const leaks = [first, second, tokens.ann, tokens.bob, product.secrets.masterKey].filter((secret) =>
      seen.some((r) => r.body.includes(secret)),
    );
    expect(leaks).toEqual([]);
  });
});

describe('installations', () => {
  it('lists and filters installations as the service does', async () => {
    const rows = [
      { installationId: 'i-ios-ann', deviceType: 'ios', channels: ['news', 'sports'], user: ids.ann },
      { installationId: 'i-android-bob', deviceType: 'android', channels: ['news'], user: ids.bob },
      { installationId: 'i-ios-none', deviceType: 'ios', channels: ['weather'] },
    ];
    for (const { user, ...r } of rows) {
      await rest('POST', '/installations', {
        ...r,
        deviceToken: `token-${r.installationId}-abcdef0123456789`,
        ...(user ? { user: pointer('_User', user) } : {}),
      });
    }
    const serviceIds = async (where: Record<string, unknown>) =>
      (await rest('GET', `/installations?where=${encodeURIComponent(JSON.stringify(where))}`)).results
        .map((r: { installationId: string }) => r.installationId)
        .sort();
    const { page, screenshot } = admin;
    await page.goto(security('installations'));
    const shown = () =>
      page
        .getByTestId('installation-row')
        .evaluateAll((els) => els.map((e) => e.getAttribute('data-installation')).sort());
    await expect.poll(shown).toEqual(await serviceIds({}));
    expect(await shown()).toHaveLength(3);

    await page.getByLabel('Device type').selectOption('ios');
    await expect.poll(shown).toEqual(await serviceIds({ deviceType: 'ios' }));
    expect(await shown()).toEqual(['i-ios-ann', 'i-ios-none']);

    await page.getByLabel('Channel').fill('news');
    await expect.poll(shown).toEqual(await serviceIds({ deviceType: 'ios', channels: 'news' }));
    expect(await shown()).toEqual(['i-ios-ann']);

    await page.getByLabel('Device type').selectOption('');
    await page.getByLabel('User').fill('bob');
    await expect.poll(shown).toEqual(await serviceIds({ channels: 'news', user: pointer('_User', ids.bob) }));
    expect(await shown()).toEqual(['i-android-bob']);
    const row = page.locator('[data-installation="i-android-bob"]');
    expect(await row.textContent()).toContain('token-i-…');
    expect(await row.textContent()).not.toContain('token-i-android-bob-abcdef0123456789');
    await screenshot('security-installations');
  });
});

describe('read-only console user', () => {
  const WRITE_BUTTONS = [
    'Create role',
    'Inherit',
    'Grant',
    'Delete role',
    'Remove',
    'Create user',
    'Save user',
    'Send password reset mail',
    'Revoke',
    'Stop:',
  ];
  const writeButtons = async (page: Page) => {
    let n = 0;
    for (const name of WRITE_BUTTONS) n += await page.getByRole('button', { name }).count();
    return n;
  };

  it('sees every tab and no write control; the bff refuses a direct write', async () => {
    const viewer = await openSession(browser, product);
    try {
      const { page, screenshot } = viewer;
      await login(page, 'viewer');
      await openRole(page, 'Viewers');
      await page.getByTestId('effective-member').first().waitFor();
      await page
        .getByRole('region', { name: 'Inheritance' })
        .getByText('Editors inherits capabilities from Viewers')
        .waitFor();
      expect(await page.getByLabel('New role name').count()).toBe(0);
      expect(await page.getByLabel('Find users to add').count()).toBe(0);
      expect(await page.getByLabel('Viewers inherits capabilities from').count()).toBe(0);
      expect(await writeButtons(page)).toBe(0);
      await screenshot('security-roles-read-only');

      await page.goto(security('users'));
      await page.getByRole('button', { name: 'carol', exact: true }).click();
      const panel = page.getByRole('region', { name: 'User carol' });
      await panel.waitFor();
      expect(await panel.getByLabel('Email').getAttribute('readonly')).not.toBeNull();
      expect(await writeButtons(page)).toBe(0);

      await page.goto(security('sessions'));
      await page.getByTestId('session-row').first().waitFor();
      expect(await writeButtons(page)).toBe(0);

      await page.goto(security('installations'));
      await page.getByTestId('installation-row').first().waitFor();
      expect(await writeButtons(page)).toBe(0);

      const before = await roleUsers(ids.Viewers);
      const answer = await page.evaluate(
        async ([roleId, userId, appId]) => {
          const res = await fetch(`/bff/apps/${appId}/roles/${roleId}/users`, {
            method: 'POST',
            headers: { 'Content-Type': 'application/json', 'X-Console-CSRF': '1' },
            body: JSON.stringify({ userIds: [userId] }),
          });
          return { status: res.status, body: await res.json() };
        },
        [ids.Viewers, ids.bob, product.appId],
      );
      expect(answer).toEqual({
        status: 403,
        body: { code: 119, error: 'Read-only console users cannot change anything.' },
      });
      expect(await roleUsers(ids.Viewers)).toEqual(before);
      expect(viewer.problems).toEqual([]);
    } finally {
      await viewer.close();
    }
  });
});
