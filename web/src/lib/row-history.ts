/**
 * Where a row's history opens: the data browser's class with the row panel on its History tab
 * (`row=<objectId>&history=1`). The audit log links there; the data browser reads the parameter.
 * A deleted row opens there too (its history, and Restore).
 */
export const HISTORY_PARAM = 'history';

export const rowHistoryPath = (appId: string, className: string, objectId: string): string =>
  `/apps/${encodeURIComponent(appId)}/data/${encodeURIComponent(className)}?${new URLSearchParams({
    row: objectId,
    [HISTORY_PARAM]: '1',
  })}`;

/** The class and objectId an audit entry's target names (`<Class>/<objectId>`), or null. */
export function rowOfTarget(target: string): { className: string; objectId: string } | null {
  const m = /^([A-Za-z_][A-Za-z0-9_]*)\/([A-Za-z0-9_-]+)$/.exec(target);
  return m ? { className: m[1]!, objectId: m[2]! } : null;
}
