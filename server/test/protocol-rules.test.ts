import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as protocol from '@bds/client/protocol';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * Every protocol rule lives once, in client/src/protocol/ (names and their lengths, the patterns
 * of ids, dates and base64, the error codes of REST and of realtime frames with their texts), and
 * every package imports it. This test reads the source of the service, the client library, the
 * bff and the console, and fails on a package's own copy of a rule:
 * - a regular expression equal to one the protocol exports, or equal but for its lengths (a copy
 *   that drifted: 128 where the rule says 120);
 * - a declaration under a name the protocol exports, or under a name that held a copy before;
 * - a table of error codes (an object of two or more protocol codes), or a constant named like a
 *   code of the protocol's tables;
 * - a protocol error code written as a number where a `code` is compared or given.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SOURCE_DIRS = ['server/src', 'client/src', 'bff/src', 'web/src'];
const PROTOCOL_DIR = 'client/src/protocol/';
const NOT_SOURCE = new Set(['node_modules', 'dist']);

/**
 * Names under which packages kept their own copies before the rules moved to the protocol (the
 * generic ones, such as ISO_DATE or BASE64, are left to the pattern check: other rules use them).
 */
const FORMER_COPIES = [
  'BffCode',
  'Code',
  'LiveCode',
  'LiveText',
  'RESUME_WINDOW_EXCEEDED',
  'EVENT_NAME',
  'CHOSEN_OBJECT_ID',
  'OBJECT_ID',
  'FUNCTION_NAME',
  'PROVIDER_NAME',
  'ROLE_NAME_PATTERN',
  'CLASS_NAME_PATTERN',
  'FIELD_NAME_PATTERN',
  'SUB_KEY_PATTERN',
  'MAX_CLASS_NAME',
  'MAX_FIELD_NAME',
];

/**
 * Regular expressions that read like a protocol rule but are another rule, each with why. A
 * pattern listed here is not a copy; anything else equal to a rule is.
 */
const NOT_COPIES: Array<{ file: string; source: string; why: string }> = [
  {
    file: 'bff/src/options.ts',
    source: '^[A-Za-z0-9_-]{1,64}$',
    why: "the console's own id of an app it serves (its config file), not an objectId",
  },
  {
    file: 'server/src/storage/sql/store-part.ts',
    source: '^[A-Za-z_][A-Za-z0-9_]*$',
    why: 'a column name the store itself writes into SQL (an identifier the service fixes), not a name a caller sends',
  },
];

/** The protocol's patterns: every RegExp it exports, by name. */
const EXPORTS: Array<[string, unknown]> = Object.entries(protocol);
const RULE_PATTERNS = EXPORTS.filter((entry): entry is [string, RegExp] => entry[1] instanceof RegExp);

/** The protocol's tables of codes: REST error codes and the realtime frames' codes. */
const CODE_TABLES = EXPORTS.filter(
  (entry): entry is [string, Record<string, number>] =>
    typeof entry[1] === 'object' &&
    entry[1] !== null &&
    !Array.isArray(entry[1]) &&
    Object.values(entry[1] as object).length > 0 &&
    Object.values(entry[1] as object).every((v) => typeof v === 'number'),
);
const CODES = new Set(CODE_TABLES.flatMap(([, table]) => Object.values(table)));
const CODE_NAMES = new Set(CODE_TABLES.flatMap(([, table]) => Object.keys(table)));
const PROTOCOL_NAMES = new Set(Object.keys(protocol));

/**
 * A pattern with every length written the same way (`{0,119}`, `{0,127}`, `*` and `+` compare
 * equal) and a leading `_` allowed either way (`^_?[A-Za-z]`, `^[A-Za-z_]`): a copy that drifted.
 */
const shapeOf = (source: string) =>
  source.replace(/\{\d*,?\d*\}|(?<!\\)[*+]/g, '{n}').replace(/^\^\[A-Za-z_\]/, '^_?[A-Za-z]');

/** The alternatives of a pattern (`^a$|^b$`), split at its top level only. */
function alternativesOf(source: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let inClass = false;
  let start = 0;
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (c === '\\') i++;
    else if (inClass) inClass = c !== ']';
    else if (c === '[') inClass = true;
    else if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === '|' && depth === 0) {
      out.push(source.slice(start, i));
      start = i + 1;
    }
  }
  out.push(source.slice(start));
  return out;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(path.join(ROOT, dir))) {
    if (NOT_SOURCE.has(name)) continue;
    const relative = `${dir}/${name}`;
    if (statSync(path.join(ROOT, relative)).isDirectory()) out.push(...sourceFiles(relative));
    else if (/\.tsx?$/.test(name) && !/\.test\.tsx?$/.test(name)) out.push(relative);
  }
  return out;
}

/** Numbers an expression may evaluate to, read through `?:`, `??`, `||` and parentheses. */
function numbersOf(node: ts.Expression): number[] {
  if (ts.isNumericLiteral(node)) return [Number(node.text.replace(/_/g, ''))];
  if (ts.isParenthesizedExpression(node)) return numbersOf(node.expression);
  if (ts.isConditionalExpression(node)) return [...numbersOf(node.whenTrue), ...numbersOf(node.whenFalse)];
  if (
    ts.isBinaryExpression(node) &&
    (node.operatorToken.kind === ts.SyntaxKind.QuestionQuestionToken ||
      node.operatorToken.kind === ts.SyntaxKind.BarBarToken)
  ) {
    return [...numbersOf(node.left), ...numbersOf(node.right)];
  }
  return [];
}

