/** A row of tabs (the section's views); the current one is chosen by the caller (the URL). */
export function Tabs<T extends string>({
  tabs,
  current,
  onSelect,
}: {
  tabs: ReadonlyArray<{ id: T; label: string }>;
  current: T;
  onSelect: (id: T) => void;
}) {
  return (
    <div role="tablist" className="mb-4 flex gap-1 border-b border-slate-200 dark:border-slate-700">
      {tabs.map((t) => (
        <button
          key={t.id}
          type="button"
          role="tab"
          aria-selected={current === t.id}
          onClick={() => onSelect(t.id)}
          className={`-mb-px border-b-2 px-3 py-1.5 text-sm ${
            current === t.id
              ? 'border-indigo-600 font-medium text-indigo-700 dark:text-indigo-300'
              : 'border-transparent text-slate-600 hover:text-slate-900 dark:text-slate-400 dark:hover:text-slate-100'
          }`}
        >
          {t.label}
        </button>
      ))}
    </div>
  );
}
