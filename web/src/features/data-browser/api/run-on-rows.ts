/** The data browser's "Run function" on the selected rows, through the bff's cloud routes. */
import { useMutation } from '@tanstack/react-query';
import { api, seg } from '../../../lib/api.ts';

const root = (appId: string) => `/apps/${seg(appId)}/cloud`;

/** One call of a function per selected row: its answer. */
export type RowAnswer = { objectId: string } & (
  | { ok: true; result: unknown }
  | { ok: false; code: number; error: string }
);

/** Runs a function once per row (as master), with the row's className and objectId as params. */
export function useRunOnRows(appId: string) {
  return useMutation({
    mutationFn: (call: {
      name: string;
      className: string;
      objectIds: string[];
      params: Record<string, unknown>;
    }) =>
      api.post<{ results: RowAnswer[]; succeeded: number; failed: number }>(
        `${root(appId)}/functions/${seg(call.name)}/rows`,
        { className: call.className, objectIds: call.objectIds, params: call.params },
      ),
  });
}
