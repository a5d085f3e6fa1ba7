/**
 * The lines over the grid that say something about what it shows: a sort that reads the whole
 * class, rows the service refused, and the answer to a dry run made while viewing as someone.
 */
import { errorText } from '../../../lib/api.ts';
import type { Evaluation } from '../../../lib/security-api.ts';
import type { DryRun } from '../hooks/use-class-panels.ts';
import { TOOL_BUTTON } from './tool-button.ts';

/** Above this many rows, sorting by a column without an index says so and offers the index. */
export const LARGE_CLASS_ROWS = 10_000;

/** Sorting by `field` has no index to use: each page reads and sorts the whole class. */
export function SlowSortNotice({
  field,
  rowsInClass,
  onCreateIndex,
}: {
  field: string;
  rowsInClass: number;
  /** Offered to writers viewing as master. */
  onCreateIndex?(): void;
}) {
  return (
    <div
      className="flex flex-wrap items-center gap-2 border-b bg-amber-50 p-2 text-sm dark:bg-amber-950"
      data-testid="sort-notice"
    >
      <span>
        No index on {field}: sorting {rowsInClass.toLocaleString()} rows reads the whole class for every page,
        so rows can take seconds to appear.
      </span>
      {onCreateIndex && (
        <button type="button" className={TOOL_BUTTON} onClick={onCreateIndex}>
          Create index on {field}
        </button>
      )}
    </div>
  );
}

/** The service refused the rows; viewing as someone, "Why?" explains the refusal. */
export function RowsError({ error, onWhy }: { error: string; onWhy?(): void }) {
  return (
    <p className="p-2 text-red-600" role="alert" data-testid="rows-error">
      {error}
      {onWhy && (
        <button type="button" className="ml-2 underline" onClick={onWhy}>
          Why?
        </button>
      )}
    </p>
  );
}

/** Whether the edit would have been saved as the viewpoint, and why not. Nothing was saved. */
export function DryRunResult({
  dryRun,
  viewpointName,
  onWhy,
  onDismiss,
}: {
  dryRun: DryRun;
  viewpointName: string;
  onWhy(): void;
  onDismiss(): void;
}) {
  const { answer } = dryRun;
  return (
    <div
      className={`flex flex-wrap items-center gap-2 border-b p-2 text-sm ${answer.status < 300 ? 'bg-emerald-50 dark:bg-emerald-950' : 'bg-red-50 dark:bg-red-950'}`}
      data-testid="dry-run-result"
      data-status={answer.status}
    >
      <span>
        Dry run as {viewpointName}: the edit of {dryRun.field} on {dryRun.objectId}{' '}
        {answer.status < 300 ? 'would be saved.' : `would be refused — ${errorText(dryRunError(answer))}.`}{' '}
        Nothing was saved.
      </span>
      {answer.status >= 300 && (
        <button type="button" className={TOOL_BUTTON} onClick={onWhy}>
          Why?
        </button>
      )}
      <button type="button" className="ml-auto" aria-label="dismiss dry run" onClick={onDismiss}>
        ✕
      </button>
    </div>
  );
}

/** The refusal in a dry run's answer, as an error for `errorText`. */
function dryRunError(answer: Evaluation): Error {
  const b = (answer.body ?? {}) as { code?: number; error?: string };
  return new Error(`Error ${b.code ?? answer.status}: ${b.error ?? 'refused'}`);
}
