/** "1 row", "0 rows", "12,345 rows": a count and its noun, singular only for exactly one. */
export function countText(n: number, noun: string, plural = `${noun}s`): string {
  return `${n.toLocaleString()} ${n === 1 ? noun : plural}`;
}
