import type { ServerOptionsView } from '@bds/client/protocol';
import { useQuery } from '@tanstack/react-query';
import { api, seg } from '../../../lib/api.ts';

export type { AuthProviderRow as AuthProvider, OptionRow } from '@bds/client/protocol';

export type ServerOptions = ServerOptionsView;
export type OptionGroup = ServerOptions['groups'][number];

export const serverOptionsKey = (appId: string) => ['apps', appId, 'server', 'options'] as const;

/** The service's effective options, without its secrets (the bff proxies the master-only route). */
export function useServerOptions(appId: string) {
  return useQuery({
    queryKey: serverOptionsKey(appId),
    queryFn: ({ signal }) => api.get<ServerOptions>(`/apps/${seg(appId)}/server/options`, undefined, signal),
  });
}
