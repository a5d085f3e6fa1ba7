import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, login, openSession, type Session } from './helpers/browser.ts';
import { PASSWORD, type Product, startProduct, WEB_DIST } from './helpers/product.ts';

let product: Product;
let browser: Browser;
const sessions: Session[] = [];

async function session(options?: Parameters<typeof openSession>[2]): Promise<Session> {
  const s = await openSession(browser, product, options);
  sessions.push(s);
  return s;
}

beforeAll(async () => {
  product = await startProduct();
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  await product?.close();
});

describe('console shell', () => {
  it('sends a logged-out visitor to the login page, logs in and out', async () => {
    const { page, screenshot, problems } = await session();
    await page.goto(`/apps/${product.appId}/config`);
    await page.waitForURL(/\/login\?next=/);
    await page.getByLabel('Username').waitFor();
    await screenshot('login');

    await page.getByLabel('Username').fill('admin');
    await page.getByLabel('Password').fill('wrong password');
    await page.getByRole('button', { name: 'Log in' }).click();
    const error = page.getByTestId('login-error');
    await expect.poll(() => error.textContent()).toContain('Invalid username or password.');
    expect(await error.textContent()).toContain('code 101');

    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    // Back where the visitor wanted to go.
    await page.waitForURL(`**/apps/${product.appId}/config`);
    await page.getByRole('heading', { name: 'Config' }).waitFor();
    await screenshot('shell-config');

    await page.getByTestId('user-menu').click();
    await page.getByRole('menuitem', { name: 'Log out' }).click();
    await page.waitForURL(/\/login$/);
    const status = await page.evaluate('fetch("/bff/session").then((r) => r.status)');
    expect(status).toBe(401);
    await page.goto(`/apps/${product.appId}/data`);
    await page.waitForURL(/\/login\?next=/);
    expect(problems).toEqual([]);
  });

  it('asks enrolled users for their authentication code', async () => {
    const { page, screenshot } = await session();
    await page.goto('/login');
    await page.getByLabel('Username').fill('mfa');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    const code = page.getByLabel('Authentication code');
    await code.waitFor();
    await screenshot('login-totp');
    await code.fill('000000');
    await page.getByRole('button', { name: 'Verify' }).click();
    await expect
      .poll(() => page.getByTestId('login-error').textContent())
      .toContain('Invalid authentication code');
    await code.fill(product.totp());
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.waitForURL(`**/apps/${product.appId}/data`);
    await page.getByRole('navigation', { name: 'Sections' }).waitFor();
    await screenshot('data-after-totp');
  });

  it('switches apps and sections: the Security section opens and survives the app switch', async () => {
    const { page, screenshot } = await session();
    await login(page);
    await page.getByRole('link', { name: /Security/ }).click();
    await page.waitForURL(`**/apps/${product.appId}/security`);
    const securityOpen = async () => {
      await page.getByRole('heading', { name: 'Security', level: 1 }).waitFor();
      for (const tab of ['Class access', 'Roles', 'Users', 'Sessions', 'Installations']) {
        await page.getByRole('tab', { name: tab }).waitFor();
      }
      expect(await page.getByText('Coming in a later release.').count()).toBe(0);
    };
    await securityOpen();
    await page.getByTestId('app-switcher').selectOption('second-app');
    await page.waitForURL('**/apps/second-app/security');
    await securityOpen();
    await screenshot('security-after-app-switch');
  });

  it('shows the keyboard shortcuts with ? and navigates with g c', async () => {
    const { page, screenshot } = await session();
    await login(page);
    await page.keyboard.press('?');
    const help = page.getByRole('dialog', { name: 'Keyboard shortcuts' });
    await help.waitFor();
    expect(await help.textContent()).toContain('Go to Config');
    await screenshot('shortcuts');
    await page.keyboard.press('Escape');
    await help.waitFor({ state: 'hidden' });
    await page.keyboard.press('g');
    await page.keyboard.press('c');
    await page.waitForURL(`**/apps/${product.appId}/config`);
  });

  it('follows the system theme, switches and remembers the choice', async () => {
    await product.rest('PUT', '/config', { params: { greeting: 'hello', retries: 3 } });
    const { page, screenshot } = await session({ colorScheme: 'dark' });
    await login(page);
    const isDark = () => page.evaluate('document.documentElement.classList.contains("dark")');
    const background = () => page.evaluate('getComputedStyle(document.body).backgroundColor');
    expect(await isDark()).toBe(true);
    const darkBg = await background();
    await page.goto(`/apps/${product.appId}/config`);
    await page.getByTestId('param-greeting').waitFor();
    await screenshot('dark-mode');

    await page.getByTestId('theme-select').selectOption('light');
    expect(await isDark()).toBe(false);
    expect(await background()).not.toBe(darkBg);
    await page.reload();
    await page.getByRole('heading', { name: 'Config' }).waitFor();
    expect(await isDark()).toBe(false); // persisted, applied before first paint

    await page.keyboard.press('t'); // light -> dark
    expect(await isDark()).toBe(true);
    await page.getByTestId('theme-select').selectOption('system');
    expect(await isDark()).toBe(true);
    await page.emulateMedia({ colorScheme: 'light' });
    await expect.poll(isDark).toBe(false);
  });
});

