/**
 * The service's realtime resume window as the bff answers it (`GET /bff/apps/:appId/realtime/retention`,
 * the service's master-only `GET /live/retention`): its bounds, how many events it keeps now, the
 * oldest and the newest.
 */
import { apiFetch, seg } from '../../../lib/api.ts';

export interface WindowEnd {
  eventId: string;
  /** ISO time the event was published. */
  at: string;
}

export interface ResumeWindow {
  retentionMs: number;
  retentionMaxEvents: number;
  count: number;
  oldest: WindowEnd | null;
  newest: WindowEnd | null;
}

export const resumeWindowKey = (appId: string) => ['apps', appId, 'realtime', 'retention'] as const;

export const fetchResumeWindow = (appId: string, signal?: AbortSignal) =>
  apiFetch<ResumeWindow>(`/apps/${seg(appId)}/realtime/retention`, { method: 'GET', signal });
