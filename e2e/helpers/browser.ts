import { mkdirSync } from 'node:fs';
import path from 'node:path';
import {
  type Browser,
  type BrowserContext,
  type BrowserContextOptions,
  chromium,
  type Page,
} from 'playwright-core';
import { launchOptions } from '../../playwright.config.ts';
import { PASSWORD, type Product, ROOT } from './product.ts';

export const OUTPUT_DIR = path.join(ROOT, 'e2e', 'output');

export interface SeenResponse {
  url: string;
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

export interface Session {
  context: BrowserContext;
  page: Page;
  /** Every response the browser received (bodies included), for the key-leak scan. */
  responses(): Promise<SeenResponse[]>;
  /** CSP violations and page errors reported in the console. */
  problems: string[];
  screenshot(name: string): Promise<string>;
  close(): Promise<void>;
}

export function launchBrowser(): Promise<Browser> {
  return chromium.launch(launchOptions);
}

export async function openSession(
  browser: Browser,
  product: Product,
  options: BrowserContextOptions = {},
): Promise<Session> {
  const context = await browser.newContext({
    baseURL: product.url,
    viewport: { width: 1280, height: 800 },
    colorScheme: 'light',
    ...options,
  });
  const pending: Promise<SeenResponse | null>[] = [];
  context.on('response', (res) => {
    pending.push(
      (async () => {
        let body: Buffer;
        try {
          // Redirects and aborted requests have no body; a body that never comes must not hang the scan.
          body = await Promise.race([
            res.body(),
            new Promise<Buffer>((_, reject) => setTimeout(() => reject(new Error('no body')), 5000)),
          ]);
        } catch {
          body = Buffer.alloc(0);
        }
        return { url: res.url(), status: res.status(), headers: await res.allHeaders(), body };
      })().catch(() => null),
    );
  });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error' && /Content Security Policy|Refused to/i.test(msg.text()))
      problems.push(msg.text());
  });
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  return {
    context,
    page,
    problems,
    async responses() {
      const all = await Promise.all(pending);
      return all.filter((r): r is SeenResponse => r !== null);
    },
    async screenshot(name) {
      mkdirSync(OUTPUT_DIR, { recursive: true });
      const file = path.join(OUTPUT_DIR, `${name}.png`);
      await page.screenshot({ path: file });
      return file;
    },
    close: () => context.close(),
  };
}

/** Logs in through the login page and waits for the app shell. */
export async function login(page: Page, username = 'admin', password = PASSWORD): Promise<void> {
  await page.goto('/login');
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('navigation', { name: 'Sections' }).waitFor();
}
