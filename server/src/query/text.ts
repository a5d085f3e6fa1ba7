import { isObject } from '@bds/client/protocol';
import { BdsError, ErrorCode } from '../kernel/errors.ts';
import type { TextSearch } from '../kernel/query.ts';

/**
 * The one rule of `$text` full-text search, as the stock SDKs expect it from the incumbent on
 * MongoDB (its `fullText`): a String field matches when one of its words is one of the search's
 * words, and its score is MongoDB's: for each search word the field holds `c` times among its `n`
 * words (stop words left out), `(2 - 2^(1-c)) * (0.5 * c / n + 0.5)`, summed. Words are runs of
 * letters and digits; by default they compare without case and without diacritics (combining marks
 * U+0300..U+036F after canonical decomposition), unless `$caseSensitive` / `$diacriticSensitive`.
 * The language picks the stop words (English's below; `none` and the other languages have none).
 * There is no stemming: `bake` does not find `baking` (docs/queries.md says why).
 *
 * The same arithmetic runs in three places: here (the in-memory matcher and SQLite's
 * `bds_text_score`) and in PL/pgSQL (`bds_text_score` of storage/postgres/functions.ts), so both
 * stores answer the same rows, in the same order of score.
 */

/**
 * The languages `$language` may name (MongoDB's names and their ISO 639-1 codes, as the SDKs pass
 * them through); any other answers 107.
 */
export const TEXT_LANGUAGES: Readonly<Record<string, string>> = {
  none: 'none',
  da: 'danish',
  danish: 'danish',
  nl: 'dutch',
  dutch: 'dutch',
  en: 'english',
  english: 'english',
  fi: 'finnish',
  finnish: 'finnish',
  fr: 'french',
  french: 'french',
  de: 'german',
  german: 'german',
  hu: 'hungarian',
  hungarian: 'hungarian',
  it: 'italian',
  italian: 'italian',
  nb: 'norwegian',
  norwegian: 'norwegian',
  pt: 'portuguese',
  portuguese: 'portuguese',
  ro: 'romanian',
  romanian: 'romanian',
  ru: 'russian',
  russian: 'russian',
  es: 'spanish',
  spanish: 'spanish',
  sv: 'swedish',
  swedish: 'swedish',
  tr: 'turkish',
  turkish: 'turkish',
};

/** English function words that carry no meaning for a search (left out of words and scores). */
export const ENGLISH_STOP_WORDS: readonly string[] = [
  'a',
  'an',
  'and',
  'are',
  'as',
  'at',
  'be',
  'but',
  'by',
  'for',
  'if',
  'in',
  'into',
  'is',
  'it',
  'no',
  'not',
  'of',
  'on',
  'or',
  'such',
  'that',
  'the',
  'their',
  'then',
  'there',
  'these',
  'they',
  'this',
  'to',
  'was',
  'will',
  'with',
];

const ENGLISH_STOP = new Set(ENGLISH_STOP_WORDS);

/** The stop words of a language (as TEXT_LANGUAGES names it). */
export function stopWordsOf(language: string): readonly string[] {
  return language === 'english' ? ENGLISH_STOP_WORDS : [];
}

/** The `$text` errors: 107 (INVALID_JSON), as the incumbent answers every malformed `$text`. */
const badText = (message: string) => new BdsError(ErrorCode.INVALID_JSON, `bad $text: ${message}`);

/** Parses `{$search: {$term, $language?, $caseSensitive?, $diacriticSensitive?}}`. */
export function parseTextSearch(operand: unknown): TextSearch {
  if (!isObject(operand) || !isObject(operand.$search)) throw badText('$search, should be object');
  const search = operand.$search;
  for (const key of Object.keys(operand)) {
    if (key !== '$search') throw badText(`unknown option ${key}`);
  }
  for (const key of Object.keys(search)) {
    if (!['$term', '$language', '$caseSensitive', '$diacriticSensitive'].includes(key)) {
      throw badText(`unknown option ${key} in $search`);
    }
  }
  if (typeof search.$term !== 'string' || search.$term === '') throw badText('$term, should be string');
  let language = 'english';
  if (search.$language !== undefined) {
    if (typeof search.$language !== 'string') throw badText('$language, should be string');
    const known = TEXT_LANGUAGES[search.$language.toLowerCase()];
    if (!known || !Object.hasOwn(TEXT_LANGUAGES, search.$language.toLowerCase())) {
      throw badText(`$language ${JSON.stringify(search.$language)} is not supported`);
    }
    language = known;
  }
  const flag = (name: '$caseSensitive' | '$diacriticSensitive') => {
    const value = search[name];
    if (value !== undefined && typeof value !== 'boolean') throw badText(`${name}, should be boolean`);
    return value === true;
  };
  const caseSensitive = flag('$caseSensitive');
  const diacriticSensitive = flag('$diacriticSensitive');
  const spec = { language, caseSensitive, diacriticSensitive };
  const terms = [...new Set(wordsOf(search.$term, spec))];
  return { terms, ...spec };
}

type WordRule = Pick<TextSearch, 'language' | 'caseSensitive' | 'diacriticSensitive'>;

/** Runs of letters and digits; anything else separates words. */
const WORD_SEPARATORS = /[^\p{L}\p{N}]+/u;
const COMBINING_MARKS = /[\u0300-\u036f]/g;

/** The words of a text as the search compares them (case and diacritics folded unless told, stop words out). */
export function wordsOf(text: string, rule: WordRule): string[] {
  let folded = text;
  if (!rule.diacriticSensitive) folded = folded.normalize('NFD').replace(COMBINING_MARKS, '');
  // Character by character, as PostgreSQL's lower() does (no final sigma).
  if (!rule.caseSensitive) folded = Array.from(folded, (c) => c.toLowerCase()).join('');
  const stop = rule.language === 'english' ? ENGLISH_STOP : undefined;
  return folded
    .split(WORD_SEPARATORS)
    .filter((w) => w !== '' && !stop?.has(rule.caseSensitive ? w.toLowerCase() : w));
}

/** The order key and `keys` entry of a find that name a `$text`'s score (answered as `score`). */
export const TEXT_SCORE_KEY = '$score';

/** A search as the SQL functions take it (JSON text): with its stop words, for PostgreSQL. */
export function textSpecJson(search: TextSearch): string {
  return JSON.stringify({ ...search, stop: stopWordsOf(search.language) });
}

/** The score of a stored value for a search: 0 when it matches nothing (or is no string). */
export function textScore(value: unknown, search: TextSearch): number {
  if (typeof value !== 'string' || search.terms.length === 0) return 0;
  const words = wordsOf(value, search);
  if (words.length === 0) return 0;
  const counts = new Map<string, number>();
  for (const w of words) counts.set(w, (counts.get(w) ?? 0) + 1);
  let score = 0;
  for (const term of search.terms) {
    const c = counts.get(term);
    if (!c) continue;
    score += (2 - 2 ** (1 - c)) * ((0.5 * c) / words.length + 0.5);
  }
  return score;
}
