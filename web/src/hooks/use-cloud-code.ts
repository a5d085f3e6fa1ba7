/**
 * The app's cloud code as the bff reports it: functions, jobs, triggers and webhooks. Read by the
 * Cloud section and by the data browser's "Run function" on rows.
 */
import { useQuery } from '@tanstack/react-query';
import { api, seg } from '../lib/api.ts';

export interface CloudCode {
  functions: string[];
  jobs: string[];
  triggers: Array<{ className: string; triggerName: string }>;
  webhookFunctions: Array<{ functionName: string; url: string }>;
  webhookTriggers: Array<{ className: string; triggerName: string; url: string }>;
  /** Every trigger, in-process and webhook, per class (classes by name, triggers in run order). */
  triggersByClass: Array<{
    className: string;
    triggers: Array<{ triggerName: string; kind: 'cloud code' | 'webhook'; url?: string }>;
  }>;
}

const root = (appId: string) => `/apps/${seg(appId)}/cloud`;
export const cloudKey = (appId: string) => ['apps', appId, 'cloud'] as const;

export function useCloudCode(appId: string) {
  return useQuery({
    queryKey: cloudKey(appId),
    queryFn: ({ signal }) => api.get<CloudCode>(root(appId), undefined, signal),
  });
}
