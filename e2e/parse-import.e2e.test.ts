import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  INCUMBENT_KEYS,
  type Incumbent,
  incumbentUnavailable,
  startIncumbent,
} from '../server/test/from-parse/incumbent.ts';
import { launchBrowser, login, openSession, type Session } from './helpers/browser.ts';
import { type Product, startProduct } from './helpers/product.ts';

/**
 * The Server page's "Import from parse-server" in Chromium, against a real parse-server (the
 * from-parse tests' incumbent), configured in the bff as an import source: every control of the
 * form, the progress bar per class, the summary, a failed run shown, the one audit entry per
 * import, and neither the incumbent's master key nor its database URL in any answer the browser
 * got. A read-only user gets no form; an app without sources says how to configure one.
 */

const unavailable = await incumbentUnavailable();
if (unavailable) console.log(`[parse-import e2e] skipped: ${unavailable}`);

let incumbent: Incumbent;
let product: Product;
let browser: Browser;
const sessions: Session[] = [];

/** A REST call to the incumbent with its master key (seeding only: the import writes nothing there). */
async function incumbentPost(route: string, body: unknown): Promise<void> {
  const res = await fetch(`${incumbent.url}${route}`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      'X-Parse-Application-Id': INCUMBENT_KEYS.appId,
      'X-Parse-Master-Key': INCUMBENT_KEYS.masterKey,
    },
    body: JSON.stringify(body),
  });
  expect(res.status, await res.text()).toBe(201);
}

