import type { LogLine, LogsAnswer, RequestLinesAnswer } from '@bds/client/protocol';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { api, bffUrl, seg } from '../../../lib/api.ts';
import type { LogFilters } from '../lib/filters.ts';

export type { LogLine } from '@bds/client/protocol';

export const logsKey = (appId: string, filters?: LogFilters) =>
  filters ? (['apps', appId, 'logs', filters] as const) : (['apps', appId, 'logs'] as const);

/** Request lines by the filters, newest first (the service's GET /logs, through the bff). */
export function useLogs(appId: string, filters: LogFilters) {
  return useQuery({
    queryKey: logsKey(appId, filters),
    queryFn: ({ signal }) => api.get<LogsAnswer>(`/apps/${seg(appId)}/logs`, { ...filters }, signal),
    placeholderData: keepPreviousData,
  });
}

/** Every line of one request, oldest first. */
export function useRequestLines(appId: string, requestId: string | undefined) {
  return useQuery({
    queryKey: ['apps', appId, 'logs', 'request', requestId] as const,
    enabled: requestId !== undefined,
    queryFn: ({ signal }) =>
      api.get<RequestLinesAnswer>(`/apps/${seg(appId)}/logs/${seg(requestId!)}`, undefined, signal),
  });
}

/**
 * The live tail: server-sent events from the bff, which asks the service; the URL names only the
 * app. Answers the function that closes it.
 */
export function openTail(
  appId: string,
  handlers: { onReady(): void; onLine(line: LogLine): void; onFail(error: string): void },
): () => void {
  const es = new EventSource(bffUrl(`/apps/${seg(appId)}/logs/tail`));
  let closed = false;
  const data = (e: Event): unknown => {
    try {
      return JSON.parse(String((e as MessageEvent).data));
    } catch {
      return null;
    }
  };
  es.addEventListener('ready', () => handlers.onReady());
  es.addEventListener('line', (e) => {
    const line = data(e);
    if (line && typeof line === 'object') handlers.onLine(line as LogLine);
  });
  es.addEventListener('fail', (e) => {
    const d = data(e) as { error?: string } | null;
    handlers.onFail(d?.error ?? 'The live tail ended.');
    closed = true;
    es.close();
  });
  es.onerror = () => {
    if (closed) return;
    // EventSource reconnects by itself while the bff is reachable; a closed one is over.
    if (es.readyState === EventSource.CLOSED) handlers.onFail('The live tail lost its connection.');
  };
  return () => {
    closed = true;
    es.close();
  };
}
