/**
 * The class's actions on one line: the panels (filter, columns, recent changes, schema), refresh,
 * live mode, then what the caller adds (the bulk actions, export and import). It scrolls sideways
 * rather than wraps.
 */
import type { ReactNode } from 'react';
import type { ClassPanel } from '../hooks/use-class-panels.ts';
import { TOOL_BUTTON } from './tool-button.ts';

export interface ClassToolbarProps {
  togglePanel(which: Exclude<ClassPanel, 'none'>): void;
  /** A filter applies: the Filter button says so. */
  hasFilter: boolean;
  /** Real writes are allowed (a writer, viewing as master): the schema panel is offered. */
  realWrite: boolean;
  onRefresh(): void;
  /** Live mode, offered as master only; null while viewing as someone else. */
  live: { on: boolean; setOn(on: boolean): void } | null;
  children: ReactNode;
}

export function ClassToolbar(p: ClassToolbarProps) {
  return (
    <div
      className="flex flex-nowrap items-center gap-1 overflow-x-auto border-b p-2 text-sm"
      data-testid="class-toolbar"
    >
      <button type="button" className={TOOL_BUTTON} onClick={() => p.togglePanel('filter')}>
        Filter{p.hasFilter ? ' •' : ''}
      </button>
      <button type="button" className={TOOL_BUTTON} onClick={() => p.togglePanel('columns')}>
        Columns
      </button>
      <button type="button" className={TOOL_BUTTON} onClick={() => p.togglePanel('changes')}>
        Changes
      </button>
      {p.realWrite && (
        <button type="button" className={TOOL_BUTTON} onClick={() => p.togglePanel('schema')}>
          Schema
        </button>
      )}
      <button
        type="button"
        className={TOOL_BUTTON}
        onClick={p.onRefresh}
        aria-label="Refresh"
        title="Refresh"
      >
        ↻
      </button>
      {p.live && (
        <label className="flex shrink-0 items-center gap-1 text-sm">
          <input type="checkbox" checked={p.live.on} onChange={(e) => p.live?.setOn(e.target.checked)} />
          Live
        </label>
      )}
      {p.children}
    </div>
  );
}
