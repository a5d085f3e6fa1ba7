import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, login, openSession, type Session } from './helpers/browser.ts';
import { type Product, startProduct } from './helpers/product.ts';

/**
 * A class's API tab in Chromium (docs/protocol.md#openapi): opened from the data browser's class
 * header, it lists the operations of the class with whether the public may use each, shows the
 * examples with the class's fields in curl, the TypeScript client and the Parse JS SDK, and its
 * "Try it" sends the call through the API console, whose answer shows there. No key reaches the
 * browser.
 */

let product: Product;
let browser: Browser;
let admin: Session;
let rowId: string;

beforeAll(async () => {
  product = await startProduct();
  browser = await launchBrowser();
  // Everyone reads Book; only the master key writes it.
  const created = await product.rest('POST', '/schemas/Book', {
    className: 'Book',
    fields: { title: { type: 'String' }, pages: { type: 'Number' } },
    classLevelPermissions: {
      find: { '*': true },
      get: { '*': true },
      count: { '*': true },
      create: {},
      update: {},
      delete: {},
      addField: {},
    },
  });
  expect(created.status).toBe(200);
  const row = await product.rest('POST', '/classes/Book', { title: 'text', pages: 320 });
  expect(row.status).toBe(201);
  rowId = row.json.objectId;
  admin = await openSession(browser, product);
  await login(admin.page);
}, 120_000);

afterAll(async () => {
  await admin?.close();
  await browser?.close();
  await product?.close();
});

describe("a class's API tab", () => {
  it('lists the operations, switches the example language, and tries a find in the API console', async () => {
    const { page } = admin;
    await page.goto(`/apps/${product.appId}/data/Book`);
    await page.getByTestId('class-header').getByRole('link', { name: 'API' }).click();
    await page.waitForURL(`**/apps/${product.appId}/api-docs/Book`);
    await page.getByRole('heading', { name: 'API: Book', level: 1 }).waitFor();

    const table = page.getByTestId('api-operations');
    await expect
      .poll(() => table.locator('tbody tr').last().textContent())
      .toBe('Delete a Book rowDELETE/classes/Book/{objectId}no');
    expect(await table.locator('tbody tr').allTextContents()).toEqual([
      'Find Book rowsGET/classes/Bookyes',
      'Create a Book rowPOST/classes/Bookno',
      'Get a Book rowGET/classes/Book/{objectId}yes',
      'Update a Book rowPUT/classes/Book/{objectId}no',
      'Delete a Book rowDELETE/classes/Book/{objectId}no',
    ]);

    const server = (await product.rest('GET', '/openapi.json')).json.servers[0].url;
    const create = page.getByTestId('example-create');
    // curl first, with the class's fields and the keys as shell variables.
    await expect.poll(() => create.textContent()).toContain(`'${server}/classes/Book'`);
    expect(await create.textContent()).toBe(
      [
        `curl -X POST '${server}/classes/Book' \\`,
        '  -H "X-Backend-Application-Id: $APPLICATION_ID" \\',
        '  -H "X-Backend-REST-API-Key: $REST_API_KEY" \\',
        '  -H "Content-Type: application/json" \\',
        `  --data-raw '{"title":"text","pages":1}'`,
      ].join('\n'),
    );

    await page.getByRole('tab', { name: 'TypeScript client' }).click();
    await expect.poll(() => create.textContent()).toContain('client.create');
    expect((await create.textContent())?.split('\n')).toContain(
      'const res = await client.create("Book", {"title":"text","pages":1});',
    );
    expect((await page.getByTestId('example-get').textContent())?.split('\n')).toContain(
      `const res = await client.get("Book", "${rowId}");`,
    );

    await page.getByRole('tab', { name: 'Parse JS SDK' }).click();
    await expect
      .poll(() => page.getByTestId('example-find').textContent())
      .toContain('new Parse.Query("Book")');
    expect((await page.getByTestId('example-find').textContent())?.split('\n')).toContain(
      'query.equalTo("title", "text");',
    );

    await page.getByRole('tab', { name: 'curl' }).click();
    await expect
      .poll(() => page.getByTestId('example-find').textContent())
      .toBe(
        [
          `curl -X GET '${server}/classes/Book' \\`,
          '  -H "X-Backend-Application-Id: $APPLICATION_ID" \\',
          '  -H "X-Backend-REST-API-Key: $REST_API_KEY" \\',
          '  -G \\',
          `  --data-urlencode 'where={"title":"text"}' \\`,
          `  --data-urlencode 'limit=10'`,
        ].join('\n'),
      );

    // Try it, as anonymous: the API console opens with the find and sends it at once.
    await page.getByLabel('Try it as').selectOption('anonymous');
    await page.getByRole('button', { name: 'Try GET /classes/Book', exact: true }).click();
    await page.waitForURL(`**/apps/${product.appId}/api-console?**`);
    expect(await page.getByLabel('Path').inputValue()).toBe('/classes/Book');
    expect(await page.getByLabel('Run as').inputValue()).toBe('anonymous');
    await page.getByTestId('api-answer').waitFor();
    expect(await page.getByTestId('answer-status').textContent()).toBe('Status 200');
    const answer = (await page.getByTestId('api-answer').textContent()) ?? '';
    expect(answer).toContain('sent with the application keys only');
    expect(answer).toContain(rowId);

    // A write is prefilled, not sent: it waits for Send.
    await page.goBack();
    await page.getByRole('heading', { name: 'API: Book', level: 1 }).waitFor();
    await page.getByLabel('Try it as').selectOption('master');
    await page.getByRole('button', { name: 'Try POST /classes/Book', exact: true }).click();
    await page.waitForURL(`**/apps/${product.appId}/api-console?**`);
    expect(await page.getByLabel('Method').inputValue()).toBe('POST');
    expect(JSON.parse(await page.getByLabel('Body (JSON)').inputValue())).toEqual({
      title: 'text',
      pages: 1,
    });
    expect(await page.getByTestId('api-answer').count()).toBe(0);
    expect((await product.rest('GET', '/classes/Book')).json.results).toHaveLength(1);

    // As a user: the console picks the user to run as; the change would be a dry run.
    await page.goBack();
    await page.getByRole('heading', { name: 'API: Book', level: 1 }).waitFor();
    await page.getByLabel('Try it as').selectOption('user');
    await page.getByRole('button', { name: 'Try PUT /classes/Book/{objectId}', exact: true }).click();
    await page.waitForURL(`**/apps/${product.appId}/api-console?**`);
    expect(await page.getByLabel('Path').inputValue()).toBe(`/classes/Book/${rowId}`);
    expect(await page.getByLabel('Run as').inputValue()).toBe('user');
    expect(await page.getByTestId('api-answer').count()).toBe(0);

    // Back to the class in the data browser.
    await page.goBack();
    await page.getByRole('link', { name: 'Back to the data' }).click();
    await page.waitForURL(`**/apps/${product.appId}/data/Book`);
    await page.getByTestId('class-header').waitFor();

    const bodies = (await admin.responses()).map((r) => r.body.toString('utf8')).join('\n');
    for (const secret of Object.values(product.secrets)) expect(bodies).not.toContain(secret);
    expect(admin.problems).toEqual([]);
  }, 90_000);
});
