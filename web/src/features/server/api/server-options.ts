import { useQuery } from '@tanstack/react-query';
import { api, seg } from '../../../lib/api.ts';

/** One option (or a field of an object option) as the service answers it (GET /serverInfo/options). */
export interface OptionRow {
  /** Dotted below an object option: `liveQuery.path`. */
  name: string;
  description: string;
  /** False for an optional option left out. */
  set: boolean;
  value?: unknown;
  /** A secret: set, its value never answered. */
  hidden?: true;
  /** An object option: its fields follow as rows of their own. */
  object?: true;
}

export interface OptionGroup {
  name: string;
  title: string;
  options: OptionRow[];
}

export interface AuthProvider {
  name: string;
  kind: 'anonymous' | 'idToken' | 'cloud';
  description: string;
}

export interface ServerOptions {
  groups: OptionGroup[];
  authProviders: AuthProvider[];
}

export const serverOptionsKey = (appId: string) => ['apps', appId, 'server', 'options'] as const;

/** The service's effective options, without its secrets (the bff proxies the master-only route). */
export function useServerOptions(appId: string) {
  return useQuery({
    queryKey: serverOptionsKey(appId),
    queryFn: ({ signal }) => api.get<ServerOptions>(`/apps/${seg(appId)}/server/options`, undefined, signal),
  });
}
