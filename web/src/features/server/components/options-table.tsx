import type { OptionRow } from '../api/server-options.ts';
import { depthOf, valueText } from '../lib/options.ts';

const cell = 'px-3 py-2 align-top';

/** A value as the table shows it: muted when not set or hidden, JSON in a block when long. */
function OptionValue({ row }: { row: OptionRow }) {
  const text = valueText(row);
  if (!row.set || row.hidden) {
    return (
      <span data-testid="option-value" className="text-slate-400 italic dark:text-slate-500">
        {text}
      </span>
    );
  }
  if (typeof row.value === 'boolean') {
    return (
      <span
        data-testid="option-value"
        className={`rounded px-1.5 py-0.5 font-mono text-xs ${
          row.value
            ? 'bg-emerald-100 text-emerald-900 dark:bg-emerald-900/40 dark:text-emerald-100'
            : 'bg-slate-100 text-slate-700 dark:bg-slate-800 dark:text-slate-300'
        }`}
      >
        {text}
      </span>
    );
  }
  if (text.length > 60 && typeof row.value === 'object') {
    return (
      <pre
        data-testid="option-value"
        className="max-h-48 overflow-auto rounded bg-slate-50 p-2 font-mono text-xs whitespace-pre-wrap break-all dark:bg-slate-800/60"
      >
        {JSON.stringify(row.value, null, 2)}
      </pre>
    );
  }
  return (
    <span data-testid="option-value" className="font-mono text-xs break-all">
      {text}
    </span>
  );
}

/** A description with its `code` spans (the schema's descriptions mark names and values so). */
export function Description({ text }: { text: string }) {
  const parts = text.split('`');
  // An odd count of backticks leaves the text as it is.
  if (parts.length % 2 === 0) return <>{text}</>;
  return (
    <>
      {parts.map((part, i) =>
        i % 2 === 1 ? (
          // biome-ignore lint/suspicious/noArrayIndexKey: the parts of one fixed text, never reordered
          <code key={i} className="rounded bg-slate-100 px-1 font-mono text-xs dark:bg-slate-800">
            {part}
          </code>
        ) : (
          part
        ),
      )}
    </>
  );
}

/** One group's options: name, value, description; an object option's fields indented below it. */
export function OptionsTable({ rows, label }: { rows: OptionRow[]; label: string }) {
  return (
    <div className="overflow-x-auto rounded-md border border-slate-200 dark:border-slate-700">
      <table className="w-full table-fixed text-left text-sm" aria-label={label}>
        <thead className="bg-slate-50 text-xs text-slate-500 uppercase dark:bg-slate-800 dark:text-slate-400">
          <tr>
            <th className={`${cell} w-1/4`}>Option</th>
            <th className={`${cell} w-1/4`}>Value</th>
            <th className={cell}>Description</th>
          </tr>
        </thead>
        <tbody className="divide-y divide-slate-200 dark:divide-slate-700">
          {rows.map((row) => (
            <tr
              key={row.name}
              data-testid="option-row"
              data-option={row.name}
              className={row.object ? 'bg-slate-50/60 dark:bg-slate-800/30' : undefined}
            >
              <td className={cell}>
                <code
                  className={`font-mono text-xs break-all ${row.object ? 'font-semibold' : ''}`}
                  style={{ paddingLeft: `${depthOf(row) * 0.75}rem` }}
                  title={row.name}
                >
                  {row.name}
                </code>
              </td>
              <td className={cell}>
                {row.object ? (
                  <span data-testid="option-value" className="text-xs text-slate-400">
                    fields below
                  </span>
                ) : (
                  <OptionValue row={row} />
                )}
              </td>
              <td className={`${cell} text-slate-600 dark:text-slate-300`}>
                <Description text={row.description} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
