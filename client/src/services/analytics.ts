/** Analytics events (POST /events/<name>). */
import { ArgumentError } from '../errors.ts';
import { type AuthOptions, checkAuthOptions } from '../options.ts';
import { EVENT_NAME_PATTERN } from '../protocol/names.ts';
import type { RequestCore } from '../request-core.ts';

/** Refuses a name outside the protocol's EVENT_NAME_PATTERN before any request. */
export async function trackEvent(
  core: RequestCore,
  name: string,
  dimensions: Record<string, string>,
  at: Date | string | undefined,
  options: AuthOptions,
) {
  if (typeof name !== 'string' || !EVENT_NAME_PATTERN.test(name)) {
    throw new ArgumentError(
      `Invalid event name ${JSON.stringify(name)}: use word characters, hyphens and dots.`,
    );
  }
  const body: Record<string, unknown> = { dimensions };
  if (at !== undefined) body.at = at instanceof Date ? at.toISOString() : at;
  return core.request<Record<string, never>>('POST', `/events/${encodeURIComponent(name)}`, {
    ...checkAuthOptions(options),
    body,
  });
}
