/** The application's config (GET /config). */
import { type AuthOptions, checkAuthOptions } from '../options.ts';
import type { RequestCore } from '../request-core.ts';

export async function getConfig(core: RequestCore, options: AuthOptions) {
  return core.request<{ params: Record<string, unknown> }>('GET', '/config', checkAuthOptions(options));
}
