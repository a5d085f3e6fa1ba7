import type { Page } from 'playwright-core';

/**
 * The data browser's write controls, by accessible name. The tests that click them (audit) and
 * the read-only test that expects them absent (data-browser) take them from here: a renamed
 * control fails the tests that click it, so the absence check cannot keep passing on a name the
 * page no longer uses.
 */
export const dataControls = {
  /** The class list's input for a new class... */
  newClassName: (page: Page) => page.getByLabel('new class name', { exact: true }),
  /** ...and its button. */
  createClass: (page: Page) => page.getByRole('button', { name: 'Create class', exact: true }),
  addRow: (page: Page) => page.getByRole('button', { name: 'Add row', exact: true }),
  /** A row's checkbox (a read-only user sees them too, but no Delete to use them with). */
  selectRow: (page: Page, id: string) => page.getByLabel(`select ${id}`, { exact: true }),
  /** "Delete" with nothing selected, "Delete 2" with two rows selected. */
  deleteRows: (page: Page) => page.getByRole('button', { name: /^Delete( \d+)?$/ }),
  /** Opens the schema panel (columns, indexes, Drop class). */
  schema: (page: Page) => page.getByRole('button', { name: 'Schema', exact: true }),
  confirmDrop: (page: Page) => page.getByLabel('confirm class name', { exact: true }),
  dropClass: (page: Page) => page.getByRole('button', { name: 'Drop', exact: true }),
  importFile: (page: Page) => page.getByLabel('import file', { exact: true }),
};
