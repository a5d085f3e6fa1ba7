import { useMutation } from '@tanstack/react-query';
import { api, seg } from '../../../lib/api.ts';
import { type ApiCall, type ApiCallAnswer, wireAs } from '../lib/call.ts';

/** Sends one composed call through the bff (POST /bff/apps/:appId/api-console). */
export function useSendCall(appId: string) {
  return useMutation({
    mutationFn: (call: ApiCall) =>
      api.post<ApiCallAnswer>(`/apps/${seg(appId)}/api-console`, {
        method: call.method,
        path: call.path,
        query: call.query,
        ...(call.body !== undefined ? { body: call.body } : {}),
        as: wireAs(call.as),
      }),
  });
}

/** The call as a curl command with placeholder credentials, built by the bff (nothing is sent). */
export function fetchCurl(appId: string, call: ApiCall): Promise<{ curl: string }> {
  return api.post<{ curl: string }>(`/apps/${seg(appId)}/api-console/curl`, {
    method: call.method,
    path: call.path,
    query: call.query,
    ...(call.body !== undefined ? { body: call.body } : {}),
    as: wireAs(call.as),
  });
}
