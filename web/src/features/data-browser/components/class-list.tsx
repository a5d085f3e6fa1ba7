/** Class list with row counts (estimated for large classes, exact on demand); system classes apart. */

import { useEffect, useState } from 'react';
import { NavLink } from 'react-router';
import { errorText } from '../../../lib/api.ts';
import { isSystemClass, type SchemaDoc } from '../../../lib/wire.ts';
import { dataApi } from '../api/bff.ts';
import { startFirstPage } from '../api/early.ts';
import { DEFAULT_SORT } from '../lib/keyset.ts';
import { dataPath } from './cell.tsx';

/** A number short enough for the sidebar: "9,999", "12.3K", "1.2M". */
function compact(n: number): string {
  if (n < 10_000) return n.toLocaleString();
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 100_000 ? 1 : 0)}K`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}

/**
 * What the class list shows for a count: the exact number, or "≈" and the estimate when the bff
 * only had the service's estimate (large classes); the exact figure is one click away.
 */
export function approxCount(n: number | null | undefined, exact = true): string {
  if (n === null || n === undefined) return '?';
  return exact ? n.toLocaleString() : `≈${compact(n)}`;
}

export function ClassList({
  appId,
  schemas,
  current,
  run,
  canWrite,
  open,
  onToggle,
}: {
  appId: string;
  schemas: SchemaDoc[];
  current?: string;
  run(label: string, fn: () => Promise<unknown>): Promise<boolean>;
  canWrite: boolean;
  /** Collapsed, the list is a narrow strip with the button that opens it (small screens). */
  open: boolean;
  onToggle(): void;
}) {
  const [exact, setExact] = useState<Record<string, string>>({});
  const [name, setName] = useState('');
  // A fresh schema list (after a write) has fresh counts: drop the ones asked for before.
  // biome-ignore lint/correctness/useExhaustiveDependencies: reset when the list is refetched
  useEffect(() => setExact({}), [schemas]);
  if (!open)
    return (
      <nav className="w-8 shrink-0 border-r pt-2 text-sm" aria-label="classes">
        <button
          type="button"
          className="w-full"
          aria-label="Show class list"
          title="Show class list"
          onClick={onToggle}
        >
          »
        </button>
      </nav>
    );
  const user = schemas.filter((s) => !isSystemClass(s.className));
  const system = schemas.filter((s) => isSystemClass(s.className));
  // Pressing a class link asks for its first rows at once: they arrive with (not after) the click.
  const warm = (cls: string) => startFirstPage(appId, cls, {}, DEFAULT_SORT);
  const item = (s: SchemaDoc) => (
    <li key={s.className} className="flex items-center">
      <NavLink
        to={dataPath(appId, s.className)}
        onPointerDown={() => warm(s.className)}
        onKeyDown={(e) => e.key === 'Enter' && warm(s.className)}
        className={({ isActive }) =>
          `flex-1 truncate rounded px-1 ${isActive || s.className === current ? 'bg-blue-100 font-semibold dark:bg-blue-900' : ''}`
        }
      >
        {s.className}
      </NavLink>
      <button
        type="button"
        className="text-xs text-gray-500 hover:underline"
        title={
          s.countExact === false
            ? `About ${s.count?.toLocaleString()} rows: click for the exact count`
            : 'Click to recount'
        }
        data-testid={`count-${s.className}`}
        onClick={() =>
          dataApi
            .count(appId, s.className)
            .then((r) => setExact((e) => ({ ...e, [s.className]: r.count.toLocaleString() })))
            .catch((err) => setExact((e) => ({ ...e, [s.className]: errorText(err) })))
        }
      >
        {exact[s.className] ?? approxCount(s.count, s.countExact !== false)}
      </button>
    </li>
  );
  return (
    <nav className="w-56 shrink-0 overflow-auto border-r p-2 text-sm" aria-label="classes">
      <div className="flex items-center">
        <h2 className="font-semibold">Classes</h2>
        <button
          type="button"
          className="ml-auto px-1 text-gray-500"
          aria-label="Hide class list"
          title="Hide class list"
          onClick={onToggle}
        >
          «
        </button>
      </div>
      <ul>{user.map(item)}</ul>
      {canWrite && (
        <div className="mt-2 flex gap-1">
          <input
            aria-label="new class name"
            className="w-full rounded border px-1 dark:bg-gray-800"
            placeholder="New class"
            value={name}
            onChange={(e) => setName(e.target.value)}
          />
          <button
            type="button"
            className="rounded border px-1"
            aria-label="Create class"
            title="Create class"
            disabled={!name}
            onClick={() =>
              run(`Create class ${name}`, () => dataApi.createClass(appId, name)).then(
                (ok) => ok && setName(''),
              )
            }
          >
            +
          </button>
        </div>
      )}
      <h2 className="mt-3 font-semibold text-gray-500">System</h2>
      <ul>{system.map(item)}</ul>
    </nav>
  );
}
