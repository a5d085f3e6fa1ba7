/** Push sends (POST /push), master only: refused locally without a usable master key. */
import { type AuthOptions, checkAuthOptions } from '../options.ts';
import { RESPONSE_HEADERS } from '../protocol/headers.ts';
import type { RequestCore } from '../request-core.ts';

/** The answer carries the `_PushStatus` id of the send (from the answer's header). */
export async function sendPush(
  core: RequestCore,
  payload: { where?: Record<string, unknown>; channels?: string[]; data: Record<string, unknown> } & Record<
    string,
    unknown
  >,
  options: AuthOptions,
) {
  checkAuthOptions(options);
  core.requireMaster('sendPush');
  let pushStatusId: string | undefined;
  const res = await core.request<{ result: boolean; pushStatusId?: string }>('POST', '/push', {
    useMasterKey: true,
    body: payload,
    onHeaders: (h) => {
      pushStatusId = h.get(RESPONSE_HEADERS.pushStatusId) ?? undefined;
    },
  });
  if (res.success && pushStatusId) res.data = { ...res.data, pushStatusId };
  return res;
}
