/**
 * Picks whose permissions to look with: master, a user (searched by username or email), a set of
 * roles, or anonymous (application keys only).
 */
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { UserPicker } from '../../../components/user-picker.tsx';
import { api, seg } from '../../../lib/api.ts';
import { useRoleNames, type Viewpoint } from '../../../lib/security-api.ts';
import { viewpointLabel } from '../lib/viewpoint.ts';

/** The username of a user viewpoint (for banners and labels). */
export function useViewpointName(appId: string, vp: Viewpoint | null): string {
  const userId = vp?.kind === 'user' ? vp.userId : '';
  const q = useQuery({
    queryKey: ['data-browser', appId, 'viewpoint-user', userId],
    queryFn: ({ signal }) =>
      api.get<{ username?: string }>(`/apps/${seg(appId)}/users/${seg(userId)}`, undefined, signal),
    enabled: !!userId,
    staleTime: 60_000,
    retry: false,
  });
  return viewpointLabel(vp, q.data?.username);
}

export function ViewpointPicker({
  appId,
  value,
  onChange,
  label,
  allowMaster = true,
}: {
  appId: string;
  value: Viewpoint | null;
  onChange(vp: Viewpoint | null): void;
  /** Accessible name of the kind selector ("view as", "left viewpoint"…). */
  label: string;
  allowMaster?: boolean;
}) {
  const [kind, setKind] = useState<'master' | Viewpoint['kind']>(
    value?.kind ?? (allowMaster ? 'master' : 'user'),
  );
  const roleNames = useRoleNames(appId);
  const [roles, setRoles] = useState<string[]>(value?.kind === 'roles' ? value.roles : []);
  const name = useViewpointName(appId, value);
  const input = 'rounded border px-1 py-0.5 text-sm dark:bg-gray-800';
  return (
    <span className="inline-flex flex-wrap items-center gap-1" data-testid={`picker-${label}`}>
      <select
        aria-label={label}
        className={input}
        value={kind}
        onChange={(e) => {
          const k = e.target.value as typeof kind;
          setKind(k);
          if (k === 'master') onChange(null);
          else if (k === 'anonymous') onChange({ kind: 'anonymous' });
        }}
      >
        {allowMaster && <option value="master">master (normal)</option>}
        <option value="user">a user…</option>
        <option value="roles">a set of roles…</option>
        <option value="anonymous">anonymous</option>
      </select>
      {kind === 'user' && (
        <span className="relative inline-flex items-center gap-1">
          {value?.kind === 'user' && (
            <span className="font-medium" data-testid="picked-user">
              {name}
            </span>
          )}
          <UserPicker
            appId={appId}
            label={`${label}: find a user`}
            width="w-40"
            onPick={(u) => onChange({ kind: 'user', userId: u.objectId })}
          />
        </span>
      )}
      {kind === 'roles' && (
        <fieldset className="inline-flex flex-wrap items-center gap-2" aria-label={`${label}: roles`}>
          {(roleNames.data ?? []).map((r) => (
            <label key={r} className="inline-flex items-center gap-1">
              <input
                type="checkbox"
                checked={roles.includes(r)}
                onChange={(e) => {
                  const next = e.target.checked ? [...roles, r] : roles.filter((x) => x !== r);
                  setRoles(next);
                  onChange(next.length ? { kind: 'roles', roles: next } : null);
                }}
              />
              {r}
            </label>
          ))}
          {roleNames.data?.length === 0 && <span className="text-gray-500">This app has no roles.</span>}
        </fieldset>
      )}
    </span>
  );
}
