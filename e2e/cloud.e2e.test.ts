import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLOUD_MODULE } from '../server/test/helpers/cloud.ts';
import { type Receiver, startReceiver } from '../server/test/helpers/receiver.ts';
import { launchBrowser, login, openSession, type Session } from './helpers/browser.ts';
import { type Product, startProduct } from './helpers/product.ts';

let product: Product;
let browser: Browser;
let receiver: Receiver;
const sessions: Session[] = [];
const ZONE = 'Asia/Tokyo';

async function cloudPage(tab?: string): Promise<Page> {
  // The console user's own zone and language: the schedule list shows the next run in it.
  const s = await openSession(browser, product, { timezoneId: ZONE, locale: 'en-US' });
  sessions.push(s);
  await login(s.page);
  await s.page.goto(`/apps/${product.appId}/cloud${tab ? `?tab=${tab}` : ''}`);
  await s.page.getByRole('heading', { name: 'Cloud' }).waitFor();
  return s.page;
}

beforeAll(async () => {
  receiver = await startReceiver();
  product = await startProduct({ service: { cloud: CLOUD_MODULE, hooks: { allowInsecureUrls: true } } });
  browser = await launchBrowser();
  expect(
    (await product.rest('POST', '/users', { username: 'lin', password: 'lin password' }, 'rest')).status,
  ).toBe(201);
  expect((await product.rest('POST', '/classes/Note', { title: 'first' })).status).toBe(201);
});

afterAll(async () => {
  for (const s of sessions) await s.close();
  await browser?.close();
  await product?.close();
  await receiver?.close();
});

