/**
 * One attempt to deliver a webhook call, as the service's master-only delivery log keeps it
 * (`GET /hooks/deliveries`) and the console shows it.
 */
export interface HookDelivery {
  id: number;
  /** When the attempt started (ISO 8601). */
  at: string;
  kind: 'function' | 'trigger';
  /** The function's name, or `<className>.<triggerName>`. */
  hook: string;
  functionName?: string;
  className?: string;
  triggerName?: string;
  objectId?: string;
  /** The receiver, without its query string. */
  url: string;
  status: 'succeeded' | 'failed' | 'retrying';
  httpStatus?: number;
  durationMs: number;
  attempt: number;
  error?: string;
}

/** A `_JobStatus` row (docs/protocol.md#jobs-and-schedules). */
export interface JobStatus {
  objectId: string;
  jobName: string;
  source: 'api' | 'schedule';
  status: 'running' | 'succeeded' | 'failed';
  message?: string;
  params?: Record<string, unknown>;
  startedAt?: { __type: 'Date'; iso: string };
  finishedAt?: { __type: 'Date'; iso: string };
  scheduleId?: string;
  /** While running: the lease its instance renews; once passed, the run is marked failed. */
  leaseUntil?: { __type: 'Date'; iso: string };
}
