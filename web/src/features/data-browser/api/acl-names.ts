/**
 * What the ACL editor needs to put an ACL in words: the usernames of its user entries and, for
 * its role entries, the roles their capabilities flow to (each role's `roles` relation, followed
 * to the end).
 */
import { useQuery } from '@tanstack/react-query';
import { api, seg } from '../../../lib/api.ts';
import type { AclNames } from '../lib/acl.ts';

const pointer = (objectId: string) => ({ __type: 'Pointer', className: '_Role', objectId });

interface Named {
  objectId: string;
  name?: string;
  username?: string;
}

async function loadNames(appId: string, userIds: string[], roles: string[], signal: AbortSignal) {
  const base = `/apps/${seg(appId)}`;
  const names: AclNames = { users: {}, inheritors: {} };
  if (userIds.length) {
    const found = await api.get<{ results: Named[] }>(
      `${base}/users`,
      { where: JSON.stringify({ objectId: { $in: userIds } }), keys: 'username', limit: 1000 },
      signal,
    );
    for (const u of found.results) if (u.username) names.users[u.objectId] = u.username;
  }
  if (roles.length) {
    const all = await api.get<{ results: Named[] }>(`${base}/roles`, { keys: 'name', limit: 1000 }, signal);
    const idOf = new Map(all.results.map((r) => [r.name ?? '', r.objectId]));
    const queue = [...roles];
    while (queue.length) {
      const role = queue.shift()!;
      const id = idOf.get(role);
      if (role in names.inheritors || !id) continue;
      const children = await api.get<{ results: Named[] }>(
        `${base}/roles`,
        {
          where: JSON.stringify({ $relatedTo: { object: pointer(id), key: 'roles' } }),
          keys: 'name',
          limit: 1000,
        },
        signal,
      );
      names.inheritors[role] = children.results.map((r) => r.name ?? r.objectId);
      queue.push(...names.inheritors[role]);
    }
  }
  return names;
}

export function useAclNames(appId: string, userIds: string[], roles: string[]) {
  const users = [...userIds].sort();
  const roleList = [...roles].sort();
  return useQuery({
    queryKey: ['data-browser', appId, 'acl-names', users, roleList],
    queryFn: ({ signal }) => loadNames(appId, users, roleList, signal),
    staleTime: 10_000,
    placeholderData: (prev) => prev,
  });
}
