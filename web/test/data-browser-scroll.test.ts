import { describe, expect, it } from 'vitest';
import { MAX_SCROLL_PX, rowShift, scrollScale } from '../src/features/data-browser/lib/scroll-scale.ts';

describe('grid scroll scaling', () => {
  it('keeps the true height when the rows fit', () => {
    expect(scrollScale(100_000 * 30, 700, 30)).toEqual({ realSize: 3_000_000, ratio: 1 });
    expect(rowShift(12_345, 1)).toBe(0);
  });

  it('caps the spacer and maps both ends of the scroll range exactly', () => {
    for (const rows of [1_000_000, 5_000_000, 50_000_000]) {
      const virtualSize = rows * 30;
      const viewport = 700;
      const header = 30;
      const { realSize, ratio } = scrollScale(virtualSize, viewport, header);
      expect(realSize).toBe(MAX_SCROLL_PX);
      expect(ratio).toBeGreaterThan(1);
      const maxScrollTop = realSize + header - viewport;
      const virtualOffset = maxScrollTop * ratio;
      expect(virtualOffset).toBeCloseTo(virtualSize + header - viewport, 3);
      // The last row, placed at its virtual start minus the shift, sits at the bottom of the spacer.
      const lastTop = virtualSize - 30 - rowShift(virtualOffset, ratio);
      expect(lastTop).toBeCloseTo(realSize - 30, 3);
      // The row under the top of the viewport is on screen: its drawn top is near scrollTop.
      const mid = maxScrollTop / 3;
      const vMid = mid * ratio;
      const index = Math.floor(vMid / 30);
      const drawn = index * 30 - rowShift(vMid, ratio);
      expect(drawn).toBeLessThanOrEqual(mid);
      expect(drawn).toBeGreaterThan(mid - 30);
    }
  });
});
