/**
 * Browsers cap an element's height (Chromium about 33.5M px, Firefox about 17.9M px), so a class of
 * more than about a million 30 px rows cannot have a spacer of its true height. Past MAX_SCROLL_PX
 * the grid keeps a spacer of MAX_SCROLL_PX and maps the real scroll position linearly onto the
 * virtual one (first row at the top, last row at the bottom); the rows are drawn shifted by the
 * difference so they stay under the viewport.
 */

/** The tallest spacer the grid creates: well under every browser's limit. */
export const MAX_SCROLL_PX = 15_000_000;

export interface ScrollScale {
  /** Height of the spacer in the page. */
  realSize: number;
  /** virtual offset = real scrollTop * ratio (1 when the rows fit). */
  ratio: number;
}

/**
 * @param virtualSize rows × row height
 * @param viewport the scroll element's client height
 * @param header height of the content above the rows inside the scroll element (sticky header)
 */
export function scrollScale(
  virtualSize: number,
  viewport: number,
  header = 0,
  max = MAX_SCROLL_PX,
): ScrollScale {
  if (virtualSize <= max) return { realSize: virtualSize, ratio: 1 };
  const realRange = max + header - viewport;
  const virtualRange = virtualSize + header - viewport;
  return { realSize: max, ratio: realRange > 0 ? virtualRange / realRange : 1 };
}

/** How far up the rows (placed at their virtual offsets) are drawn for a virtual scroll offset. */
export const rowShift = (virtualOffset: number, ratio: number): number =>
  ratio === 1 ? 0 : virtualOffset - virtualOffset / ratio;
