import { safeEqual } from './ids.ts';

/** The keys a caller presents: REST headers or body fields, or a realtime connect frame. */
export interface PresentedKeys {
  applicationId?: string;
  masterKey?: string;
  restAPIKey?: string;
  javascriptKey?: string;
  clientKey?: string;
}

/** The keys the service is configured with (the service's options carry them under these names). */
export interface ConfiguredKeys {
  appId: string;
  masterKey: string;
  restAPIKey?: string;
  javascriptKey?: string;
  clientKey?: string;
}

/**
 * The one check of a caller's keys, for REST and realtime alike (docs/protocol.md#credentials):
 * the application id must match; a master key, when given, must be the service's (master
 * authority); otherwise one of the client keys given must match when the service configures any.
 * Answers the authority the keys grant, or `undefined` when they are refused. Keys are compared in
 * constant time, and every pair is compared, so timing does not tell which key was tried.
 */
export function keyAuthority(
  given: PresentedKeys,
  configured: ConfiguredKeys,
): 'master' | 'client' | undefined {
  // The application id is not a secret (every client build holds it): a plain comparison will do.
  if (given.applicationId !== configured.appId) return undefined;
  if (given.masterKey !== undefined)
    return safeEqual(given.masterKey, configured.masterKey) ? 'master' : undefined;
  const pairs: Array<[string | undefined, string | undefined]> = [
    [given.restAPIKey, configured.restAPIKey],
    [given.javascriptKey, configured.javascriptKey],
    [given.clientKey, configured.clientKey],
  ];
  const anyConfigured = pairs.some(([, key]) => key !== undefined);
  let matched = false;
  let mismatched = false;
  for (const [presented, key] of pairs) {
    if (presented === undefined || key === undefined) continue;
    if (safeEqual(presented, key)) matched = true;
    else mismatched = true;
  }
  if (mismatched && !matched) return undefined;
  if (anyConfigured && !matched) return undefined;
  return 'client';
}