/** Whether an expression names a code: `code`, `x.code`, `x?.code`. */
function namesCode(node: ts.Expression): boolean {
  if (ts.isIdentifier(node)) return node.text === 'code';
  if (ts.isPropertyAccessExpression(node)) return node.name.text === 'code';
  return false;
}

/** A declaration of the module itself (not a local of a function): what another module could import instead. */
function isModuleLevel(node: ts.Node): boolean {
  const statement = ts.isVariableDeclaration(node) ? node.parent.parent : node;
  return statement.parent !== undefined && ts.isSourceFile(statement.parent);
}

const COMPARISONS = new Set([
  ts.SyntaxKind.EqualsEqualsEqualsToken,
  ts.SyntaxKind.ExclamationEqualsEqualsToken,
  ts.SyntaxKind.EqualsEqualsToken,
  ts.SyntaxKind.ExclamationEqualsToken,
  ts.SyntaxKind.QuestionQuestionToken,
]);

/** The copies of protocol rules in one file's text: `<file>:<line>: <what>`. */
export function copiesIn(file: string, text: string): string[] {
  if (file.startsWith(PROTOCOL_DIR)) return [];
  const kind = file.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, kind);
  const found: string[] = [];
  const report = (node: ts.Node, what: string) => {
    const line = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
    found.push(`${file}:${line}: ${what}`);
  };

  const checkPattern = (node: ts.Node, whole: string) => {
    if (NOT_COPIES.some((n) => n.file === file && n.source === whole)) return;
    for (const source of alternativesOf(whole)) checkAlternative(node, source);
  };

  const checkAlternative = (node: ts.Node, source: string) => {
    const equal = RULE_PATTERNS.filter(([, rule]) => rule.source === source).map(([name]) => name);
    if (equal.length) return report(node, `/${source}/ is a copy of the protocol's ${equal.join(' or ')}`);
    const drifted = RULE_PATTERNS.find(([, rule]) => shapeOf(rule.source) === shapeOf(source));
    if (drifted) {
      report(node, `/${source}/ is a drifted copy of the protocol's ${drifted[0]} (/${drifted[1].source}/)`);
    }
  };

  const checkCodeTable = (node: ts.ObjectLiteralExpression) => {
    const values: number[] = [];
    for (const property of node.properties) {
      if (!ts.isPropertyAssignment(property) || !ts.isNumericLiteral(property.initializer)) return;
      values.push(Number(property.initializer.text));
    }
    if (values.length >= 2 && values.every((v) => CODES.has(v)) && values.some((v) => v >= 100)) {
      report(
        node,
        `a table of protocol codes (${values.join(', ')}): use the protocol's ErrorCode or LiveCode`,
      );
    }
  };

  /** `floor`: a variable named `code` may hold a process's exit code (0-2), so it counts from 100. */
  const checkCodeNumber = (node: ts.Node, value: ts.Expression, floor = 0) => {
    for (const n of numbersOf(value)) {
      if (CODES.has(n) && n >= floor)
        report(node, `the protocol code ${n} written as a number: name it from the protocol's table`);
    }
  };

  const checkDeclaration = (node: ts.Declaration, name: string) => {
    if (ts.isVariableDeclaration(node) && name === 'code' && node.initializer) {
      checkCodeNumber(node, node.initializer, 100);
    }
    if (!isModuleLevel(node)) return;
    if (PROTOCOL_NAMES.has(name)) report(node, `${name} is declared again: import it from the protocol`);
    else if (FORMER_COPIES.includes(name)) report(node, `${name} held a copy of a protocol rule`);
    else if (
      CODE_NAMES.has(name) &&
      ts.isVariableDeclaration(node) &&
      node.initializer &&
      ts.isNumericLiteral(node.initializer)
    ) {
      report(node, `${name} is a protocol code kept as a constant of its own`);
    }
  };

  const visit = (node: ts.Node): void => {
    if (ts.isRegularExpressionLiteral(node)) {
      checkPattern(node, node.text.slice(1, node.text.lastIndexOf('/')));
    } else if (
      ts.isNewExpression(node) &&
      ts.isIdentifier(node.expression) &&
      node.expression.text === 'RegExp' &&
      node.arguments?.[0] &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      checkPattern(node, node.arguments[0].text);
    } else if (
      (ts.isVariableDeclaration(node) ||
        ts.isFunctionDeclaration(node) ||
        ts.isClassDeclaration(node) ||
        ts.isEnumDeclaration(node)) &&
      node.name &&
      ts.isIdentifier(node.name)
    ) {
      checkDeclaration(node, node.name.text);
    } else if (ts.isObjectLiteralExpression(node)) {
      checkCodeTable(node);
    } else if (ts.isPropertyAssignment(node) && ts.isIdentifier(node.name) && node.name.text === 'code') {
      checkCodeNumber(node, node.initializer);
    } else if (ts.isBinaryExpression(node) && COMPARISONS.has(node.operatorToken.kind)) {
      if (namesCode(node.left)) checkCodeNumber(node, node.right);
      else if (namesCode(node.right)) checkCodeNumber(node, node.left);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return [...new Set(found)];
}

describe('one source for every protocol rule', () => {
  it('the protocol exports the rules this test compares against', () => {
    expect(RULE_PATTERNS.length).toBeGreaterThan(0);
    expect(CODES.has(101)).toBe(true);
  });

  it('no package of the service, the client, the bff or the console keeps its own copy', () => {
    const found = SOURCE_DIRS.flatMap(sourceFiles).flatMap((file) =>
      copiesIn(file, readFileSync(path.join(ROOT, file), 'utf8')),
    );
    expect(found).toEqual([]);
  });
});