describe('config editor', () => {
  it('adds typed parameters, shows the diff, saves, and lists the change in the history', async () => {
    await product.rest('PUT', '/config', { params: { greeting: 'hello', retries: 3 } });
    const { page, screenshot } = await session();
    await login(page);
    await page.goto(`/apps/${product.appId}/config`);
    await page.getByTestId('param-greeting').waitFor();

    await page.getByLabel('Value of greeting').fill('hello world');
    await page.getByLabel('New parameter name').fill('featureFlags');
    await page.getByLabel('New parameter type').selectOption('object');
    await page.getByRole('button', { name: 'Add' }).click();
    await page.getByLabel('Value of featureFlags').fill('{"beta": true}');
    await page.getByLabel('featureFlags is master key only').check();
    await page.getByLabel('New parameter name').fill('launchAt');
    await page.getByLabel('New parameter type').selectOption('date');
    await page.getByRole('button', { name: 'Add' }).click();
    await page.getByLabel('Value of launchAt').fill('2030-01-02T03:04:05');
    await page.getByTestId('param-retries').getByRole('button', { name: 'Delete' }).click();

    await page.getByRole('button', { name: /Review changes/ }).click();
    const dialog = page.getByRole('dialog', { name: 'Review config changes' });
    await dialog.waitFor();
    const diff = (await dialog.getByTestId('config-diff').textContent()) ?? '';
    expect(diff).toContain('greeting');
    expect(diff).toContain('"hello world"');
    expect(diff).toContain('featureFlags');
    expect(diff).toContain('masterKeyOnly: false → true');
    expect(diff).toContain('retries');
    await screenshot('config-diff');
    await dialog.getByRole('button', { name: 'Save changes' }).click();
    await page.getByTestId('toast-success').filter({ hasText: 'Config saved' }).waitFor();

    const saved = await product.rest('GET', '/config');
    expect(saved.json.params.greeting).toBe('hello world');
    expect(saved.json.params.featureFlags).toEqual({ beta: true });
    expect(saved.json.params.launchAt).toEqual({
      __type: 'Date',
      iso: new Date('2030-01-02T03:04:05').toISOString(),
    });
    expect(saved.json.params.retries).toBeUndefined();
    expect(saved.json.masterKeyOnly.featureFlags).toBe(true);
    const publicView = await product.rest('GET', '/config', undefined, 'rest');
    expect(publicView.json.params.featureFlags).toBeUndefined();
    expect(publicView.json.params.greeting).toBe('hello world');

    await page.getByRole('tab', { name: 'History' }).click();
    await page.waitForURL(/tab=history/);
    const history = page.getByTestId('config-history');
    await history.waitFor();
    const text = (await history.textContent()) ?? '';
    expect(text).toContain('admin');
    expect(text).toContain('featureFlags');
    await screenshot('config-history');
  });

  it('shows the error code and text when a save is refused, and changes nothing', async () => {
    const { page, screenshot } = await session();
    await login(page);
    await page.goto(`/apps/${product.appId}/config`);
    await page.getByTestId('param-greeting').waitFor();
    await page.getByLabel('Value of greeting').fill('changed by the browser');
    // The session ends behind the page's back (logout in another tab): the save is refused.
    await page.evaluate('fetch("/bff/logout", {method: "POST", headers: {"X-Console-CSRF": "1"}})');
    await page.getByRole('button', { name: /Review changes/ }).click();
    await page
      .getByRole('dialog', { name: 'Review config changes' })
      .getByRole('button', { name: 'Save changes' })
      .click();
    const toast = page.getByTestId('toast-error').filter({ hasText: 'Config not saved' });
    await toast.waitFor();
    expect(await toast.textContent()).toMatch(/\[119\].*Not logged in\./);
    await page.waitForURL(/\/login/);
    await screenshot('config-refused');
    const saved = await product.rest('GET', '/config');
    expect(saved.json.params.greeting).toBe('hello world');
  });

  it('hides write controls from read-only users', async () => {
    const { page, screenshot } = await session();
    await login(page, 'viewer');
    await page.goto(`/apps/${product.appId}/config`);
    await page.getByTestId('param-greeting').waitFor();
    expect(await page.getByRole('button', { name: /Review changes/ }).count()).toBe(0);
    expect(await page.getByLabel('Value of greeting').isDisabled()).toBe(true);
    await page.getByText('Read-only console users cannot change the config.').waitFor();
    await screenshot('config-read-only');
  });
});

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    return statSync(full).isDirectory() ? filesUnder(full) : [full];
  });
}

