import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, login, openSession, type Session } from './helpers/browser.ts';
import { type Product, startProduct } from './helpers/product.ts';

/**
 * The console's Logs section in Chromium: requests made to the service (with request ids of the
 * test's choosing: the test is a trusted proxy of the service) are listed; every filter narrows
 * the list to the exact requests; a click on a request shows its lines with their exact text (the
 * cloud code's console lines, a secret filtered); the live tail shows a request made while it is
 * on; `?requestId=<id>` opens that request's lines. No key reaches the browser.
 */

const CLOUD = fileURLToPath(new URL('../server/test/fixtures/logs-cloud.ts', import.meta.url));

let product: Product;
let browser: Browser;
let admin: Session;
let userId: string;

/** A request to the service as the app (or master) with its X-Request-Id. */
async function call(
  method: string,
  path: string,
  requestId: string,
  opts: { body?: unknown; master?: boolean; sessionToken?: string } = {},
): Promise<{ status: number; json: any }> {
  const headers: Record<string, string> = {
    'X-Backend-Application-Id': 'e2e-service-app',
    'X-Request-Id': requestId,
    ...(opts.master
      ? { 'X-Backend-Master-Key': product.secrets.masterKey }
      : { 'X-Backend-REST-API-Key': product.secrets.restAPIKey }),
    ...(opts.sessionToken ? { 'X-Backend-Session-Token': opts.sessionToken } : {}),
  };
  if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(`${product.serviceUrl}${path}`, {
    method,
    headers,
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  expect(res.headers.get('X-Request-Id')).toBe(requestId);
  return { status: res.status, json: await res.json() };
}

beforeAll(async () => {
  product = await startProduct({ service: { cloud: CLOUD, trustProxy: ['loopback'] } });
  browser = await launchBrowser();
  expect(
    (
      await call('POST', '/functions/shout', 'e2e-shout-1', {
        body: { word: 'hello', key: product.secrets.masterKey },
      })
    ).status,
  ).toBe(200);
  expect((await call('GET', '/classes/E2eLogged/missing', 'e2e-missing-1')).status).toBe(404);
  expect(
    (await call('POST', '/classes/E2eLogged', 'e2e-create-1', { master: true, body: { n: 1 } })).status,
  ).toBe(201);
  const signUp = await call('POST', '/users', 'e2e-signup-1', {
    body: { username: 'logan', password: 'logan-pw-1' },
  });
  userId = signUp.json.objectId;
  expect(
    (await call('GET', '/users/me', 'e2e-me-1', { sessionToken: signUp.json.sessionToken })).status,
  ).toBe(200);
  admin = await openSession(browser, product);
  await login(admin.page, 'admin');
}, 120_000);

afterAll(async () => {
  await admin?.close();
  await browser?.close();
  await product?.close();
});

const rows = (page: Page) => page.getByTestId('log-row');
const shownIds = async (page: Page) =>
  (await rows(page).evaluateAll((els) => els.map((e) => e.getAttribute('data-request-id')))) as string[];
/** The request ids listed once the list shows `expected` (the list refetches after each Apply). */
const expectIds = (page: Page, expected: string[]) => expect.poll(() => shownIds(page)).toEqual(expected);

async function applyFilters(page: Page, fill: Record<string, string>): Promise<void> {
  const form = page.getByTestId('log-filters');
  await form.getByRole('button', { name: 'Clear' }).click();
  for (const [label, value] of Object.entries(fill)) {
    if (label === 'Caller') await form.getByLabel('Caller').selectOption(value);
    else await form.getByLabel(label, { exact: true }).fill(value);
  }
  await form.getByRole('button', { name: 'Apply' }).click();
}

const localMinutes = (ms: number) => {
  const d = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
};

describe('the Logs page', () => {
  it('lists the requests and narrows them by every filter', async () => {
    const { page } = admin;
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Logs' }).click();
    await page.waitForURL(`**/apps/${product.appId}/logs`);
    await page.getByRole('heading', { name: 'Logs', level: 1 }).waitFor();
    await expect
      .poll(async () => (await shownIds(page)).filter((id) => id.startsWith('e2e-')))
      .toEqual(['e2e-me-1', 'e2e-signup-1', 'e2e-create-1', 'e2e-missing-1', 'e2e-shout-1']);

    await applyFilters(page, { Status: '404', Class: 'E2eLogged' });
    await expectIds(page, ['e2e-missing-1']);
    expect(new URL(page.url()).searchParams.get('status')).toBe('404');
    const row = rows(page).first();
    expect(await row.locator('td').allTextContents()).toEqual([
      expect.any(String),
      'GET',
      '/classes/E2eLogged/missing',
      '404',
      '101',
      expect.stringMatching(/^\d+(\.\d+)?$/),
      'anonymous',
      '',
      'e2e-missing-1',
    ]);

    // The console's own reads of the class (its data browser) are 2xx too: the test's requests among
    // them, and every status listed a 2xx.
    await applyFilters(page, { Status: '2xx', 'Path contains': '/classes/E2eLogged' });
    await expect
      .poll(async () => (await shownIds(page)).filter((id) => id.startsWith('e2e-')))
      .toEqual(['e2e-create-1']);
    for (const status of await rows(page).locator('td:nth-child(4)').allTextContents())
      expect(status).toMatch(/^2\d\d$/);
    await applyFilters(page, { Code: '101', 'Path contains': '/classes/E2eLogged' });
    await expectIds(page, ['e2e-missing-1']);
    // The console reads the class as master too (its class list counts rows): the test's one master
    // request among them, and every caller listed the master key.
    await applyFilters(page, { Caller: 'master', 'Path contains': '/classes/E2eLogged' });
    await expect
      .poll(async () => (await shownIds(page)).filter((id) => id.startsWith('e2e-')))
      .toEqual(['e2e-create-1']);
    for (const caller of await rows(page).locator('td:nth-child(7)').allTextContents())
      expect(caller).toBe('master');
    await applyFilters(page, { 'User id': userId });
    await expectIds(page, ['e2e-me-1']);
    await applyFilters(page, { 'Request id': 'e2e-signup-1' });
    await expectIds(page, ['e2e-signup-1']);
    await applyFilters(page, { 'Slower than (ms)': '60000', Class: 'E2eLogged' });
    await page.getByTestId('logs-empty').waitFor();
    expect(await page.getByTestId('logs-empty').textContent()).toBe('No request line matches.');
    await applyFilters(page, { From: localMinutes(Date.now() + 3_600_000) });
    await page.getByTestId('logs-empty').waitFor();
    await applyFilters(page, {
      From: localMinutes(Date.now() - 3_600_000),
      To: localMinutes(Date.now() + 3_600_000),
      'Path contains': '/classes/E2eLogged',
    });
    await expect
      .poll(async () => (await shownIds(page)).filter((id) => id.startsWith('e2e-')))
      .toEqual(['e2e-create-1', 'e2e-missing-1']);

    // A bad filter: the service's refusal, as it said it.
    await applyFilters(page, { Status: 'teapot' });
    await expect
      .poll(() => page.getByTestId('logs-error').textContent())
      .toContain('Invalid logs filter: status must be a whole number from 100 to 599.');
    await page.getByTestId('log-filters').getByRole('button', { name: 'Clear' }).click();
    await expect.poll(async () => (await shownIds(page)).includes('e2e-shout-1')).toBe(true);
  });

  it("a click on a request shows its lines: cloud code's console lines, a secret filtered, the request line", async () => {
    const { page } = admin;
    await rows(page).and(page.locator('[data-request-id="e2e-shout-1"]')).click();
    const panel = page.getByTestId('request-lines');
    await panel.getByTestId('request-line').nth(2).waitFor();
    expect(await panel.getByRole('heading').textContent()).toBe('Request e2e-shout-1');
    const texts = await panel.getByTestId('request-line-text').allTextContents();
    expect(texts.slice(0, 2)).toEqual([
      'shouting hello',
      '{"password":"[FILTERED]","note":"kept"} [FILTERED]',
    ]);
    expect(texts[2]).toMatch(/^POST \/functions\/shout → 200 in \d+(\.\d+)? ms$/);
    expect(
      await panel
        .getByTestId('request-line')
        .evaluateAll((els) => els.map((e) => e.getAttribute('data-kind'))),
    ).toEqual(['cloud', 'cloud', 'request']);
    await panel.getByRole('button', { name: 'Close' }).click();
    await panel.waitFor({ state: 'detached' });
  });

  it('the live tail shows a request made while it is on, then stops', async () => {
    const { page } = admin;
    const toggle = page.getByRole('button', { name: 'Live tail' });
    await toggle.click();
    await expect
      .poll(() => page.getByTestId('tail-status').textContent())
      .toMatch(/^Live: \d+ new requests?$/);
    expect(await page.getByRole('button', { name: 'Stop live tail' }).getAttribute('aria-pressed')).toBe(
      'true',
    );
    expect((await call('GET', '/classes/E2eTailed', 'e2e-tail-1')).status).toBe(200);
    const tailed = page.locator('[data-testid="log-row"][data-request-id="e2e-tail-1"]');
    await tailed.waitFor();
    expect(await tailed.locator('td').nth(2).textContent()).toBe('/classes/E2eTailed');
    await expect.poll(() => page.getByTestId('tail-status').textContent()).not.toBe('Live: 0 new requests');
    await page.getByRole('button', { name: 'Stop live tail' }).click();
    expect(await page.getByRole('button', { name: 'Live tail' }).getAttribute('aria-pressed')).toBe('false');
    expect(await page.getByTestId('tail-status').textContent()).toBe('');
    // Refresh: a request made since shows without the tail.
    expect((await call('GET', '/classes/E2eRefreshed', 'e2e-refresh-1')).status).toBe(200);
    await page.getByRole('button', { name: 'Refresh' }).click();
    await page.locator('[data-testid="log-row"][data-request-id="e2e-refresh-1"]').waitFor();
  });

  it('?requestId=<id> (the row history links there) lists that request and opens its lines; no key reached the browser', async () => {
    const { page } = admin;
    // The section's shortcut, from another section.
    await page.goto(`/apps/${product.appId}/audit`);
    await page.getByRole('heading', { level: 1 }).first().waitFor();
    await page.keyboard.press('g');
    await page.keyboard.press('o');
    await page.waitForURL(`**/apps/${product.appId}/logs`);
    await page.goto(`/apps/${product.appId}/logs?requestId=e2e-create-1`);
    const panel = page.getByTestId('request-lines');
    await panel.getByTestId('request-line').first().waitFor();
    expect(await page.getByLabel('Request id').inputValue()).toBe('e2e-create-1');
    await expectIds(page, ['e2e-create-1']);
    const texts = await panel.getByTestId('request-line-text').allTextContents();
    expect(texts).toHaveLength(1);
    expect(texts[0]).toMatch(/^POST \/classes\/E2eLogged → 201 in \d+(\.\d+)? ms$/);

    const seen = [await page.content(), ...(await admin.responses()).map((r) => r.body.toString('utf8'))];
    for (const secret of [...Object.values(product.secrets), 'logan-pw-1'])
      for (const text of seen) expect(text.includes(secret), 'a secret reached the browser').toBe(false);
    expect(admin.problems).toEqual([]);
  });
});
