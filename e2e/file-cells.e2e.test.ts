import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, login, openSession, type Session } from './helpers/browser.ts';
import { type Product, startProduct } from './helpers/product.ts';

/**
 * The data grid's File cells, as an admin and as a read-only console user: an uploaded image shows
 * as a thumbnail that opens an in-console preview (never the file as a page), any other file
 * downloads, and a File value stored before names were checked (a url) is plain text: no link, no
 * image, and the console's backend never fetches it.
 */

/** A 1x1 PNG. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

let product: Product;
let browser: Browser;
/** An internal address the console must never fetch: it counts the requests it gets. */
let internal: Server;
let internalOrigin: string;
let hits = 0;
const sessions: Session[] = [];
const rows = { image: '', text: '', legacyPage: '', legacyImage: '' };

async function uploadToService(name: string, body: Buffer, type: string): Promise<string> {
  const res = await fetch(`${product.serviceUrl}/files/${encodeURIComponent(name)}`, {
    method: 'POST',
    headers: {
      'X-Backend-Application-Id': 'e2e-service-app',
      'X-Backend-Master-Key': product.secrets.masterKey,
      'Content-Type': type,
    },
    body,
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { name: string }).name;
}

/** Writes a row straight to the store, below the write validation: data stored before the rule. */
async function seedLegacy(objectId: string, name: string): Promise<string> {
  const schema = product.service.core.schemas.get('Photo')!;
  await product.service.core.store.insert(schema, {
    objectId,
    createdAt: new Date().toISOString(),
    values: {
      title: { value: objectId, type: 'String' },
      picture: { value: { __type: 'File', name }, type: 'File' },
    },
    acl: null,
    relations: [],
  });
  return objectId;
}

const cell = (page: Page, id: string) => page.locator(`[data-row-id="${id}"] [data-field="picture"]`);

/** True once the first image matched by `selector` has loaded with a real size. */
const imageLoaded = (page: Page, selector: string) =>
  page.evaluate<boolean>(
    `(() => { const el = document.querySelector(${JSON.stringify(selector)}); return el !== null && el.complete && el.naturalWidth > 0; })()`,
  );

beforeAll(async () => {
  internal = createServer((_req, res) => {
    hits++;
    res.writeHead(200, { 'Content-Type': 'text/html' }).end('<script>alert(document.domain)</script>');
  });
  await new Promise<void>((resolve) => internal.listen(0, '127.0.0.1', resolve));
  internalOrigin = `http://127.0.0.1:${(internal.address() as AddressInfo).port}`;
  product = await startProduct();
  browser = await launchBrowser();
  const schema = await product.rest('POST', '/schemas/Photo', {
    fields: { title: { type: 'String' }, picture: { type: 'File' } },
  });
  expect(schema.status).toBe(200);
  const png = await uploadToService('dot.png', PNG, 'image/png');
  const notes = await uploadToService('notes.txt', Buffer.from('hello notes'), 'text/plain');
  for (const [key, title, name] of [
    ['image', 'image', png],
    ['text', 'text', notes],
  ] as const) {
    const created = await product.rest('POST', '/classes/Photo', {
      title,
      picture: { __type: 'File', name },
    });
    expect(created.status).toBe(201);
    rows[key] = created.json.objectId;
  }
  rows.legacyPage = await seedLegacy('legacyPage', `${internalOrigin}/evil.html`);
  rows.legacyImage = await seedLegacy('legacyImg1', `${internalOrigin}/pixel.png`);
});

afterAll(async () => {
  for (const s of sessions) await s.close();
  await browser?.close();
  await product?.close();
  await new Promise((resolve) => internal?.close(resolve));
});

for (const username of ['admin', 'viewer']) {
  describe(`File cells in the data grid (${username})`, () => {
    it('a thumbnail opens an in-console preview, a text file downloads, a foreign name is plain text', async () => {
      const session = await openSession(browser, product);
      sessions.push(session);
      const { page, context, problems, screenshot } = session;
      await login(page, username);
      await page.goto(`/apps/${product.appId}/data/Photo`);
      await cell(page, rows.legacyPage).waitFor();

      // The image: a thumbnail that loads.
      const image = cell(page, rows.image).getByTestId('file-value');
      await image.locator('img').waitFor();
      const thumb = `[data-row-id="${rows.image}"] [data-field="picture"] [data-testid="file-value"] img`;
      await expect.poll(() => imageLoaded(page, thumb)).toBe(true);
      expect(await image.textContent()).toContain('dot.png');

      // Clicking it opens a preview inside the console: no new tab, no navigation to the file.
      const at = page.url();
      await image.getByRole('button', { name: 'Preview dot.png' }).click();
      const preview = page.getByRole('dialog', { name: 'dot.png' });
      await preview.waitFor();
      await expect.poll(() => imageLoaded(page, 'dialog[open] img')).toBe(true);
      expect(page.url()).toBe(at);
      expect(context.pages()).toHaveLength(1);
      await screenshot(`file-cells-preview-${username}`);
      await preview.getByRole('button', { name: 'Close' }).click();
      await preview.waitFor({ state: 'hidden' });

      // The text file: its link downloads the bytes.
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        cell(page, rows.text).getByTestId('file-value').click(),
      ]);
      expect(download.suggestedFilename()).toBe('notes.txt');
      expect(await readFile((await download.path())!, 'utf8')).toBe('hello notes');
      expect(page.url()).toBe(at);

      // Foreign names (stored before the rule): plain text, no link, no image, and a title saying why.
      for (const [id, name] of [
        [rows.legacyPage, `${internalOrigin}/evil.html`],
        [rows.legacyImage, `${internalOrigin}/pixel.png`],
      ] as const) {
        const foreign = cell(page, id).getByTestId('file-value-foreign');
        expect(await foreign.textContent()).toBe(name);
        expect(await foreign.getAttribute('title')).toBe(
          'Not a file stored by this service (written before file names were checked): shown as text, never opened.',
        );
        // The one control such a cell may hold is its editor's (to upload a replacement), never
        // anything that opens or loads the name.
        expect(await cell(page, id).locator('a, img, button:not([aria-label^="edit "])').count()).toBe(0);
      }

      // Asked directly, the console's backend refuses the url without fetching it.
      const direct = await page.evaluate<{ status: number; body: unknown }>(
        `fetch(${JSON.stringify(`/bff/apps/${product.appId}/files/${encodeURIComponent(`${internalOrigin}/evil.html`)}`)}).then(async (r) => ({ status: r.status, body: await r.json() }))`,
      );
      expect(direct).toEqual({
        status: 400,
        body: {
          code: 122,
          error: `${JSON.stringify(`${internalOrigin}/evil.html`)} is not the name of a file stored by this service.`,
        },
      });
      await screenshot(`file-cells-${username}`);

      // The Files section lists them, as plain text too.
      await page.goto(`/apps/${product.appId}/files`);
      const report = page.getByRole('region', { name: 'Foreign file values' });
      await expect.poll(() => report.getByTestId('foreign-row').count()).toBe(2);
      expect(await report.getByTestId('file-value-foreign').allTextContents()).toEqual(
        expect.arrayContaining([`${internalOrigin}/evil.html`, `${internalOrigin}/pixel.png`]),
      );
      expect(await report.locator('a, img').count()).toBe(0);
      expect(hits).toBe(0);
      expect(problems).toEqual([]);
    });
  });
}