describe('console: Cloud', () => {
  it('runs a function as a chosen user (the function saw that user), as master, and shows errors', async () => {
    const page = await cloudPage();
    const result = page.getByTestId('function-result');
    await page
      .getByRole('list', { name: 'Functions' })
      .getByRole('button', { name: /whoami/ })
      .click();
    await page.getByLabel('Run as', { exact: true }).selectOption('user');
    await page.getByLabel('Username', { exact: true }).fill('lin');
    // The console's one user picker: type, then pick the match.
    await page.getByRole('button', { name: 'lin', exact: true }).click();
    await page.getByRole('button', { name: 'Run function' }).click();
    await expect.poll(() => result.textContent()).toContain('"username": "lin"');
    expect(await result.textContent()).toContain('"master": false');
    expect(await result.textContent()).toMatch(/Result in [\d.]+ ms/);
    await sessions.at(-1)!.screenshot('cloud-function-as-user');

    await page.getByLabel('Run as', { exact: true }).selectOption('master');
    await page.getByRole('button', { name: 'Run function' }).click();
    await expect.poll(() => result.textContent()).toContain('"master": true');

    await page.getByLabel('Function', { exact: true }).selectOption('echo');
    await page.getByLabel('Params (JSON)', { exact: true }).fill('{"answer": 42}');
    await page.getByRole('button', { name: 'Run function' }).click();
    await expect.poll(() => result.textContent()).toContain('"answer": 42');

    await page.getByLabel('Function', { exact: true }).selectOption('fail');
    await page.getByRole('button', { name: 'Run function' }).click();
    await expect.poll(() => result.textContent()).toContain('Error 141');
    expect(await result.textContent()).toContain('it broke');

    await page.getByLabel('Params (JSON)', { exact: true }).fill('[1]');
    await page.getByRole('button', { name: 'Run function' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('Params must be a JSON object');
  });

  it("a job's status moves from running to succeeded live", async () => {
    const page = await cloudPage('jobs');
    await page.getByLabel('Job', { exact: true }).selectOption('waitABit');
    await page.getByLabel('Job params (JSON)', { exact: true }).fill('{"ms": 6000}');
    await page.getByRole('button', { name: 'Run job' }).click();
    const started = page.getByTestId('job-started');
    await expect.poll(() => started.textContent()).toMatch(/status [A-Za-z0-9]{10}$/);
    const id = (await started.textContent())!.slice(-10);
    const cell = page.getByTestId(`job-status-${id}`);
    // The job runs 6 s: a window the page's first look at the history lands in, even on a loaded
    // machine (the poll itself waits up to the suite's 15 s).
    await expect.poll(() => cell.textContent()).toBe('running');
    // No reload: the history polls while a run is under way.
    await expect.poll(() => cell.textContent(), { timeout: 30_000 }).toBe('succeeded');
    const row = page.getByTestId('job-history').getByRole('row').filter({ has: cell });
    expect(await row.textContent()).toContain('waited');
  });

  it('schedules: a plain-words preview, a start date and the next five runs in the schedule’s zone, the catch-up policy; edit, pause, delete', async () => {
    const page = await cloudPage('schedules');
    await page.getByRole('button', { name: 'New schedule' }).click();
    await page.getByRole('button', { name: 'Cancel' }).click();
    await page.getByRole('button', { name: 'New schedule' }).click();
    await page.getByLabel('Scheduled job', { exact: true }).selectOption('tick');
    await page.getByLabel('Time zone', { exact: true }).fill('UTC');
    await page.getByLabel('Cron', { exact: true }).fill('every day');
    const preview = page.getByTestId('cron-preview');
    await expect.poll(() => preview.textContent()).toContain('five, six, or seven space separated parts');
    await page.getByLabel('Cron', { exact: true }).fill('30 9 * * 1');
    await expect.poll(() => preview.textContent()).toContain('At 09:30, only on Monday (UTC)');
    // The schedule's zone, not the console user's (Tokyo), and a start date on its clock.
    await page.getByLabel('Time zone', { exact: true }).fill('Europe/Paris');
    await page.getByLabel('Start date', { exact: true }).fill('2031-03-01T09:00');
    await expect
      .poll(() => preview.textContent())
      .toContain('Next five runs from the start date in the schedule’s time zone (Europe/Paris)');
    // Mondays from Saturday 2031-03-01 09:00 in Paris; summer time from 2031-03-30.
    expect(
      await page.getByRole('list', { name: 'Next runs' }).getByRole('listitem').allTextContents(),
    ).toEqual([
      'Mar 3, 2031, 9:30 AM GMT+1',
      'Mar 10, 2031, 9:30 AM GMT+1',
      'Mar 17, 2031, 9:30 AM GMT+1',
      'Mar 24, 2031, 9:30 AM GMT+1',
      'Mar 31, 2031, 9:30 AM GMT+2',
    ]);
    await page.getByLabel('Catch-up', { exact: true }).selectOption('each');
    await sessions.at(-1)!.screenshot('cloud-schedule-preview');
    await page.getByLabel('Schedule params (JSON)', { exact: true }).fill('{"label": "weekly"}');
    await page.getByRole('button', { name: 'Save schedule' }).click();

    const table = page.getByTestId('schedules');
    await expect.poll(() => table.textContent()).toContain('30 9 * * 1');
    const [stored] = (await product.rest('GET', '/classes/_JobSchedule')).json.results;
    expect(stored).toMatchObject({
      jobName: 'tick',
      cron: '30 9 * * 1',
      timeZone: 'Europe/Paris',
      params: { label: 'weekly' },
      enabled: true,
      startAfter: { __type: 'Date', iso: '2031-03-01T08:00:00.000Z' },
      catchUp: 'each',
      nextRunAt: { __type: 'Date', iso: '2031-03-03T08:30:00.000Z' },
    });
    const row = page.getByTestId(`schedule-${stored.objectId}`);
    // The next run in the console user's zone: 08:30 UTC is 17:30 in Tokyo.
    expect(await row.textContent()).toContain('Mar 3, 2031, 5:30 PM');
    expect(await row.textContent()).toContain('from Mar 1, 2031, 9:00 AM GMT+1');
    expect(await row.getByTestId('schedule-catch-up').textContent()).toBe('each (at most 24)');

    // Back to the service's policy, and no start date.
    await row.getByRole('button', { name: 'Edit' }).click();
    expect(await page.getByLabel('Start date', { exact: true }).inputValue()).toBe('2031-03-01T09:00');
    await page.getByLabel('Catch-up', { exact: true }).selectOption('');
    await page.getByLabel('Start date', { exact: true }).fill('');
    await page.getByRole('button', { name: 'Save schedule' }).click();
    await expect
      .poll(() => row.getByTestId('schedule-catch-up').textContent())
      .toBe('once (service default)');
    const saved = (await product.rest('GET', `/classes/_JobSchedule/${stored.objectId}`)).json;
    expect(saved.catchUp).toBeUndefined();
    expect(saved.startAfter).toBeUndefined();

    await row.getByRole('button', { name: 'Edit' }).click();
    await page.getByLabel('Cron', { exact: true }).fill('0 12 * * *');
    await page.getByRole('button', { name: 'Save schedule' }).click();
    await expect.poll(() => row.textContent()).toContain('0 12 * * *');
    await row.getByRole('button', { name: 'Pause' }).click();
    await expect.poll(() => row.textContent()).toContain('paused');
    expect((await product.rest('GET', `/classes/_JobSchedule/${stored.objectId}`)).json.enabled).toBe(false);
    await row.getByRole('button', { name: 'Resume' }).click();
    await expect.poll(() => row.textContent()).toContain('active');
    await row.getByRole('button', { name: 'Delete' }).click();
    await expect.poll(() => page.getByText('No schedules yet.').count()).toBe(1);
    expect((await product.rest('GET', '/classes/_JobSchedule')).json.results).toEqual([]);
  });

  it('a webhook registered in the console receives a call; refusals, URL change, delivery log, delete', async () => {
    const page = await cloudPage('hooks');
    await page.getByLabel('Hook type', { exact: true }).selectOption('trigger');
    await page.getByLabel('Class', { exact: true }).fill('Note');
    await page.getByLabel('Trigger', { exact: true }).selectOption('afterSave');
    await page.getByLabel('Receiver URL', { exact: true }).fill(`${receiver.url}/note`);
    await page.getByRole('button', { name: 'Register hook' }).click();
    const hook = page.getByTestId('hook-Note.afterSave');
    await hook.waitFor();
    await page.getByRole('button', { name: 'Register hook' }).click();
    await expect
      .poll(() => page.getByTestId('hook-error').textContent())
      .toBe('Class Note already has a hook for afterSave. (code 143)');

    const created = await product.rest('POST', '/classes/Note', { title: 'hello hooks' });
    await expect.poll(() => receiver.calls.length).toBe(1);
    expect(receiver.calls[0]).toMatchObject({
      path: '/note',
      body: {
        triggerName: 'afterSave',
        object: { className: 'Note', objectId: created.json.objectId, title: 'hello hooks' },
        master: true,
      },
    });

    const log = page.getByTestId('delivery-log');
    await expect.poll(() => log.textContent()).toContain('Note.afterSave');
    await page.getByLabel('Status', { exact: true }).selectOption('failed');
    await page.getByTestId('deliveries-empty').waitFor();
    await page.getByLabel('Status', { exact: true }).selectOption('');
    await page.getByLabel('Kind', { exact: true }).selectOption('trigger');
    await page.getByLabel('Hook', { exact: true }).fill('Note.afterSave');
    await expect.poll(() => log.textContent()).toContain(created.json.objectId);
    await sessions.at(-1)!.screenshot('cloud-hooks');

    await hook.getByLabel('URL of Note.afterSave', { exact: true }).fill(`${receiver.url}/moved`);
    await hook.getByRole('button', { name: 'Save URL' }).click();
    await expect
      .poll(async () => (await product.rest('GET', '/hooks/triggers/Note/afterSave')).json.url)
      .toBe(`${receiver.url}/moved`);

    await page.getByLabel('Hook type', { exact: true }).selectOption('function');
    await page.getByLabel('Function name', { exact: true }).fill('remoteHello');
    await page.getByLabel('Receiver URL', { exact: true }).fill(`${receiver.url}/fn`);
    await page.getByRole('button', { name: 'Register hook' }).click();
    await page.getByTestId('hook-remoteHello').waitFor();
    await page.getByTestId('hook-remoteHello').getByRole('button', { name: 'Delete' }).click();
    await hook.getByRole('button', { name: 'Delete' }).click();
    await expect.poll(() => page.getByText('None.').count()).toBe(2);
    expect((await product.rest('GET', '/hooks/triggers')).json.results).toEqual([]);
  });
});
