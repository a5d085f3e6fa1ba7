/**
 * The app's installations, newest first, filtered, push tokens masked: the one bff endpoint
 * (`GET /bff/apps/:appId/people/installations`) behind the Push section's list and Security's
 * Installations tab.
 */
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { api, seg } from '../lib/api.ts';

export interface InstallationRow {
  objectId: string;
  installationId?: string;
  deviceType?: string;
  /** Masked by the bff: the token's start only. */
  deviceToken?: string;
  channels?: string[];
  badge?: number;
  createdAt: string;
  user: { objectId: string; username?: string } | null;
}

/** Each filter narrows the list; an empty one does not. */
export interface InstallationFilter {
  deviceType: string;
  channel: string;
  username: string;
}

/** How many installations the list shows (the count says when there are more). */
const SHOWN = 200;

export const installationsKey = (appId: string, filter?: InstallationFilter) =>
  filter ? (['apps', appId, 'installations', filter] as const) : (['apps', appId, 'installations'] as const);

export const useInstallations = (appId: string, filter: InstallationFilter) =>
  useQuery({
    queryKey: installationsKey(appId, filter),
    queryFn: ({ signal }) =>
      api.get<{ results: InstallationRow[]; count: number }>(
        `/apps/${seg(appId)}/people/installations`,
        {
          deviceType: filter.deviceType || undefined,
          channel: filter.channel || undefined,
          username: filter.username || undefined,
          limit: SHOWN,
        },
        signal,
      ),
    // A new filter keeps the table in place until its answer arrives.
    placeholderData: keepPreviousData,
  });
