/**
 * The class and how to look at it: its name, its row count, the live stream's state, the
 * viewpoint, the comparison and "Why?". The actions come on a line of their own below (the
 * toolbar), so a long class name or count never moves them. The line wraps rather than overflows:
 * with the row panel open, controls that overflowed were painted under the panel and could not be
 * clicked.
 */
import { Link } from 'react-router';
import { errorText } from '../../../lib/api.ts';
import { countText } from '../../../lib/plural.ts';
import type { Viewpoint } from '../../../lib/security-api.ts';
import { TOOL_BUTTON } from './tool-button.ts';
import { ViewpointPicker } from './viewpoint-picker.tsx';

export interface ClassHeaderProps {
  appId: string;
  cls: string;
  count: { data?: { count: number }; error: unknown };
  /** The live stream's state; shown while live mode is on. */
  liveStatus: string | null;
  viewpoint: Viewpoint | null;
  /** The viewpoint as it stands in the address: a new one remounts the picker. */
  asText: string;
  onViewAs(viewpoint: Viewpoint | null): void;
  comparing: boolean;
  onToggleCompare(): void;
  onWhy(): void;
}

export function ClassHeader(p: ClassHeaderProps) {
  const { count } = p;
  return (
    <div className="flex flex-wrap items-center gap-x-2 gap-y-1 px-2 pt-2 text-sm" data-testid="class-header">
      <h1 className="max-w-[30%] shrink-0 truncate text-base font-semibold" title={p.cls}>
        {p.cls}
      </h1>
      <span
        className={`min-w-0 truncate ${count.error ? 'text-red-600' : 'text-gray-500'}`}
        data-testid="row-count"
      >
        {count.data
          ? countText(count.data.count, 'row')
          : count.error
            ? `count refused: ${errorText(count.error)}`
            : 'counting…'}
      </span>
      {p.liveStatus !== null && (
        <span data-testid="live-status" className="shrink-0 text-xs text-slate-500">
          {p.liveStatus}
        </span>
      )}
      <span className="ml-auto flex min-w-0 flex-wrap items-center gap-2">
        <span className="flex items-center gap-1">
          View as
          <ViewpointPicker
            key={p.asText}
            appId={p.appId}
            label="view as"
            value={p.viewpoint}
            onChange={p.onViewAs}
          />
        </span>
        <button type="button" className={TOOL_BUTTON} aria-pressed={p.comparing} onClick={p.onToggleCompare}>
          Compare viewpoints
        </button>
        <button type="button" className={TOOL_BUTTON} onClick={p.onWhy}>
          Why?
        </button>
        <Link
          className={TOOL_BUTTON}
          to={`/apps/${encodeURIComponent(p.appId)}/api-docs/${encodeURIComponent(p.cls)}`}
        >
          API
        </Link>
      </span>
    </div>
  );
}
