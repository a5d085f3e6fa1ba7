import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakePush, startFakePush } from '../server/test/helpers/fake-push.ts';
import { launchBrowser, login, openSession, type Session } from './helpers/browser.ts';
import { type Product, startProduct } from './helpers/product.ts';

/** A 1x1 PNG: the preview must load it as an image. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

/** Waits until the first element with `testId` shows exactly `text` (the suite's poll bound unless given). */
async function waitText(
  page: Session['page'],
  testId: string,
  text: string,
  timeout?: number,
): Promise<void> {
  await expect
    .poll(() => page.getByTestId(testId).first().textContent(), timeout ? { timeout } : {})
    .toBe(text);
}

let product: Product;
let browser: Browser;
let fake: FakePush;
const sessions: Session[] = [];

async function session(): Promise<Session> {
  const s = await openSession(browser, product);
  sessions.push(s);
  return s;
}

beforeAll(async () => {
  fake = await startFakePush();
  product = await startProduct({ service: { push: fake.options, analytics: { adapter: 'store' } } });
  browser = await launchBrowser();
});

afterAll(async () => {
  for (const s of sessions) await s.close();
  await browser?.close();
  await product?.close();
  await fake?.close();
});

describe('files, push and analytics in the console', () => {
  it('uploads a file with progress onto a row, and the row shows its preview', async () => {
    expect(
      (
        await product.rest('POST', '/schemas/Photo', {
          fields: { title: { type: 'String' }, picture: { type: 'File' } },
        })
      ).status,
    ).toBe(200);
    const row = await product.rest('POST', '/classes/Photo', { title: 'cat' });
    const { page, screenshot, problems } = await session();
    await login(page);
    await page
      .getByRole('navigation', { name: 'Sections' })
      .getByRole('link', { name: 'Files', exact: true })
      .click();
    await page.waitForURL(`**/apps/${product.appId}/files`);
    await page
      .getByLabel('File to upload')
      .setInputFiles({ name: 'cat picture.png', mimeType: 'image/png', buffer: PNG });
    await page.getByLabel('Class').fill('Photo');
    await page.getByLabel('Object id').fill(row.json.objectId);
    await page.getByLabel('Field').fill('picture');
    await page.getByRole('button', { name: 'Upload', exact: true }).click();
    await page.getByTestId('upload-result').waitFor();
    expect(await page.getByTestId('upload-progress').getAttribute('value')).toBe('100');
    await screenshot('files-uploaded');

    const stored = await product.rest('GET', `/classes/Photo/${row.json.objectId}`);
    expect(stored.json.picture.name).toMatch(/^[0-9a-f]{32}_cat picture\.png$/);

    await page.goto(`/apps/${product.appId}/data/Photo`);
    const preview = page.getByTestId('grid').getByTestId('file-value');
    await preview.waitFor();
    const img = preview.locator('img');
    await img.waitFor();
    // Polled from the test (page.waitForFunction re-evaluates a string in the page, which the
    // console's CSP refuses whenever the image is not loaded at the first look).
    await expect
      .poll(() =>
        page.evaluate<boolean>(
          `(() => { const el = document.querySelector('[data-testid="grid"] [data-testid="file-value"] img'); return el !== null && el.complete && el.naturalWidth === 1; })()`,
        ),
      )
      .toBe(true);
    expect(await preview.textContent()).toContain('cat picture.png');
    await screenshot('files-row-preview');
    // The file is referenced: the orphan report does not list it.
    await page.goto(`/apps/${product.appId}/files`);
    await page.getByRole('heading', { name: 'Orphan files' }).waitFor();
    await page.getByTestId('orphans-empty').waitFor();
    expect(problems).toEqual([]);
  });

  it('deletes an orphan file from the report', async () => {
    const res = await fetch(`${product.serviceUrl}/files/leftover.txt`, {
      method: 'POST',
      headers: {
        'X-Backend-Application-Id': 'e2e-service-app',
        'X-Backend-Master-Key': product.secrets.masterKey,
        'Content-Type': 'text/plain',
      },
      body: 'left over',
    });
    expect(res.status).toBe(201);
    const { page } = await session();
    await login(page);
    await page.goto(`/apps/${product.appId}/files`);
    const orphan = page.getByTestId('orphan-row');
    await orphan.waitFor();
    expect(await orphan.textContent()).toContain('leftover.txt');
    // A file that is not an image downloads.
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      orphan.getByTestId('file-value').click(),
    ]);
    expect(download.suggestedFilename()).toBe('leftover.txt');
    const { readFile } = await import('node:fs/promises');
    expect(await readFile((await download.path())!, 'utf8')).toBe('left over');
    await orphan.getByRole('button', { name: 'Delete' }).click();
    await page
      .getByRole('dialog', { name: 'Delete this file?' })
      .getByRole('button', { name: 'Delete file' })
      .click();
    await page.getByTestId('orphans-empty').waitFor();
    const list = await product.rest('GET', '/files/orphans');
    expect(list.json.results).toEqual([]);
  });

  it('sends a push to a where audience, confirmed with its size, and the status reaches succeeded', async () => {
    for (const [id, deviceType, token] of [
      ['e2e-ios-1', 'ios', 'tok-e2e-ios-1'],
      ['e2e-ios-2', 'ios', 'tok-e2e-ios-2'],
      ['e2e-and-1', 'android', 'tok-e2e-and-1'],
    ]) {
      expect(
        (
          await product.rest('POST', '/installations', {
            installationId: id,
            deviceType,
            deviceToken: token,
            channels: ['news'],
          })
        ).status,
      ).toBe(201);
    }
    const { page, screenshot } = await session();
    await login(page);
    await page.goto(`/apps/${product.appId}/push`);
    await waitText(page, 'audience-count', '3 devices: android 1, ios 2');
    await page.getByLabel('Where (JSON)').fill('{"deviceType": "ios"}');
    await waitText(page, 'audience-count', '2 devices: ios 2');
    await page.getByLabel('Title').fill('Hello');
    await page.getByLabel('Message').fill('From the console');
    await page.getByLabel('Badge').selectOption('Increment');
    expect(await page.getByTestId('push-preview').textContent()).toContain('From the console');
    expect(await page.getByTestId('preview-badge').textContent()).toBe('+1');
    await page.getByRole('button', { name: 'Send…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Send this push?' });
    expect(await dialog.getByTestId('confirm-audience').textContent()).toBe(
      'This push goes to 2 devices now.',
    );
    await screenshot('push-confirm');
    await dialog.getByRole('button', { name: 'Send to 2 devices' }).click();
    const row = page.getByTestId('push-status-row').first();
    await row.waitFor();
    await waitText(page, 'push-status', 'succeeded', 30_000);
    expect(await row.getByTestId('push-sent').textContent()).toBe('2ios 2');
    expect(fake.sends.map((s) => s.token).sort()).toEqual(['tok-e2e-ios-1', 'tok-e2e-ios-2']);
    await screenshot('push-succeeded');

    await page.getByLabel('Device type').selectOption('android');
    await waitText(page, 'installations-count', '1 installation');
    expect(await page.getByTestId('installation-row').textContent()).toContain('e2e-and-1');
    await page.getByLabel('Device type').selectOption('');
    await page.getByRole('textbox', { name: 'Channel' }).fill('sport');
    await waitText(page, 'installations-count', '0 installations');
  });

  it('schedules a push to channels with custom data, sound and expiry', async () => {
    const { page } = await session();
    await login(page);
    await page.goto(`/apps/${product.appId}/push`);
    await page.getByLabel('Channels', { exact: true }).check();
    await page.getByRole('textbox', { name: 'Channels' }).fill('news');
    await waitText(page, 'audience-count', '3 devices: android 1, ios 2');
    await page.getByLabel('Message').fill('Later');
    await page.getByLabel('Sound').fill('chime.caf');
    await page.getByLabel('Custom data (JSON)').fill('{"story": 7}');
    await page.getByLabel('Badge').selectOption('number');
    await page.getByLabel('Badge number').fill('5');
    expect(await page.getByTestId('preview-badge').textContent()).toBe('5');
    const later = new Date(Date.now() + 3_600_000);
    const local = new Date(later.getTime() - later.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
    await page.getByLabel('Send at').fill(local);
    await page.getByLabel('Expires after seconds').fill('600');
    await page.getByRole('button', { name: 'Send…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Send this push?' });
    expect(await dialog.getByTestId('confirm-audience').textContent()).toMatch(
      /^This push goes to 3 devices at /,
    );
    await dialog.getByRole('button', { name: 'Send to 3 devices' }).click();
    await waitText(page, 'push-status', 'scheduled');
    const statuses = await product.rest('GET', '/classes/_PushStatus', undefined);
    const scheduled = statuses.json.results.find((r: { status: string }) => r.status === 'scheduled');
    expect(JSON.parse(scheduled.payload)).toEqual({ story: 7, alert: 'Later', badge: 5, sound: 'chime.caf' });
    expect(JSON.parse(scheduled.query)).toEqual({});
    expect(scheduled.channels).toEqual(['news']);
    expect(Date.parse(scheduled.expiry.iso) - Date.parse(scheduled.pushTime.iso)).toBe(600_000);
  });

  it('charts events sent through the REST API', async () => {
    for (const at of ['2026-06-01T10:00:00Z', '2026-06-01T11:00:00Z', '2026-06-02T09:00:00Z']) {
      expect(
        (await product.rest('POST', '/events/Signup', { dimensions: { plan: 'free' }, at }, 'rest')).status,
      ).toBe(200);
    }
    expect(
      (
        await product.rest(
          'POST',
          '/events/Purchase',
          { dimensions: { plan: 'pro' }, at: '2026-06-02T12:00:00Z' },
          'rest',
        )
      ).status,
    ).toBe(200);
    const { page, screenshot } = await session();
    await login(page);
    await page
      .getByRole('navigation', { name: 'Sections' })
      .getByRole('link', { name: 'Analytics', exact: true })
      .click();
    const chart = page.getByTestId('events-chart');
    await chart.locator('canvas').waitFor();
    const legend = await chart.locator('.u-legend').textContent();
    expect(legend).toContain('Signup');
    expect(legend).toContain('Purchase');
    const totals = await page.getByTestId('event-total').allTextContents();
    expect(totals).toEqual(['Purchase1', 'Signup3']);
    await screenshot('analytics-chart');
    await page.getByLabel('Interval').selectOption('hour');
    await chart.locator('canvas').waitFor();
    await page.getByLabel('From').fill('2026-06-02T00:00');
    await expect
      .poll(() => page.getByTestId('event-total').allTextContents())
      .toEqual(['Purchase1', 'Signup1']);
    await page.getByLabel('To').fill('2026-06-02T10:00');
    await expect.poll(() => page.getByTestId('event-total').allTextContents()).toEqual(['Signup1']);
    await page.getByLabel('From').fill('');
    await page.getByLabel('To').fill('');
    await page.getByLabel('Dimension', { exact: true }).fill('plan');
    await page.getByLabel('Dimension value').fill('pro');
    await expect.poll(() => page.getByTestId('event-total').count()).toBe(1);
    expect(await page.getByTestId('event-total').textContent()).toBe('Purchase1');
  });
});