describe('keys never reach the browser', () => {
  it('no page, response, header, cookie or bundle file contains a configured key', async () => {
    const s = await session();
    const { page, context } = s;
    await login(page);
    for (const section of ['data', 'config', 'config?tab=history', 'security', 'audit', 'api-console']) {
      await page.goto(`/apps/${product.appId}/${section}`);
      await page.getByRole('navigation', { name: 'Sections' }).waitFor();
      await page.waitForLoadState('networkidle');
    }
    const html = await page.content();
    const cookies = JSON.stringify(await context.cookies());
    const storage = String(await page.evaluate('JSON.stringify(Object.entries(localStorage))'));
    await s.screenshot('key-scan-last-page');
    await page.getByTestId('user-menu').click();
    await page.getByRole('menuitem', { name: 'Log out' }).click();
    await page.waitForURL(/\/login$/);

    // Every response seen by every browser session of this file (this one included).
    const responses = (await Promise.all(sessions.map((x) => x.responses()))).flat();
    expect(responses.length).toBeGreaterThan(20);
    expect(responses.some((r) => r.url.includes('/bff/apps/') && r.url.endsWith('/config'))).toBe(true);
    expect(responses.some((r) => /\/assets\/.*\.js$/.test(r.url))).toBe(true);

    const leaks: string[] = [];
    for (const [name, secret] of Object.entries(product.secrets)) {
      const forms = [secret, encodeURIComponent(secret), Buffer.from(secret).toString('base64')];
      const has = (text: string) => forms.some((f) => text.includes(f));
      for (const r of responses) {
        if (has(r.body.toString('latin1')) || has(JSON.stringify(r.headers)))
          leaks.push(`${name} in ${r.url}`);
      }
      if (has(html)) leaks.push(`${name} in the page`);
      if (has(cookies)) leaks.push(`${name} in a cookie`);
      if (has(storage)) leaks.push(`${name} in localStorage`);
      for (const file of filesUnder(WEB_DIST)) {
        if (has(readFileSync(file, 'latin1'))) leaks.push(`${name} in ${path.relative(WEB_DIST, file)}`);
      }
    }
    expect(leaks).toEqual([]);
    // The bundle does not even know the service's key headers.
    for (const file of filesUnder(WEB_DIST)) {
      expect(readFileSync(file, 'utf8')).not.toMatch(/X-(Parse|Backend)-(Master|REST-API|JavaScript)-Key/i);
    }
  });
});
