import { describe, expect, it } from 'vitest';
import { safeEqual } from '../src/kernel/ids.ts';

describe('safeEqual (key comparison)', () => {
  const key = 'bench-master-key-0123456789';

  it('accepts only the same string', () => {
    expect(safeEqual(key, key)).toBe(true);
    expect(safeEqual(`${key}`.slice(0), key)).toBe(true);
    expect(safeEqual('bench-master-key-0123456788', key)).toBe(false);
    expect(safeEqual('', key)).toBe(false);
    expect(safeEqual(key, '')).toBe(false);
    expect(safeEqual('', '')).toBe(true);
  });

  it('refuses a prefix, an extension and trailing NUL bytes (the padding)', () => {
    expect(safeEqual(key.slice(0, -1), key)).toBe(false);
    expect(safeEqual(`${key}x`, key)).toBe(false);
    expect(safeEqual(`${key}\u0000`, key)).toBe(false);
    expect(safeEqual(`${key}\u0000\u0000\u0000`, key)).toBe(false);
  });

  it('refuses a given key longer than the block whose first bytes are the key', () => {
    const long = key + 'z'.repeat(300);
    expect(safeEqual(long, key)).toBe(false);
    expect(safeEqual(long, long.slice(0, 256))).toBe(false);
  });

  it('compares configured keys longer than the block', () => {
    const long = 'k'.repeat(400);
    expect(safeEqual(long, long)).toBe(true);
    expect(safeEqual(`${'k'.repeat(399)}j`, long)).toBe(false);
    expect(safeEqual(long.slice(0, 256), long)).toBe(false);
  });

  it('compares non-ASCII keys by their characters, lone surrogates included', () => {
    expect(safeEqual('clé-ünïcode-✓', 'clé-ünïcode-✓')).toBe(true);
    expect(safeEqual('cle-ünïcode-✓', 'clé-ünïcode-✓')).toBe(false);
    // Both encode as the same three bytes (U+FFFD); they are different strings.
    expect(safeEqual('\uD800', '\uDBFF')).toBe(false);
  });

  it('refuses what is not a string', () => {
    expect(safeEqual(undefined, key)).toBe(false);
    expect(safeEqual(null, key)).toBe(false);
    expect(safeEqual(key, undefined)).toBe(false);
  });
});