describe.skipIf(unavailable !== undefined)('import from parse-server in the console', () => {
  beforeAll(async () => {
    incumbent = await startIncumbent();
    for (const title of ['one', 'two', 'three']) await incumbentPost('/classes/Item', { title });
    await incumbentPost('/users', { username: 'pat', password: 'pat-old-pw' });
    product = await startProduct({
      parseSources: [
        {
          name: 'incumbent',
          serverURL: incumbent.url,
          appId: INCUMBENT_KEYS.appId,
          masterKey: INCUMBENT_KEYS.masterKey,
          postgresURL: incumbent.databaseURI,
        },
        { name: 'gone', serverURL: 'http://127.0.0.1:9/parse', appId: 'gone', masterKey: 'gone-master-key' },
      ],
    });
    browser = await launchBrowser();
  }, 120_000);

  afterAll(async () => {
    for (const s of sessions) await s.close();
    await browser?.close();
    await product?.close();
    await incumbent?.stop();
  });

  async function session(username: string, app = product.appId): Promise<Session> {
    const s = await openSession(browser, product);
    sessions.push(s);
    await login(s.page, username);
    await s.page.goto(`/apps/${app}/server`);
    await s.page.getByRole('heading', { name: 'Import from parse-server', level: 2 }).waitFor();
    return s;
  }

  const form = (page: Page) => page.getByRole('form', { name: 'Import from parse-server' });

  it('an admin starts an import, follows it per class and reads its summary; the Audit section has one entry per import', async () => {
    const admin = await session('admin');
    const { page } = admin;
    const f = form(page);

    // The sources come from the console's configuration, by name and URL only.
    const source = f.getByLabel('Source');
    expect(await source.locator('option').allTextContents()).toEqual([
      `incumbent: ${incumbent.url} (${INCUMBENT_KEYS.appId})`,
      'gone: http://127.0.0.1:9/parse (gone)',
    ]);
    expect(await f.getByTestId('parse-import-source').textContent()).toBe(
      'Its database is configured: users keep their passwords, and relations are read from its tables.',
    );

    // A source nobody answers at: the run fails, and says why.
    await source.selectOption('gone');
    expect(await f.getByTestId('parse-import-source').textContent()).toBe(
      'No database is configured: users will have to reset their passwords.',
    );
    await f.getByRole('button', { name: 'Start import' }).click();
    const run = page.getByTestId('parse-import-run');
    await expect.poll(() => run.getAttribute('data-status'), { timeout: 30_000 }).toBe('failed');
    expect(await run.getByRole('alert').textContent()).toMatch(
      /^cannot reach parse-server at http:\/\/127\.0\.0\.1:9\/parse: /,
    );

    await source.selectOption('incumbent');
    await f.getByLabel('Sessions too (signed-in users stay signed in)').check();
    await f.getByRole('button', { name: 'Start import' }).click();
    await expect.poll(() => run.getAttribute('data-status'), { timeout: 60_000 }).toBe('done');
    const item = run.getByRole('listitem').filter({ hasText: /^Item/ });
    expect(await item.textContent()).toBe('Item3 / 3');
    const bar = item.getByRole('progressbar', { name: 'Item progress' });
    expect(await bar.getAttribute('value')).toBe('3');
    expect(await bar.getAttribute('max')).toBe('3');
    const summary = run.getByRole('definition');
    const terms = await run.getByRole('term').allTextContents();
    const values = await summary.allTextContents();
    const shown = Object.fromEntries(terms.map((t, i) => [t, values[i]]));
    expect(shown).toMatchObject({
      Kind: 'a full import',
      Rows: '4',
      'Password hashes': '1',
      'Deleted here, gone there': '0',
      'authData not imported': 'none',
    });
    // The rows are here, and pat signs in with the old password.
    expect((await product.rest('GET', '/classes/Item')).json.results).toHaveLength(3);
    const pat = await product.rest('POST', '/login', { username: 'pat', password: 'pat-old-pw' }, 'rest');
    expect(pat.status).toBe(200);
    await admin.screenshot('parse-import');

    // The Audit section: one entry for the import, with its summary and without the key.
    await page
      .getByRole('navigation', { name: 'Sections' })
      .getByRole('link', { name: 'Audit', exact: true })
      .click();
    const rows = page.getByTestId('audit-row');
    await expect
      .poll(async () => (await rows.first().getByTestId('audit-action').textContent()) ?? '')
      .toBe('app.importFromParse');
    expect(await rows.first().getByTestId('audit-target').textContent()).toBe(incumbent.url);
    // One entry per import: the failed one, then this one.
    const targets = await rows
      .filter({ has: page.getByTestId('audit-action').getByText('app.importFromParse', { exact: true }) })
      .getByTestId('audit-target')
      .allTextContents();
    expect(targets).toEqual([incumbent.url, 'http://127.0.0.1:9/parse']);
    await rows
      .first()
      .getByRole('button', { name: /Show changes/ })
      .click();
    const diff = (await page.getByTestId('audit-diff').textContent()) ?? '';
    // What was asked (no key) and how it ended, in one entry.
    for (const part of [
      '"source": "incumbent"',
      '"status": "done"',
      '"rows": 4',
      '"passwords": 1',
      '"postgres": true',
      '"sessions": true',
    ])
      expect(diff).toContain(part);

    const seen = [await page.content(), ...(await admin.responses()).map((r) => r.body.toString('utf8'))];
    for (const text of seen) {
      expect(text.includes(INCUMBENT_KEYS.masterKey), 'the master key reached the browser').toBe(false);
      expect(text.includes(incumbent.databaseURI), 'the database URL reached the browser').toBe(false);
      expect(text.includes('gone-master-key'), 'a master key reached the browser').toBe(false);
    }
    expect(admin.problems).toEqual([]);
  });

  it('a read-only console user sees no form', async () => {
    const viewer = await session('viewer');
    expect(await form(viewer.page).count()).toBe(0);
    expect(await viewer.page.getByText('Read-only console users cannot start an import.').count()).toBe(1);
    expect(viewer.problems).toEqual([]);
  });

  it('an app without sources says how to configure one', async () => {
    const admin = await session('admin', 'second-app');
    expect(await form(admin.page).count()).toBe(0);
    expect(await admin.page.getByTestId('parse-import-no-sources').textContent()).toBe(
      "No parse-server is configured for this app. Add one to the console's configuration under apps[].parseSources (its URL, application id, master key and, for password hashes, its database URL): its keys stay on the console's server.",
    );
    expect(admin.problems).toEqual([]);
  });
});
