import { AsyncLocalStorage } from 'node:async_hooks';
import { CONSOLE_USER_HEADER, HEADERS } from '@bds/client/protocol';

/**
 * The console user on whose behalf the bff calls the service. The session check runs the rest of
 * each request inside `asConsoleUser` (session.ts), and every app's client sends its requests
 * through `consoleCallerFetch` (apps.ts): a call carrying the master key also carries
 * `X-BDS-Console-User: <console user name>`, so the service records the console's writes (row
 * history: caller `{kind: 'console', name}`, source `console`) under the name of who made them.
 * One place for every route, the ones written later included.
 */

const current = new AsyncLocalStorage<string>();

/** Runs `fn` (and all it starts) as the console user `username`. */
export function asConsoleUser<T>(username: string, fn: () => T): T {
  return current.run(username, fn);
}

/** The console user of the work under way, if any. */
export const currentConsoleUser = (): string | undefined => current.getStore();

/** `fetch` with the console user's name on every master-key call made inside `asConsoleUser`. */
export const consoleCallerFetch: typeof fetch = (input, init) => {
  const username = current.getStore();
  if (username === undefined) return fetch(input, init);
  const headers = new Headers(init?.headers);
  if (!headers.has(HEADERS.masterKey)) return fetch(input, init);
  headers.set(CONSOLE_USER_HEADER, username);
  return fetch(input, { ...init, headers });
};
