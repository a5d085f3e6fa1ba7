/**
 * Code run as a user, or in a scope of its own: the ambient session token and the response-cache
 * tenant of the current async scope (the scope runner is ambient.ts).
 */
import { currentSlot, runScoped } from './ambient.ts';
import { ArgumentError } from './errors.ts';
import { CACHE_TENANT_PATTERN } from './protocol/names.ts';

/** Runs `fn` with `token` as the ambient session token of the current async scope. */
export function withSession<R>(token: string, fn: () => R): R {
  return runScoped({ sessionToken: token, user: undefined }, fn);
}

/** Runs `fn` in a fresh ambient scope (imperative login inside it does not leak out). */
export function withScope<R>(fn: () => R): R {
  return runScoped({}, fn);
}

export function currentSessionToken(): string | undefined {
  return currentSlot().sessionToken;
}

/** Runs `fn` with `label` as the response-cache tenant scope. */
export function withCacheTenant<R>(label: string, fn: () => R): R {
  if (typeof label !== 'string' || label.includes(':')) {
    throw new ArgumentError('A cache tenant label may not contain a colon.');
  }
  if (!CACHE_TENANT_PATTERN.test(label)) {
    throw new ArgumentError('A cache tenant label must match [A-Za-z0-9_-]{1,256}.');
  }
  return runScoped({ cacheTenant: label }, fn);
}
