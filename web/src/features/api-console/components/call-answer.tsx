import type { ApiCallAnswer } from '../lib/call.ts';
import { JsonTree } from './json-tree.tsx';

const VIA: Record<ApiCallAnswer['via'], string> = {
  'master-key': 'sent with the master key',
  'security-evaluate': 'evaluated with the viewpoint’s permissions (no session)',
  'application-keys': 'sent with the application keys only',
};

/** The service's answer to one call: status, protocol code, time, and the body as a tree. */
export function CallAnswer({ answer }: { answer: ApiCallAnswer }) {
  const failed = answer.status >= 400;
  return (
    <section data-testid="api-answer" aria-label="Answer" className="space-y-2">
      <div className="flex flex-wrap items-center gap-3 text-sm">
        <span
          data-testid="answer-status"
          className={`rounded px-2 py-0.5 font-mono font-semibold ${failed ? 'bg-red-100 text-red-800 dark:bg-red-950 dark:text-red-200' : 'bg-emerald-100 text-emerald-800 dark:bg-emerald-950 dark:text-emerald-200'}`}
        >
          Status {answer.status}
        </span>
        {answer.code !== undefined && (
          <span data-testid="answer-code" className="font-mono">
            code {answer.code}
          </span>
        )}
        <span data-testid="answer-ms" className="text-slate-500">
          {answer.ms} ms
        </span>
        <span className="text-xs text-slate-500">{VIA[answer.via]}</span>
      </div>
      {answer.dryRun && (
        <p
          role="status"
          data-testid="dry-run"
          className="rounded border-l-4 border-amber-500 bg-amber-50 px-3 py-2 text-sm text-amber-900 dark:bg-amber-950 dark:text-amber-100"
        >
          <strong>Dry run: nothing was changed.</strong> The write was checked with this viewpoint’s
          permissions and rolled back; this is what the service would have answered.
        </p>
      )}
      <JsonTree value={answer.body} label="Answer body" />
      {answer.wouldHave !== undefined && (
        <div>
          <p className="mb-1 text-sm font-medium">What would have happened</p>
          <JsonTree value={answer.wouldHave} label="What would have happened" />
        </div>
      )}
    </section>
  );
}
