import type { CloudCode } from '../../../hooks/use-cloud-code.ts';

/** Every trigger per class, in-process (the cloud module) and webhook, in the order they run. */
export function TriggersPanel({ code }: { code: CloudCode }) {
  if (code.triggersByClass.length === 0) {
    return (
      <p className="text-sm text-slate-500" data-testid="triggers-empty">
        No triggers: register one with cloud.beforeSave() and the like, or as a webhook (Hooks tab).
      </p>
    );
  }
  return (
    <div className="space-y-4 text-sm">
      {code.triggersByClass.map((c) => (
        <section key={c.className} aria-label={`Triggers of ${c.className}`}>
          <h2 className="mb-1 font-mono font-medium">{c.className}</h2>
          <table className="w-full text-left">
            <thead className="text-xs text-slate-500 uppercase">
              <tr>
                <th className="w-48 py-1">Trigger</th>
                <th className="w-32">Kind</th>
                <th>Receiver</th>
              </tr>
            </thead>
            <tbody>
              {c.triggers.map((t) => (
                <tr
                  key={`${t.triggerName}:${t.kind}`}
                  data-testid="trigger"
                  className="border-t border-slate-100 dark:border-slate-800"
                >
                  <td className="py-1 font-mono">{t.triggerName}</td>
                  <td>{t.kind}</td>
                  <td className="font-mono text-xs break-all">{t.url ?? ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      ))}
    </div>
  );
}
