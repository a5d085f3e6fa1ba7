/** The realtime resume window: what the service keeps for subscriptions that resume (`since`). */
import { useQuery } from '@tanstack/react-query';
import { QueryState } from '../../../components/query-state.tsx';
import { fetchResumeWindow, resumeWindowKey } from '../api/resume-window.ts';
import { boundsText, spanText } from '../lib/resume-window.ts';

export function ResumeWindowPanel({ appId }: { appId: string }) {
  const query = useQuery({
    queryKey: resumeWindowKey(appId),
    queryFn: ({ signal }) => fetchResumeWindow(appId, signal),
  });
  return (
    <section aria-label="Resume window" className="mb-4 rounded border p-3 text-sm">
      <div className="flex items-center gap-3">
        <h2 className="font-semibold">Resume window</h2>
        <button
          type="button"
          className="rounded border px-2 py-0.5 text-sm disabled:opacity-50"
          disabled={query.isFetching}
          onClick={() => void query.refetch()}
        >
          Refresh window
        </button>
      </div>
      <QueryState
        query={query}
        loading="Loading the resume window…"
        failed="Could not load the resume window"
        inline
      >
        {(w) => (
          <>
            <p data-testid="resume-window-span" className="mt-1 font-mono text-xs">
              {spanText(w)}
            </p>
            <p data-testid="resume-window-bounds" className="mt-1 text-slate-500 dark:text-slate-400">
              {boundsText(w)}
            </p>
          </>
        )}
      </QueryState>
    </section>
  );
}
