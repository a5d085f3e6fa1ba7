import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, login, openSession, type Session } from './helpers/browser.ts';
import { type Product, startProduct } from './helpers/product.ts';

/**
 * The API console (issue 14) in Chromium against the real product: calls as master, as a user and
 * as anonymous, dry runs, history, copy as curl, and the read-only rule. What the console did is
 * checked through the service's REST API.
 */

let product: Product;
let browser: Browser;
let admin: Session;
const POLL = { timeout: 15_000 };
const ids: Record<string, string> = {};
let annToken = '';

async function rest(
  method: string,
  p: string,
  body?: unknown,
  as: 'master' | 'rest' = 'master',
): Promise<any> {
  const res = await product.rest(method, p, body, as);
  if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(res.json)}`);
  return res.json;
}

/** A REST read with a user's session token (what that user's own client would get). */
async function restAs(token: string, p: string): Promise<any> {
  const res = await fetch(`${product.serviceUrl}${p}`, {
    headers: {
      'X-Backend-Application-Id': product.service.options.appId,
      'X-Backend-REST-API-Key': product.secrets.restAPIKey,
      'X-Backend-Session-Token': token,
    },
  });
  return res.json();
}

const consoleUrl = () => `/apps/${product.appId}/api-console`;
const answerText = async (page: Page) => (await page.getByTestId('api-answer').textContent()) ?? '';
const titlesIn = (text: string) => [...text.matchAll(/"title": ?"([^"]+)"/g)].map((m) => m[1]).sort();

async function compose(
  page: Page,
  call: { method?: string; path: string; query?: string; body?: string; as?: 'master' | 'anonymous' | 'ann' },
) {
  await page.getByLabel('Method').selectOption(call.method ?? 'GET');
  await page.getByLabel('Path').fill(call.path);
  await page.getByLabel('Query (JSON)').fill(call.query ?? '');
  if (call.body !== undefined) await page.getByLabel('Body (JSON)').fill(call.body);
  const as = call.as ?? 'master';
  await page.getByLabel('Run as').selectOption(as === 'ann' ? 'user' : as);
  if (as === 'ann') {
    await page.getByLabel('Find user').fill('an');
    await page.getByRole('button', { name: 'Use ann' }).click();
    await expect.poll(() => page.getByTestId('picked-user').textContent(), POLL).toContain('ann');
  }
}

/** Sends the composed call and waits for the bff's answer to be on screen. */
async function send(page: Page): Promise<string> {
  const answered = page.waitForResponse(
    (r) => r.url().endsWith('/api-console') && r.request().method() === 'POST',
  );
  await page.getByRole('button', { name: 'Send' }).click();
  await answered;
  await page.getByTestId('api-answer').waitFor();
  return answerText(page);
}

beforeAll(async () => {
  product = await startProduct();
  browser = await launchBrowser();
  await rest('POST', '/schemas/Post', { className: 'Post', fields: { title: { type: 'String' } } });
  for (const name of ['ann', 'bob']) {
    ids[name] = (await rest('POST', '/users', { username: name, password: `${name}-pw` }, 'rest')).objectId;
  }
  annToken = (await rest('POST', '/login', { username: 'ann', password: 'ann-pw' }, 'rest')).sessionToken;
  const post = async (title: string, ACL: unknown) =>
    (await rest('POST', '/classes/Post', { title, ACL })).objectId;
  ids.public = await post('public post', { '*': { read: true } });
  ids.ann = await post('ann post', { [ids.ann!]: { read: true, write: true } });
  ids.bob = await post('bob post', { [ids.bob!]: { read: true, write: true } });
  admin = await openSession(browser, product);
  await login(admin.page);
}, 120_000);

afterAll(async () => {
  await admin?.close();
  await browser?.close();
  await product?.close();
});

describe('an admin in the API console', () => {
  it('sends a GET as master and sees the status, the time and the body (collapsible)', async () => {
    const { page } = admin;
    await page.goto(consoleUrl());
    await compose(page, { path: '/classes/Post', query: '{"order": "title"}' });
    const text = await send(page);
    expect(text).toContain('Status 200');
    expect(text).toMatch(/\d+(\.\d+)? ms/);
    expect(titlesIn(text)).toEqual(['ann post', 'bob post', 'public post']);
    // Rows start folded; Expand all shows them, Collapse all folds everything.
    const title = page.getByTestId('json-tree').getByText('"bob post"');
    expect(await title.isVisible()).toBe(false);
    await page.getByRole('button', { name: 'Expand all' }).first().click();
    await title.waitFor({ state: 'visible' });
    await page.getByRole('button', { name: 'Collapse all' }).first().click();
    await title.waitFor({ state: 'hidden' });
  });

  it('a POST as master creates a row', async () => {
    const { page } = admin;
    await compose(page, { method: 'POST', path: '/classes/Post', body: '{"title": "from the console"}' });
    const text = await send(page);
    expect(text).toContain('Status 201');
    expect(await page.getByTestId('dry-run').count()).toBe(0);
    const found = await rest(
      'GET',
      `/classes/Post?where=${encodeURIComponent('{"title":"from the console"}')}`,
    );
    expect(found.results).toHaveLength(1);
    expect(text).toContain(found.results[0].objectId);
  });

  it('a service error shows its status and protocol code', async () => {
    const { page } = admin;
    await compose(page, { path: '/classes/Post/doesNotExist' });
    const text = await send(page);
    expect(text).toContain('Status 404');
    expect(await page.getByTestId('answer-code').textContent()).toBe('code 101');
    expect(text).toContain('"Object not found."');
  });

  it("a GET as a user answers what that user's own REST find answers", async () => {
    const { page } = admin;
    await compose(page, { path: '/classes/Post', as: 'ann' });
    const text = await send(page);
    expect(text).toContain('Status 200');
    const own = await restAs(annToken, '/classes/Post');
    const expected = own.results.map((r: { title: string }) => r.title).sort();
    expect(titlesIn(text)).toEqual(expected);
    expect(expected).toContain('ann post');
    expect(expected).not.toContain('bob post');
  });

  it('a write as a user is a dry run, says so, and changes nothing', async () => {
    const { page } = admin;
    await compose(page, {
      method: 'PUT',
      path: `/classes/Post/${ids.ann}`,
      body: '{"title": "changed as ann"}',
      as: 'ann',
    });
    const text = await send(page);
    expect(text).toContain('Status 200');
    await page.getByTestId('dry-run').waitFor();
    expect(await page.getByTestId('dry-run').textContent()).toContain('Dry run: nothing was changed.');
    const wouldHave = page.getByRole('region', { name: 'What would have happened' });
    expect(await wouldHave.textContent()).toContain('"changed as ann"');
    expect((await rest('GET', `/classes/Post/${ids.ann}`)).title).toBe('ann post');
    await admin.screenshot('api-console-dry-run');
  });

  it('a GET as anonymous answers what a REST-key find answers', async () => {
    const { page } = admin;
    await compose(page, { path: '/classes/Post', as: 'anonymous' });
    const text = await send(page);
    const anon = await rest('GET', '/classes/Post', undefined, 'rest');
    expect(titlesIn(text)).toEqual(anon.results.map((r: { title: string }) => r.title).sort());
    expect(titlesIn(text)).not.toContain('ann post');
  });

  it('copy as curl shows placeholders, never a key', async () => {
    const { page } = admin;
    await compose(page, { method: 'POST', path: '/classes/Post', body: '{"title": "curl"}' });
    await page.getByRole('button', { name: 'Copy as curl' }).click();
    const curl = (await page.getByTestId('curl-command').textContent()) ?? '';
    expect(curl).toContain(`curl -X POST '${product.serviceUrl}/classes/Post'`);
    expect(curl).toContain('-H "X-Backend-Master-Key: $MASTER_KEY"');
    expect(curl).toContain(`--data-raw '{"title":"curl"}'`);
    for (const secret of Object.values(product.secrets)) expect(curl).not.toContain(secret);
    await compose(page, { path: '/classes/Post', as: 'ann' });
    await page.getByRole('button', { name: 'Copy as curl' }).click();
    await expect
      .poll(() => page.getByTestId('curl-command').textContent(), POLL)
      .toContain('-H "X-Backend-Session-Token: $SESSION_TOKEN"');
    const asUser = (await page.getByTestId('curl-command').textContent()) ?? '';
    expect(asUser).toContain('-H "X-Backend-REST-API-Key: $REST_API_KEY"');
    expect(asUser).not.toContain(annToken);
    expect(asUser).not.toContain('Master-Key');
  });

  it('the history survives a reload, re-runs a call, holds no key or token, and clears', async () => {
    const { page } = admin;
    await page.reload();
    const entries = page.getByTestId('history-entry');
    await entries.first().waitFor();
    // Newest first: the anonymous GET was the last call sent.
    expect(await entries.count()).toBe(6);
    expect(await entries.first().textContent()).toContain('GET /classes/Post');
    expect(await entries.first().textContent()).toContain('as anonymous');
    const stored = await page.evaluate<string>('JSON.stringify({ ...localStorage })');
    expect(stored).toContain('changed as ann');
    for (const secret of [...Object.values(product.secrets), annToken]) expect(stored).not.toContain(secret);
    // Re-run the POST as master: one more row.
    const posts = entries.filter({ hasText: 'POST /classes/Post' }).filter({ hasText: 'as master key' });
    await posts.first().getByRole('button', { name: 'Re-run' }).click();
    await page.getByTestId('api-answer').waitFor();
    await expect.poll(() => answerText(page), POLL).toContain('Status 201');
    const found = await rest(
      'GET',
      `/classes/Post?where=${encodeURIComponent('{"title":"from the console"}')}`,
    );
    expect(found.results).toHaveLength(2);
    expect(await entries.count()).toBe(7);
    expect(await page.getByLabel('Path').inputValue()).toBe('/classes/Post');
    // Load fills the form without sending: the write as ann, with its body and viewpoint.
    await entries.filter({ hasText: 'PUT' }).getByRole('button', { name: 'Load' }).click();
    expect(await page.getByLabel('Method').inputValue()).toBe('PUT');
    expect(await page.getByLabel('Path').inputValue()).toBe(`/classes/Post/${ids.ann}`);
    expect(JSON.parse(await page.getByLabel('Body (JSON)').inputValue())).toEqual({
      title: 'changed as ann',
    });
    expect(await page.getByLabel('Run as').inputValue()).toBe('user');
    expect(await page.getByTestId('picked-user').textContent()).toContain('ann');
    expect(await entries.count()).toBe(7);
    await page.getByRole('button', { name: 'Clear history' }).click();
    await expect.poll(() => entries.count(), POLL).toBe(0);
    await page.reload();
    await page.getByLabel('Path').waitFor();
    expect(await entries.count()).toBe(0);
  });

  it('no key reached the browser', async () => {
    const responses = await admin.responses();
    expect(responses.filter((r) => r.url.endsWith('/api-console')).length).toBeGreaterThan(5);
    for (const r of responses) {
      const text = r.body.toString('utf8');
      for (const secret of Object.values(product.secrets)) expect(text, r.url).not.toContain(secret);
    }
    expect(admin.problems).toEqual([]);
  });
});

describe('a read-only console user', () => {
  it('is offered GET only, can send it, and the bff refuses a POST', async () => {
    const viewer = await openSession(browser, product);
    try {
      const { page } = viewer;
      await login(page, 'viewer');
      await page.goto(consoleUrl());
      await page.getByLabel('Method').waitFor();
      expect(await page.getByLabel('Method').locator('option').allTextContents()).toEqual(['GET']);
      expect(await page.getByText('Read-only console users may send GET requests only.').count()).toBe(1);
      await compose(page, { path: '/classes/Post' });
      expect(await send(page)).toContain('Status 200');
      const before = (await rest('GET', '/classes/Post?count=1&limit=0')).count;
      const refused = await page.evaluate(async (url) => {
        const res = await fetch(url, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', 'X-Console-CSRF': '1' },
          body: JSON.stringify({
            method: 'POST',
            path: '/classes/Post',
            body: { title: 'ro' },
            as: { kind: 'master' },
          }),
        });
        return { status: res.status, json: await res.json() };
      }, `/bff/apps/${product.appId}/api-console`);
      expect(refused).toEqual({
        status: 403,
        json: { code: 119, error: 'Read-only console users may send GET requests only.' },
      });
      expect((await rest('GET', '/classes/Post?count=1&limit=0')).count).toBe(before);
    } finally {
      await viewer.close();
    }
  });
});
