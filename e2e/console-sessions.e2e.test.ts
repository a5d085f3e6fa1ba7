import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, login, openSession, type Session } from './helpers/browser.ts';
import { type Product, startProduct } from './helpers/product.ts';

let product: Product;
let browser: Browser;
const sessions: Session[] = [];

async function session(): Promise<Session> {
  const s = await openSession(browser, product);
  sessions.push(s);
  return s;
}

beforeAll(async () => {
  product = await startProduct();
  browser = await launchBrowser();
});

afterAll(async () => {
  for (const s of sessions) await s.close().catch(() => {});
  await browser?.close();
  await product?.close();
});

const sessionAnswer = `fetch("/bff/session").then(async (r) => ({ status: r.status, body: await r.json() }))`;

describe('console sessions', () => {
  it('"Sign out everywhere" ends the same user\'s session in another browser at once', async () => {
    const here = await session();
    const elsewhere = await session();
    const viewer = await session();
    await login(here.page);
    await login(elsewhere.page);
    await login(viewer.page, 'viewer');
    expect(await elsewhere.page.evaluate(sessionAnswer)).toMatchObject({ status: 200 });

    await here.page.getByTestId('user-menu').click();
    await here.page.getByRole('menuitem', { name: 'Sign out everywhere' }).click();
    await here.page.waitForURL(/\/login$/);

    // The other browser's cookie is still there, but the bff refuses it.
    expect(await elsewhere.page.evaluate(sessionAnswer)).toEqual({
      status: 401,
      body: { code: 119, error: 'Session expired; log in again.' },
    });
    await elsewhere.page.goto(`/apps/${product.appId}/data`);
    await elsewhere.page.waitForURL(/\/login\?next=/);
    // Another user's session is not touched.
    expect(await viewer.page.evaluate(sessionAnswer)).toMatchObject({
      status: 200,
      body: { user: { username: 'viewer' } },
    });
    // Read-only users do not get the control (the route answers them 403).
    await viewer.page.getByTestId('user-menu').click();
    await viewer.page.getByRole('menuitem', { name: 'Log out' }).waitFor();
    expect(await viewer.page.getByRole('menuitem', { name: 'Sign out everywhere' }).count()).toBe(0);
    // Logging in again works.
    await login(elsewhere.page);
    expect(await elsewhere.page.evaluate(sessionAnswer)).toMatchObject({ status: 200 });
  });
});
