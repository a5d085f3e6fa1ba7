import { useState } from 'react';
import { Button } from '../../../components/ui/button.tsx';

/** A JSON value as a collapsible tree: objects and arrays fold; scalars are coloured by type. */
export function JsonTree({ value, label }: { value: unknown; label: string }) {
  // Changing the generation remounts the tree with every node open or closed.
  const [view, setView] = useState({ generation: 0, openDepth: 2 });
  return (
    <div>
      <div className="mb-1 flex gap-2">
        <Button size="sm" onClick={() => setView((v) => ({ generation: v.generation + 1, openDepth: 64 }))}>
          Expand all
        </Button>
        <Button size="sm" onClick={() => setView((v) => ({ generation: v.generation + 1, openDepth: 0 }))}>
          Collapse all
        </Button>
      </div>
      <section
        key={view.generation}
        data-testid="json-tree"
        aria-label={label}
        className="overflow-auto rounded border border-slate-200 p-2 font-mono text-xs dark:border-slate-700"
      >
        <Node name={null} value={value} depth={0} openDepth={view.openDepth} />
      </section>
    </div>
  );
}

function Scalar({ value }: { value: unknown }) {
  if (value === null) return <span className="text-slate-500">null</span>;
  if (typeof value === 'string')
    return <span className="break-all text-emerald-700 dark:text-emerald-400">{JSON.stringify(value)}</span>;
  if (typeof value === 'number')
    return <span className="text-sky-700 dark:text-sky-400">{String(value)}</span>;
  if (typeof value === 'boolean')
    return <span className="text-purple-700 dark:text-purple-400">{String(value)}</span>;
  return <span>{JSON.stringify(value)}</span>;
}

function Key({ name }: { name: string | number | null }) {
  if (name === null) return null;
  return (
    <span className="text-slate-700 dark:text-slate-300">
      {typeof name === 'number' ? name : JSON.stringify(name)}:{' '}
    </span>
  );
}

function Node({
  name,
  value,
  depth,
  openDepth,
}: {
  name: string | number | null;
  value: unknown;
  depth: number;
  openDepth: number;
}) {
  if (value === null || typeof value !== 'object') {
    return (
      <div className="pl-4">
        <Key name={name} />
        <Scalar value={value} />
      </div>
    );
  }
  const isArray = Array.isArray(value);
  const entries: Array<[string | number, unknown]> = isArray
    ? (value as unknown[]).map((v, i) => [i, v])
    : Object.entries(value as Record<string, unknown>);
  const summary = isArray
    ? `[${entries.length} item${entries.length === 1 ? '' : 's'}]`
    : `{${entries.length} key${entries.length === 1 ? '' : 's'}}`;
  if (entries.length === 0) {
    return (
      <div className="pl-4">
        <Key name={name} />
        <span className="text-slate-500">{isArray ? '[]' : '{}'}</span>
      </div>
    );
  }
  return (
    <details open={depth < openDepth} className="pl-4">
      <summary className="-ml-4 cursor-pointer select-none">
        <Key name={name} />
        <span className="text-slate-500">{summary}</span>
      </summary>
      <div>
        {entries.map(([k, v]) => (
          <Node key={k} name={k} value={v} depth={depth + 1} openDepth={openDepth} />
        ))}
      </div>
    </details>
  );
}
