import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, login, openSession, type Session } from './helpers/browser.ts';
import { type Product, startProduct } from './helpers/product.ts';

let product: Product;
let browser: Browser;
const sessions: Session[] = [];
let ann: { id: string };
let ben: { id: string };

async function realtimePage(username = 'admin'): Promise<{ page: Page; session: Session }> {
  const s = await openSession(browser, product);
  sessions.push(s);
  await login(s.page, username);
  await s.page
    .getByRole('navigation', { name: 'Sections' })
    .getByRole('link', { name: /Realtime/ })
    .click();
  await s.page.getByRole('heading', { name: 'Realtime' }).waitFor();
  return { page: s.page, session: s };
}

const inspector = (page: Page, n: number) => page.getByRole('region', { name: `Inspector ${n}` });
const events = (box: Locator) => box.getByRole('list', { name: 'Events' }).locator('li');

async function startAs(box: Locator, viewpoint: 'master' | 'user' | 'anonymous', username?: string) {
  await box.getByLabel('Viewpoint').selectOption(viewpoint);
  if (username) {
    // The console's one user picker: type, then pick the match.
    await box.getByLabel('Username').fill(username);
    await box.getByRole('button', { name: username, exact: true }).click();
  }
  await box.getByRole('button', { name: 'Start' }).click();
  await expect
    .poll(() => box.getByTestId('inspector-status').textContent())
    .toContain(`Listening as ${username ? `user ${username}` : viewpoint}`);
}

beforeAll(async () => {
  product = await startProduct();
  browser = await launchBrowser();
  const signUp = async (username: string) => {
    const res = await product.rest('POST', '/users', { username, password: `${username} password` }, 'rest');
    expect(res.status).toBe(201);
    return { id: res.json.objectId as string };
  };
  ann = await signUp('ann');
  ben = await signUp('ben');
  const made = await product.rest('POST', '/schemas/Memo', {
    className: 'Memo',
    fields: { text: { type: 'String' }, room: { type: 'String' } },
  });
  expect(made.status).toBe(200);
  expect((await product.rest('POST', '/classes/Memo', { text: 'seed', room: 'a' })).status).toBe(201);
}, 120_000);

afterAll(async () => {
  for (const s of sessions) await s.close();
  await browser?.close();
  await product?.close();
});

