/** The look of a button on the class's header, toolbar and notices (small, bordered, dims when off). */
export const TOOL_BUTTON = 'shrink-0 rounded border px-1 py-0.5 disabled:opacity-50';
