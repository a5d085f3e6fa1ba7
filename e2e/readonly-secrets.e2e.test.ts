import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, login, openSession, type Session } from './helpers/browser.ts';
import { type Product, startProduct } from './helpers/product.ts';

/**
 * Finding 4 of "Trust at the seams" in Chromium: a read-only console user in the API console
 * cannot read the reset and verification links of the dev mailbox, and the users it may read as
 * master come without their credentials. Nothing that grants write authority reaches the browser.
 */

let product: Product;
let browser: Browser;
let viewer: Session;
/** Everything that would let the read-only user act as someone: none may reach the browser. */
const secrets = new Map<string, string>();
const ANONYMOUS_ID = '2f6e8d4c-7a1b-4c3d-9e5f-0a1b2c3d4e5f';

async function rest(method: string, p: string, body?: unknown, as: 'master' | 'rest' = 'master') {
  const res = await product.rest(method, p, body, as);
  if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(res.json)}`);
  return res.json;
}

async function compose(page: Page, path: string) {
  await page.getByLabel('Method').selectOption('GET');
  await page.getByLabel('Path').fill(path);
  await page.getByLabel('Query (JSON)').fill('');
  await page.getByLabel('Run as').selectOption('master');
}

/** Sends the composed call; the text on screen (the answer, or the bff's refusal). */
async function send(page: Page): Promise<string> {
  const answered = page.waitForResponse(
    (r) => r.url().endsWith('/api-console') && r.request().method() === 'POST',
  );
  await page.getByRole('button', { name: 'Send' }).click();
  await answered;
  const shown = page.getByTestId('api-answer').or(page.getByTestId('call-error'));
  await shown.first().waitFor();
  return (await shown.first().textContent()) ?? '';
}

beforeAll(async () => {
  product = await startProduct({ service: { verifyUserEmails: true } });
  browser = await launchBrowser();
  const ann = await rest(
    'POST',
    '/users',
    { username: 'ann', password: 'ann-pw', email: 'ann@example.com' },
    'rest',
  );
  secrets.set('ann session token', ann.sessionToken);
  const anonymous = await rest('POST', '/users', { authData: { anonymous: { id: ANONYMOUS_ID } } }, 'rest');
  secrets.set('anonymous authData id', ANONYMOUS_ID);
  secrets.set('anonymous session token', anonymous.sessionToken);
  await rest('POST', '/requestPasswordReset', { email: 'ann@example.com' }, 'rest');
  // Mail is sent after the request is answered.
  let mails = await rest('GET', '/devMailbox');
  for (let i = 0; mails.results.length < 2 && i < 150; i++) {
    await new Promise((r) => setTimeout(r, 20));
    mails = await rest('GET', '/devMailbox');
  }
  for (const mail of mails.results as Array<{ subject: string; text: string }>) {
    for (const m of mail.text.matchAll(/token=([0-9a-f]+)/g)) secrets.set(`link in "${mail.subject}"`, m[1]!);
  }
  expect([...secrets.keys()].filter((k) => k.startsWith('link')).length).toBe(2);
  for (const [name, value] of Object.entries(product.secrets)) secrets.set(name, value);
  viewer = await openSession(browser, product);
  await login(viewer.page, 'viewer');
}, 120_000);

afterAll(async () => {
  await viewer?.close();
  await browser?.close();
  await product?.close();
});

describe('a read-only console user in the API console', () => {
  it('sends GET /devMailbox as master and sees the refusal, not the links', async () => {
    const { page } = viewer;
    await page.goto(`/apps/${product.appId}/api-console`);
    await page.getByLabel('Method').waitFor();
    await compose(page, '/devMailbox');
    const text = await send(page);
    expect(text).toBe(
      '403 [119] GET /devMailbox answers password reset and verification links: read-only console users cannot send it.',
    );
    // Another spelling of the same path is refused the same way.
    await compose(page, '/%64evMailbox/');
    expect(await send(page)).toContain('GET /devMailbox answers password reset and verification links');
    await viewer.screenshot('readonly-devmailbox-refused');
  });

  it('GET /classes/_User as master shows the users without authData or session tokens', async () => {
    const { page } = viewer;
    await compose(page, '/classes/_User');
    const text = await send(page);
    expect(text).toContain('Status 200');
    expect(text).toContain('"ann"');
    expect(text).toMatch(/"authData": ?"\[FILTERED\]"/);
    for (const [name, value] of secrets) expect(text, name).not.toContain(value);
  });

  it('nothing that grants write authority reached the browser', async () => {
    const { page } = viewer;
    const html = await page.content();
    const leaks: string[] = [];
    for (const r of await viewer.responses()) {
      const body = r.body.toString('utf8');
      for (const [name, value] of secrets)
        if (body.includes(value)) leaks.push(`${r.url} carries the ${name}`);
    }
    for (const [name, value] of secrets) if (html.includes(value)) leaks.push(`the page carries the ${name}`);
    expect(leaks).toEqual([]);
    expect(viewer.problems).toEqual([]);
  });
});
