import type { HookDelivery, JobStatus } from '@bds/client/protocol';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { cloudKey } from '../../../hooks/use-cloud-code.ts';
import { api, seg } from '../../../lib/api.ts';

export type FunctionAnswer =
  | { ok: true; result: unknown; durationMs: number }
  | { ok: false; code: number; error: string; durationMs: number };

type WireDate = { __type: 'Date'; iso: string };

export type JobStatusRow = JobStatus;

/** What a schedule does with the ticks it missed while the service was down (docs/protocol.md#jobs-and-schedules). */
export type CatchUpPolicy = 'once' | 'each' | 'skip';

export interface ScheduleRow {
  objectId: string;
  jobName: string;
  cron: string;
  timeZone: string;
  params?: Record<string, unknown>;
  enabled: boolean;
  startAfter?: WireDate;
  catchUp?: CatchUpPolicy;
  lastRunAt?: WireDate;
  nextRunAt?: WireDate;
}

export interface ScheduleInput {
  jobName?: string;
  cron?: string;
  timeZone?: string;
  params?: Record<string, unknown>;
  enabled?: boolean;
  /** An ISO instant; null removes it. */
  startAfter?: string | null;
  /** null: the service's default. */
  catchUp?: CatchUpPolicy | null;
}

/** The schedules, and the service's catch-up policy for those without their own. */
export interface ScheduleList {
  results: ScheduleRow[];
  catchUp: { policy: CatchUpPolicy; max: number };
}

export type Delivery = HookDelivery;

const root = (appId: string) => `/apps/${seg(appId)}/cloud`;

export function useRunFunction(appId: string) {
  return useMutation({
    mutationFn: (call: { name: string; params: Record<string, unknown>; userId?: string }) =>
      api.post<FunctionAnswer>(`${root(appId)}/functions/${seg(call.name)}`, {
        params: call.params,
        userId: call.userId,
      }),
  });
}

export const jobsKey = (appId: string) => ['apps', appId, 'cloud', 'jobs'] as const;

/** Job runs, newest first; polled every second while one is running (live status). */
export function useJobHistory(appId: string) {
  return useQuery({
    queryKey: jobsKey(appId),
    queryFn: ({ signal }) =>
      api.get<{ results: JobStatusRow[] }>(`${root(appId)}/jobs/status`, { limit: 50 }, signal),
    refetchInterval: (query) =>
      query.state.data?.results.some((r) => r.status === 'running') ? 1000 : false,
  });
}

export function useRunJob(appId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (call: { name: string; params: Record<string, unknown> }) =>
      api.post<{ statusId: string }>(`${root(appId)}/jobs/${seg(call.name)}`, { params: call.params }),
    onSuccess: () => client.invalidateQueries({ queryKey: jobsKey(appId) }),
  });
}

export const schedulesKey = (appId: string) => ['apps', appId, 'cloud', 'schedules'] as const;

export function useSchedules(appId: string) {
  return useQuery({
    queryKey: schedulesKey(appId),
    queryFn: ({ signal }) => api.get<ScheduleList>(`${root(appId)}/schedules`, undefined, signal),
  });
}

export function useSaveSchedule(appId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ id, input }: { id?: string; input: ScheduleInput }) =>
      id
        ? api.put<ScheduleRow>(`${root(appId)}/schedules/${seg(id)}`, input)
        : api.post<ScheduleRow>(`${root(appId)}/schedules`, input),
    onSuccess: () => client.invalidateQueries({ queryKey: schedulesKey(appId) }),
  });
}

export function useDeleteSchedule(appId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (id: string) => api.delete(`${root(appId)}/schedules/${seg(id)}`),
    onSuccess: () => client.invalidateQueries({ queryKey: schedulesKey(appId) }),
  });
}

export type HookChange =
  | { action: 'create'; kind: 'function'; functionName: string; url: string }
  | { action: 'create'; kind: 'trigger'; className: string; triggerName: string; url: string }
  | { action: 'update' | 'delete'; path: string; url?: string };

export function useChangeHook(appId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (change: HookChange) => {
      if (change.action === 'create') {
        const { action: _a, kind, ...body } = change;
        return api.post(`${root(appId)}/hooks/${kind === 'function' ? 'functions' : 'triggers'}`, body);
      }
      const url = `${root(appId)}/hooks/${change.path}`;
      return change.action === 'update' ? api.put(url, { url: change.url }) : api.delete(url);
    },
    onSuccess: () => client.invalidateQueries({ queryKey: cloudKey(appId) }),
  });
}

export function useDeliveries(appId: string, filter: { kind?: string; status?: string; hook?: string }) {
  return useQuery({
    queryKey: ['apps', appId, 'cloud', 'deliveries', filter],
    queryFn: ({ signal }) => {
      const query = Object.fromEntries(Object.entries(filter).filter(([, v]) => v));
      return api.get<{ results: Delivery[] }>(`${root(appId)}/deliveries`, { ...query, limit: 200 }, signal);
    },
    refetchInterval: 2000,
  });
}
