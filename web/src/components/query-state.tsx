/**
 * What every list and panel shows around a query: a spinner while it runs, the error as an alert
 * when it fails, an empty state when the answer holds nothing, else the answer.
 */
import type { ReactNode } from 'react';
import { Spinner } from './ui/spinner.tsx';

/** The part of a query's result this reads (react-query's `useQuery` answers it). */
export interface QueryLike<T> {
  isPending: boolean;
  isError: boolean;
  error: Error | null;
  data: T | undefined;
}

export interface QueryStateProps<T> {
  query: QueryLike<T>;
  /** The spinner's label while the query runs, e.g. "Loading installations…". */
  loading: string;
  /** What failed, said before the error's text, e.g. "Could not load the installations". */
  failed?: string;
  /** How the error reads (default: its message). */
  errorText?: (error: Error) => string;
  errorTestId?: string;
  /** Inside a dialog or a small panel: plain lines, no spinner, the text size of what surrounds it. */
  inline?: boolean;
  /** Whether the answer holds nothing: `empty` is shown instead of `children`. */
  isEmpty?: (data: T) => boolean;
  empty?: ReactNode;
  children: (data: T) => ReactNode;
}

export function QueryState<T>({
  query,
  loading,
  failed,
  errorText = (error) => error.message,
  errorTestId,
  inline = false,
  isEmpty,
  empty,
  children,
}: QueryStateProps<T>) {
  if (query.isPending) return inline ? <p>{loading}</p> : <Spinner label={loading} />;
  if (query.isError) {
    const said = errorText(query.error as Error);
    return (
      <p role="alert" className={inline ? 'text-red-600' : 'text-sm text-red-600'} data-testid={errorTestId}>
        {failed ? `${failed}: ${said}` : said}
      </p>
    );
  }
  const data = query.data as T;
  if (isEmpty?.(data)) return <>{empty}</>;
  return <>{children(data)}</>;
}
