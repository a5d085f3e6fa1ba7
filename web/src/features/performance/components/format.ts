import type { IndexKey } from '@bds/client/protocol';

/** A time in ms as the page shows it: two decimals under 10 ms, one under a second, else seconds. */
export function msText(ms: number): string {
  if (ms < 10) return `${ms.toFixed(2)} ms`;
  if (ms < 1000) return `${ms.toFixed(1)} ms`;
  return `${(ms / 1000).toFixed(2)} s`;
}

/** An index's keys: `player, score ↓`. */
export const keysText = (keys: IndexKey[]): string =>
  keys.map((k) => (k.descending ? `${k.field} ↓` : k.field)).join(', ');
