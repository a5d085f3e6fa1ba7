/**
 * Users and sessions over HTTP: login, sign-up, the current user, logout. Login and sign-up never
 * default to the master key, so that they act as the caller.
 */
import { type AuthOptions, checkAuthOptions } from '../options.ts';
import type { RequestCore } from '../request-core.ts';

export async function login(core: RequestCore, username: string, password: string, options: AuthOptions) {
  checkAuthOptions(options);
  return core.request<Record<string, any>>(
    'POST',
    '/login',
    { installationId: options.installationId, body: { username, password } },
    false,
  );
}

export async function signUp(core: RequestCore, fields: Record<string, unknown>, options: AuthOptions) {
  checkAuthOptions(options);
  return core.request<Record<string, any>>(
    'POST',
    '/users',
    { installationId: options.installationId, body: fields },
    false,
  );
}

export async function me(core: RequestCore, options: AuthOptions) {
  return core.request<Record<string, any>>('GET', '/users/me', checkAuthOptions(options), false);
}

export async function logout(core: RequestCore, options: AuthOptions) {
  return core.request<Record<string, never>>('POST', '/logout', checkAuthOptions(options), false);
}
