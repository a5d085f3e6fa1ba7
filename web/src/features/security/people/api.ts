import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { installationsKey } from '../../../hooks/use-installations.ts';
import { api, seg } from '../../../lib/api.ts';

/** The bff routes behind the Roles, Users and Sessions tabs (Installations: hooks/use-installations.ts). */

export interface RoleNode {
  objectId: string;
  name: string;
  /** Direct members. */
  users: number;
}
/** Capabilities flow from `from` to `to`: `to` inherits capabilities from `from`. */
export interface RoleEdge {
  from: string;
  to: string;
}
export interface RoleHierarchy {
  roles: RoleNode[];
  edges: RoleEdge[];
  truncated: boolean;
}
export interface UserRef {
  objectId: string;
  username?: string;
  email?: string;
}
export interface RoleDetail {
  role: { objectId: string; name: string };
  users: UserRef[];
  /** Roles that inherit this role's capabilities. */
  roles: Array<{ objectId: string; name: string }>;
  /** Roles whose capabilities this role inherits. */
  parents: Array<{ objectId: string; name: string }>;
}
export interface EffectiveMembers {
  results: Array<{ user: UserRef; via: string[] }>;
  truncated: boolean;
}
export interface ConsoleAppUser extends UserRef {
  createdAt: string;
  updatedAt?: string;
  anonymous: boolean;
  mfa: boolean;
  emailVerified?: boolean;
  [field: string]: unknown;
}
export interface SessionRow {
  objectId: string;
  createdAt: string;
  expiresAt?: { iso: string };
  installationId?: string;
  restricted?: boolean;
  createdWith?: { action?: string; authProvider?: string };
  user?: UserRef;
}

const app = (appId: string) => `/apps/${seg(appId)}`;
const key = (appId: string, ...rest: unknown[]) => ['apps', appId, 'security-people', ...rest];

export const useRoleHierarchy = (appId: string) =>
  useQuery({
    queryKey: key(appId, 'hierarchy'),
    queryFn: ({ signal }) => api.get<RoleHierarchy>(`${app(appId)}/role-hierarchy`, undefined, signal),
  });

export const useRoleDetail = (appId: string, roleId: string | null) =>
  useQuery({
    queryKey: key(appId, 'role', roleId),
    queryFn: ({ signal }) =>
      api.get<RoleDetail>(`${app(appId)}/roles/${seg(roleId ?? '')}`, undefined, signal),
    enabled: roleId !== null,
  });

export const useEffectiveMembers = (appId: string, roleId: string | null) =>
  useQuery({
    queryKey: key(appId, 'effective', roleId),
    queryFn: ({ signal }) =>
      api.get<EffectiveMembers>(
        `${app(appId)}/roles/${seg(roleId ?? '')}/effective-members`,
        undefined,
        signal,
      ),
    enabled: roleId !== null,
  });

export const useUsers = (appId: string, search: string, enabled = true) =>
  useQuery({
    queryKey: key(appId, 'users', search),
    queryFn: ({ signal }) =>
      api.get<{ results: ConsoleAppUser[]; count: number }>(
        `${app(appId)}/people/users`,
        { search: search || undefined, limit: 100 },
        signal,
      ),
    enabled,
  });

export const useSessions = (appId: string, userId?: string) =>
  useQuery({
    queryKey: key(appId, 'sessions', userId ?? null),
    queryFn: ({ signal }) =>
      api.get<{ results: SessionRow[]; count: number }>(
        `${app(appId)}/sessions`,
        { include: 'user', user: userId, limit: 200, count: true },
        signal,
      ),
  });

/** A write whose success refreshes everything these tabs show. */
export function usePeopleWrite<V, R = unknown>(appId: string, fn: (base: string, vars: V) => Promise<R>) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (vars: V) => fn(app(appId), vars),
    onSuccess: () =>
      Promise.all([
        queryClient.invalidateQueries({ queryKey: key(appId) }),
        // The Installations tab shows each installation's owner.
        queryClient.invalidateQueries({ queryKey: installationsKey(appId) }),
      ]),
  });
}
