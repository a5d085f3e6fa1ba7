import { RE2JS } from 're2js';

/**
 * The one place a `$regex` is compiled and run: the parser checks patterns here, and both the
 * SQLite function `bds_regexp` and the in-memory matcher run them through `regexTester` (one
 * cache, one flag handling). The engine is RE2 (re2js, pure JavaScript): matching takes time
 * linear in the input whatever the pattern, so no pattern from any caller can stall the service.
 * RE2 has no backreferences or lookaround; such a pattern is a 102.
 */

/** A pattern as the engine runs it: `x` already applied, `flags` holding only i, m and s. */
export interface RegexSpec {
  source: string;
  flags: string;
}

/** Longest `$regex`, after `x` is applied, for every caller. */
export const MAX_REGEX_LENGTH = 1000;
/** Largest compiled program (RE2's measure of a pattern's cost: `a{1000}` is large, `a+` small). */
export const MAX_REGEX_PROGRAM = 5000;

const FLAGS: Record<string, number> = {
  i: RE2JS.CASE_INSENSITIVE,
  m: RE2JS.MULTILINE,
  s: RE2JS.DOTALL,
};

function engineFlags(flags: string): number {
  let out = 0;
  for (const f of flags) out |= FLAGS[f] ?? 0;
  return out;
}

/**
 * `$regex` with its `$options` (letters i, m, s, x; checked by the parser) -> what the engine runs.
 * `x` is applied here (whitespace outside classes and `#` comments dropped); i, m and s stay
 * flags. Throws an Error with the engine's text for a pattern it cannot compile, or one over the
 * size bounds.
 */
export function prepareRegex(pattern: string, options: string): RegexSpec {
  const source = options.includes('x') ? stripExtendedSyntax(pattern) : pattern;
  const flags = [...new Set(options.replace(/x/g, ''))].join('');
  if (source.length > MAX_REGEX_LENGTH) {
    throw new RegexTooLarge(`longer than ${MAX_REGEX_LENGTH} characters`);
  }
  const compiledPattern = compiled(source, flags);
  if (compiledPattern.programSize() > MAX_REGEX_PROGRAM) {
    throw new RegexTooLarge(`its compiled program exceeds ${MAX_REGEX_PROGRAM} instructions`);
  }
  return { source, flags };
}

/** A pattern over the size bounds (the parser answers it with its own 102 text). */
export class RegexTooLarge extends Error {}

const MAX_CACHED = 500;
const cache = new Map<string, RE2JS>();

function compiled(source: string, flags: string): RE2JS {
  const key = `${flags}/${source}`;
  let re = cache.get(key);
  if (!re) {
    re = RE2JS.compile(source, engineFlags(flags));
    if (cache.size >= MAX_CACHED) cache.clear();
    cache.set(key, re);
  }
  return re;
}

/** Does `value` match (anywhere in it)? Anything but a string never matches. */
export function regexTest(source: string, flags: string, value: unknown): boolean {
  return typeof value === 'string' && compiled(source, flags).test(value);
}

/** `regexTest` with the pattern compiled once, for a caller that tests many values. */
export function regexTester(source: string, flags: string): (value: unknown) => boolean {
  const re = compiled(source, flags);
  return (value) => typeof value === 'string' && re.test(value);
}

/** The `x` flag: whitespace outside character classes is ignored and `#` starts a comment. */
function stripExtendedSyntax(pattern: string): string {
  let out = '';
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\' && i + 1 < pattern.length) {
      out += c + pattern[i + 1];
      i++;
    } else if (inClass) {
      if (c === ']') inClass = false;
      out += c;
    } else if (c === '[') {
      inClass = true;
      out += c;
    } else if (c === '#') {
      while (i < pattern.length && pattern[i] !== '\n') i++;
    } else if (!/\s/.test(c)) {
      out += c;
    }
  }
  return out;
}
