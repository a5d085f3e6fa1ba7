import { generateKeyPairSync } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakePush, startFakePush } from '../server/test/helpers/fake-push.ts';
import { launchBrowser, login, openSession, type Session } from './helpers/browser.ts';
import { type Product, startProduct } from './helpers/product.ts';

/**
 * The console's Server page in Chromium: the service's effective options, grouped, each with its
 * description, the new account and object id options, trustProxy and the sign-in providers. An
 * admin and a read-only user both see it; no key, password or private key reaches the browser
 * (the service's own secrets included, which the console does not hold and so cannot filter).
 */

let product: Product;
let browser: Browser;
let push: FakePush;
const sessions: Session[] = [];

const publicJwk = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({
  format: 'jwk',
}) as Record<string, string>;

/** The service's secrets the console does not hold. */
const SERVICE_SECRETS = {
  webhookKey: 'e2e-webhook-key-7d6c5b4a39281706',
  clientKey: 'e2e-client-key-0f1e2d3c4b5a6978',
  smtpPass: 'e2e-smtp-pass-a1b2c3d4e5',
  serverUrlPassword: 'e2e-server-url-password-f6a7',
  jwkModulus: publicJwk.n!,
};

const pemBodyStart = (pem: string) =>
  pem
    .split('\n')
    .filter((line) => line && !line.startsWith('-----'))
    .join('')
    .slice(0, 40);

function allSecrets(): string[] {
  return [
    ...Object.values(SERVICE_SECRETS),
    ...Object.values(product.secrets),
    pemBodyStart((push.options as { apns: { key: string } }).apns.key),
    pemBodyStart((push.options as { fcm: { privateKey: string } }).fcm.privateKey),
  ];
}

beforeAll(async () => {
  push = await startFakePush();
  product = await startProduct({
    service: {
      webhookKey: SERVICE_SECRETS.webhookKey,
      clientKey: SERVICE_SECRETS.clientKey,
      serverURL: `http://console:${SERVICE_SECRETS.serverUrlPassword}@localhost:1/api`,
      email: {
        adapter: 'smtp',
        smtp: { host: '127.0.0.1', port: 2525, auth: { user: 'mailer', pass: SERVICE_SECRETS.smtpPass } },
      },
      push: push.options,
      auth: {
        acme: {
          issuer: 'https://issuer.example',
          audience: 'e2e',
          jwks: { keys: [{ ...publicJwk, kid: 'acme-key-1' }] },
        },
      },
      verifyUserEmails: true,
      preventLoginWithUnverifiedEmail: true,
      revokeSessionOnPasswordReset: false,
      allowCustomObjectId: true,
      trustProxy: 1,
    },
  });
  browser = await launchBrowser();
}, 120_000);

afterAll(async () => {
  for (const s of sessions) await s.close();
  await browser?.close();
  await product?.close();
  await push?.close();
});

async function session(username: string): Promise<Session> {
  const s = await openSession(browser, product);
  sessions.push(s);
  await login(s.page, username);
  return s;
}

const shownValue = (page: Page, option: string) =>
  page.locator(`[data-option="${option}"] [data-testid="option-value"]`);

/** Opens the Server section from the sidebar and waits for the options. */
async function openServerPage(page: Page): Promise<void> {
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Server' }).click();
  await page.waitForURL(`**/apps/${product.appId}/server`);
  await page.getByRole('heading', { name: 'Server', level: 1 }).waitFor();
  await page.locator('[data-testid="option-row"]').first().waitFor();
}

async function expectTheOptions(page: Page): Promise<void> {
  for (const group of [
    'Service',
    'Keys',
    'Storage',
    'Accounts',
    'Email',
    'Data access',
    'Limits',
    'Realtime',
    'Push',
  ])
    await expect.poll(() => page.getByRole('heading', { name: group, level: 2 }).count()).toBe(1);
  expect(await shownValue(page, 'preventLoginWithUnverifiedEmail').textContent()).toBe('true');
  expect(await shownValue(page, 'revokeSessionOnPasswordReset').textContent()).toBe('false');
  expect(await shownValue(page, 'allowCustomObjectId').textContent()).toBe('true');
  expect(await shownValue(page, 'trustProxy').textContent()).toBe('1');
  expect(await shownValue(page, 'liveQuery.path').textContent()).toBe('/live');
  expect(await shownValue(page, 'masterKey').textContent()).toBe('set (hidden)');
  expect(await shownValue(page, 'email.smtp.auth').textContent()).toBe('set (hidden)');
  expect(await shownValue(page, 'push.apns.key').textContent()).toBe('set (hidden)');
  expect(await shownValue(page, 'serverURL').textContent()).toBe('http://console@localhost:1/api');
  expect(await shownValue(page, 'idempotency').textContent()).toBe('not set');
  // Each option with its description, from the service's option schema.
  expect(await page.locator('[data-option="allowCustomObjectId"]').textContent()).toContain(
    'Any caller may choose the objectId of a create',
  );
  // The sign-in providers, by name and kind.
  const providers = page.getByRole('table', { name: 'Sign-in providers' }).locator('tbody tr');
  await expect
    .poll(() => providers.allTextContents())
    .toEqual([
      expect.stringMatching(/^anonymous.*Built in/),
      expect.stringMatching(/^acme.*OpenID ID token/),
    ]);
}

describe('the Server page', () => {
  it('shows an admin every option, grouped and described, and no secret', async () => {
    const admin = await session('admin');
    const { page } = admin;
    await openServerPage(page);
    await expectTheOptions(page);
    await admin.screenshot('server-options');
    await page
      .getByRole('navigation', { name: 'Option groups' })
      .getByRole('link', { name: 'Accounts' })
      .click();
    await admin.screenshot('server-options-accounts');
    // The filter narrows the list to the options whose name or description match.
    await page.getByLabel('Filter options').fill('objectId');
    await expect
      .poll(() =>
        page
          .locator('[data-testid="option-row"]')
          .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-option'))),
      )
      .toEqual(['allowCustomObjectId']);
    const html = await page.content();
    await page.getByLabel('Filter options').fill('');
    const seen = [
      html,
      await page.content(),
      ...(await admin.responses()).map((r) => r.body.toString('utf8')),
    ];
    for (const secret of allSecrets())
      for (const text of seen) expect(text.includes(secret), 'a secret reached the browser').toBe(false);
  });

  it('shows a read-only console user the same, and no secret', async () => {
    const viewer = await session('viewer');
    const { page } = viewer;
    await openServerPage(page);
    await expectTheOptions(page);
    const seen = [await page.content(), ...(await viewer.responses()).map((r) => r.body.toString('utf8'))];
    for (const secret of allSecrets())
      for (const text of seen) expect(text.includes(secret), 'a secret reached the browser').toBe(false);
    expect(viewer.problems).toEqual([]);
  });
});
