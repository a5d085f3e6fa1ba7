/**
 * The data browser's query keys in one place: a query read in one file and refreshed in another
 * (the schema list, a class's count, a row) must use the same key, so both build it here.
 */
export const dataBrowserKeys = {
  /** Every class's schema, with its row count (the class list). */
  schemas: (appId: string) => ['data-browser', appId, 'schemas'] as const,
  /** One class's schema, asked for while the list is still on its way. */
  schema: (appId: string, cls: string | undefined) => ['data-browser', appId, 'schema', cls] as const,
  /** A class's row count under a filter (`whereText`) and a viewpoint (`as`, empty for master). */
  count: (appId: string, cls: string, whereText: string, as: string) =>
    ['data-browser', appId, 'count', cls, whereText, as] as const,
  /** The saved filters of a class. */
  savedFilters: (appId: string, cls: string) => ['data-browser', appId, 'filters', cls] as const,
  /** Every row of a class read by the row panel (the prefix of `row`). */
  rowsOf: (appId: string, cls: string) => ['data-browser', appId, 'row', cls] as const,
  /** One row read by the row panel (the panel adds its viewpoint). */
  row: (appId: string, cls: string, objectId: string) =>
    ['data-browser', appId, 'row', cls, objectId] as const,
  /** Every history query of a class: a row's versions and the recent changes (the prefix of both). */
  historyOf: (appId: string, cls: string) => ['data-browser', appId, 'history', cls] as const,
  /** One row's versions, newest first. */
  rowHistory: (appId: string, cls: string, objectId: string) =>
    ['data-browser', appId, 'history', cls, 'row', objectId] as const,
  /** The recent changes of a class under filters. */
  changes: (appId: string, cls: string, filters: Record<string, string | undefined>) =>
    ['data-browser', appId, 'history', cls, 'changes', filters] as const,
};