describe('console: Realtime inspector', () => {
  it('shows the resume window: its span (oldest to newest event, and the count) and its bounds, refreshed on demand', async () => {
    const { page, session } = await realtimePage('viewer');
    const panel = page.getByRole('region', { name: 'Resume window' });
    const span = panel.getByTestId('resume-window-span');
    /** The span as the service's master-only GET /live/retention answers it now. */
    const expected = async () => {
      const res = await product.rest('GET', '/live/retention');
      expect(res.status).toBe(200);
      const w = res.json as {
        count: number;
        oldest: { eventId: string; at: string };
        newest: { eventId: string; at: string };
      };
      return `${w.count} events kept, from ${w.oldest.eventId} (${w.oldest.at}) to ${w.newest.eventId} (${w.newest.at}).`;
    };
    const before = await expected();
    await expect.poll(() => span.textContent()).toBe(before);
    expect(await panel.getByTestId('resume-window-bounds').textContent()).toBe(
      'Events are kept for 5 minutes (liveQuery.retentionMs), at most 10,000 events (liveQuery.retentionMaxEvents). A client that resumes from an older event gets error 5 and subscribes again with a snapshot.',
    );
    // A write adds an event: Refresh window shows the new newest one and the count.
    expect((await product.rest('POST', '/classes/Memo', { text: 'window', room: 'w' })).status).toBe(201);
    const after = await expected();
    expect(after).not.toBe(before);
    await panel.getByRole('button', { name: 'Refresh window' }).click();
    await expect.poll(() => span.textContent()).toBe(after);
    expect(session.problems).toEqual([]);
  });

  it('shows a REST write in the master inspector and the reader’s, filtered out (with the reason) for a non-reader', async () => {
    const { page, session } = await realtimePage();
    await page.getByLabel('Class', { exact: true }).selectOption('Memo');
    const one = inspector(page, 1);
    await startAs(one, 'master');

    // Split view: a second inspector as ann, who may read the row.
    await page.getByLabel('Split view').check();
    const two = inspector(page, 2);
    await startAs(two, 'user', 'ann');

    // The inspection session exists while the inspector is open, marked as such.
    const inspecting = async (userId: string) =>
      (
        await product.rest(
          'GET',
          `/classes/_Session?where=${encodeURIComponent(
            JSON.stringify({ user: { __type: 'Pointer', className: '_User', objectId: userId } }),
          )}`,
        )
      ).json.results.filter((r: { createdWith?: { action?: string } }) => r.createdWith?.action === 'inspect')
        .length;
    expect(await inspecting(ann.id)).toBe(1);

    const created = await product.rest(
      'POST',
      '/classes/Memo',
      { text: 'for ann', room: 'b', ACL: { [ann.id]: { read: true } } },
      'master',
    );
    expect(created.status).toBe(201);
    const id = created.json.objectId as string;
    await expect.poll(() => events(one).first().textContent()).toContain(id);
    expect(await events(one).first().getAttribute('data-kind')).toBe('create');
    await expect.poll(() => events(two).first().textContent()).toContain('for ann');
    expect(await events(two).first().getAttribute('data-kind')).toBe('create');

    // An update shows a field-level diff.
    await product.rest('PUT', `/classes/Memo/${id}`, { text: 'for ann, edited' });
    await expect.poll(() => events(one).count()).toBe(2);
    const diff = events(one).first().getByRole('table', { name: 'changes' });
    await expect.poll(() => diff.textContent()).toContain('"for ann"');
    expect(await diff.textContent()).toContain('"for ann, edited"');

    // Ben may not read it: his inspector gets it filtered, with the trace's reason.
    await two.getByRole('button', { name: 'Stop' }).click();
    await expect.poll(() => inspecting(ann.id)).toBe(0);
    await two.getByRole('button', { name: 'Clear events' }).click();
    await expect.poll(() => events(two).count()).toBe(0);
    await startAs(two, 'user', 'ben');
    await product.rest('PUT', `/classes/Memo/${id}`, { room: 'c' });
    await expect.poll(() => events(one).count()).toBe(3);
    await expect.poll(() => events(two).count(), { timeout: 10_000 }).toBe(1);
    expect(await events(two).first().getAttribute('data-kind')).toBe('filtered');
    expect(await two.getByTestId('filter-reason').textContent()).toContain('Filtered by acl');
    await session.screenshot('realtime-split');
    await two.getByRole('button', { name: 'Stop' }).click();
    await expect.poll(() => inspecting(ben.id)).toBe(0);
    expect(session.problems).toEqual([]);
  });

  it('applies a where, pauses and resumes, filters by kind, caps kept events, clears and exports', async () => {
    const { page, session } = await realtimePage('viewer');
    await page.getByLabel('Class', { exact: true }).selectOption('Memo');
    const box = inspector(page, 1);
    // The data browser's filter builder, embedded: room = "x".
    await box.getByText('Where').click();
    await box.getByRole('button', { name: 'JSON', exact: true }).click();
    await box.getByLabel('where JSON').fill('{"room":"x"}');
    await box.getByRole('button', { name: 'Apply filter' }).click();
    await startAs(box, 'anonymous');

    const a = await product.rest('POST', '/classes/Memo', { text: 'x1', room: 'x' });
    await expect.poll(() => events(box).count()).toBe(1);
    await box.getByRole('button', { name: 'Pause' }).click();
    await product.rest('PUT', `/classes/Memo/${a.json.objectId}`, { text: 'x2' });
    await expect.poll(() => box.getByTestId('event-counts').textContent()).toContain('1 held while paused');
    expect(await events(box).count()).toBe(1);
    await box.getByRole('button', { name: 'Resume' }).click();
    await expect.poll(() => events(box).count()).toBe(2);
    // Not in room x: filtered by the where.
    await product.rest('POST', '/classes/Memo', { text: 'y', room: 'y' });
    await expect.poll(() => events(box).count(), { timeout: 10_000 }).toBe(3);
    expect(await box.getByTestId('filter-reason').textContent()).toContain('Filtered by where');

    await box.getByLabel('Show kind').selectOption('update');
    await expect.poll(() => events(box).count()).toBe(1);
    expect(await events(box).first().getAttribute('data-kind')).toBe('update');
    await box.getByLabel('Show kind').selectOption('all');

    const download = page.waitForEvent('download');
    await box.getByRole('button', { name: 'Export JSON' }).click();
    const file = await download;
    const stream = await file.createReadStream();
    let text = '';
    for await (const chunk of stream) text += String(chunk);
    const exported = JSON.parse(text);
    expect(exported.className).toBe('Memo');
    expect(exported.events).toHaveLength(3);

    await box.getByLabel('Keep at most').fill('2');
    await expect.poll(() => events(box).count()).toBe(2);
    expect(await box.getByTestId('event-counts').textContent()).toContain('1 dropped');
    await box.getByRole('button', { name: 'Clear events' }).click();
    await expect.poll(() => events(box).count()).toBe(0);
    await box.getByRole('button', { name: 'Stop' }).click();
    expect(await box.getByTestId('inspector-status').textContent()).toBe('Stopped');

    expect(session.problems).toEqual([]);
    const seen = await session.responses();
    for (const r of seen) {
      for (const secret of Object.values(product.secrets)) expect(r.body.toString()).not.toContain(secret);
    }
  });

  it('live mode of the data grid: changed rows update in place, new rows are highlighted, deleted rows leave', async () => {
    const s = await openSession(browser, product);
    sessions.push(s);
    await login(s.page, 'viewer');
    const page = s.page;
    const row = await product.rest('POST', '/classes/Memo', { text: 'grid row', room: 'g' });
    await page.goto(`/apps/${product.appId}/data/Memo`);
    const cell = page.locator(`[data-row-id="${row.json.objectId}"]`);
    await cell.waitFor();
    await page.getByLabel('Live', { exact: true }).check();
    await expect.poll(() => page.getByTestId('live-status').textContent()).toBe('live');
    await product.rest('PUT', `/classes/Memo/${row.json.objectId}`, { text: 'changed elsewhere' });
    await expect.poll(() => cell.textContent()).toContain('changed elsewhere');
    expect(await cell.getAttribute('data-live')).toBe('changed');
    const added = await product.rest('POST', '/classes/Memo', { text: 'brand new', room: 'g' });
    const fresh = page.locator(`[data-row-id="${added.json.objectId}"]`);
    await expect.poll(() => fresh.getAttribute('data-live')).toBe('new');
    await product.rest('DELETE', `/classes/Memo/${row.json.objectId}`);
    await expect.poll(() => cell.count()).toBe(0);

    // Scrolled down, a row created elsewhere is added above without moving the rows on screen.
    await product.rest('POST', '/batch', {
      requests: Array.from({ length: 60 }, (_, i) => ({
        method: 'POST',
        path: '/classes/Memo',
        body: { text: `filler ${i}`, room: 'g' },
      })),
    });
    await page.getByRole('button', { name: 'Refresh', exact: true }).click();
    await page.getByLabel('Live', { exact: true }).uncheck();
    await page.getByLabel('Live', { exact: true }).check();
    await expect.poll(() => page.getByTestId('live-status').textContent()).toBe('live');
    const grid = page.getByTestId('grid');
    await grid.evaluate((el) => {
      el.scrollTop = 600;
    });
    // The row under a point just below the sticky header (strings: no DOM types in this file).
    const topRow = () =>
      page.evaluate<string | undefined>(
        `(() => { const g = document.querySelector('[data-testid="grid"]').getBoundingClientRect();
          return document.elementFromPoint(g.left + 60, g.top + 45)?.closest('[data-row-id]')?.dataset.rowId; })()`,
      );
    await expect.poll(topRow).toMatch(/^\w{10}$/);
    const before = await topRow();
    const scrolled = await grid.evaluate((el) => el.scrollTop);
    await product.rest('POST', '/classes/Memo', { text: 'above the fold', room: 'g' });
    await expect.poll(() => grid.evaluate((el) => el.scrollTop)).toBe(scrolled + 30);
    expect(await topRow()).toBe(before);
    await page.getByLabel('Live', { exact: true }).uncheck();
    expect(s.problems).toEqual([]);
  });
});
