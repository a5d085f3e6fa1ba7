import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { optionsSchema } from '../src/config/options.ts';
import { startService, type TestService } from './helpers/service.ts';

/**
 * The contract lives in the repository (docs/protocol.md) and the documentation holds together:
 * no file cites the product documents kept outside it, every link of the Markdown pages and every
 * `docs/<page>.md#<anchor>` a file names leads somewhere, and the protocol reference lists every
 * route of the service and every option.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PROTOCOL_PAGE = 'docs/protocol.md';

/** Where code lives (tests and tools included); searched for files ending in CODE_FILE. */
const CODE_DIRS = [
  'server/src',
  'server/test',
  'client/src',
  'client/test',
  'bff/src',
  'bff/test',
  'web/src',
  'web/test',
  'e2e',
  'bench',
  'scripts',
];
const CODE_FILE = /\.(?:ts|tsx|js|mjs|cjs)$/;
/** Folders that hold no source of ours: dependencies, builds, test and bench output. */
const NOT_SOURCE = new Set(['node_modules', 'dist', 'output', 'reports', 'coverage']);

/**
 * A citation of the product documents that are not in the repository (PROTOCOL.md, SPEC.md, "the
 * SPEC"): a reader of the code cannot follow it. Cite docs/protocol.md by anchor instead.
 */
const OUTSIDE_CITATION = /\b(?:PROTOCOL|SPEC)(?:\.md)?\b/;
/** This file names the citation it forbids. */
const SELF = 'server/test/docs.test.ts';

/** A page and anchor named in code: `docs/protocol.md#realtime-frames`. */
const DOC_REFERENCE = /\bdocs\/[\w./-]+?\.md(?:#[\w-]+)?/g;

function filesUnder(dir: string, keep: (name: string) => boolean): string[] {
  const out: string[] = [];
  let entries: string[];
  try {
    entries = readdirSync(path.join(ROOT, dir));
  } catch {
    return out;
  }
  for (const name of entries) {
    if (NOT_SOURCE.has(name)) continue;
    const relative = `${dir}/${name}`;
    if (statSync(path.join(ROOT, relative)).isDirectory()) out.push(...filesUnder(relative, keep));
    else if (keep(name)) out.push(relative);
  }
  return out;
}

const read = (relative: string) => readFileSync(path.join(ROOT, relative), 'utf8');

function codeFiles(): string[] {
  const top = readdirSync(ROOT).filter(
    (name) => CODE_FILE.test(name) && !statSync(path.join(ROOT, name)).isDirectory(),
  );
  return [...top, ...CODE_DIRS.flatMap((dir) => filesUnder(dir, (name) => CODE_FILE.test(name)))];
}

function markdownFiles(): string[] {
  const readmes = readdirSync(ROOT)
    .filter((name) => !NOT_SOURCE.has(name))
    .flatMap((name) => (name === 'README.md' ? [name] : [`${name}/README.md`]))
    .filter((file) => {
      try {
        return statSync(path.join(ROOT, file)).isFile();
      } catch {
        return false;
      }
    });
  return [...readmes, ...filesUnder('docs', (name) => name.endsWith('.md'))];
}

/** Markdown without fenced blocks and code spans, where a bracket is text and not a link. */
function proseOf(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '');
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function slugOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/`/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of a page: its headings' slugs, a repeated one numbered as GitHub numbers it. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const withoutFences = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const match of withoutFences.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const slug = slugOf(match[1]!);
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** What is wrong with a target (`page.md#anchor`, a file, `#anchor`) seen from `from`; undefined if nothing. */
function brokenTarget(from: string, target: string): string | undefined {
  const hash = target.indexOf('#');
  const file = hash < 0 ? target : target.slice(0, hash);
  const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
  const resolved = file === '' ? from : path.posix.normalize(path.posix.join(path.posix.dirname(from), file));
  let text: string | undefined;
  try {
    if (statSync(path.join(ROOT, resolved)).isDirectory())
      return anchor ? `${resolved} is a folder` : undefined;
    text = resolved.endsWith('.md') ? read(resolved) : undefined;
  } catch {
    return `${resolved} does not exist`;
  }
  if (anchor === undefined || anchor === '') return undefined;
  if (text === undefined) return `${resolved} is not a Markdown page, it has no anchors`;
  return anchorsOf(text).has(anchor) ? undefined : `${resolved} has no heading with the anchor #${anchor}`;
}

describe('the contract is cited inside the repository', () => {
  it('no code, test or page cites PROTOCOL.md or the SPEC (they are not in the repository)', () => {
    const found: string[] = [];
    for (const file of [...codeFiles(), ...markdownFiles()]) {
      if (file === SELF) continue;
      read(file)
        .split('\n')
        .forEach((line, i) => {
          if (OUTSIDE_CITATION.test(line)) found.push(`${file}:${i + 1}: ${line.trim()}`);
        });
    }
    expect(found, 'cite docs/protocol.md#<anchor> instead').toEqual([]);
  });

  it('every docs/<page>.md#<anchor> a file names exists', () => {
    const broken: string[] = [];
    for (const file of codeFiles()) {
      for (const match of read(file).matchAll(DOC_REFERENCE)) {
        const problem = brokenTarget('', match[0]);
        if (problem) broken.push(`${file}: ${match[0]}: ${problem}`);
      }
    }
    expect(broken).toEqual([]);
  });
});

describe('the Markdown pages link to what exists', () => {
  it('every relative link and anchor of README.md, the package READMEs and docs/ resolves', () => {
    const pages = markdownFiles();
    expect(pages).toContain(PROTOCOL_PAGE);
    const broken: string[] = [];
    for (const file of pages) {
      for (const match of proseOf(read(file)).matchAll(
        /!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g,
      )) {
        const target = match[1]!;
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
        const problem = brokenTarget(file, target);
        if (problem) broken.push(`${file}: ${target}: ${problem}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('the anchors are worked out as GitHub does', () => {
    expect([...anchorsOf("# A\n## An event's path\n## `GET /x` (master)\n## Errors\n## Errors\n")]).toEqual([
      'a',
      'an-events-path',
      'get-x-master',
      'errors',
      'errors-1',
    ]);
    expect(anchorsOf('```md\n# not a heading\n```\n').size).toBe(0);
  });
});

describe('the protocol reference covers the service', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('lists every route of the router, as `METHOD /path/<param>`', () => {
    const reference = read(PROTOCOL_PAGE);
    const missing = t.service
      .routes()
      .map(
        ({ method, pattern }) =>
          `${method} ${pattern.replace(/:(\w+)/g, (_, name: string) => `<${paramName(name)}>`)}`,
      )
      .filter((route) => !reference.includes(`\`${route}\``));
    expect([...new Set(missing)]).toEqual([]);
  });

  it('names every option', () => {
    const reference = read(PROTOCOL_PAGE);
    const missing = Object.keys(optionsSchema.shape).filter((name) => !reference.includes(`\`${name}\``));
    expect(missing).toEqual([]);
  });
});

/** How the reference writes a route's parameter: `<Class>`, `<id>`, `<trigger>`, else `<name>`. */
function paramName(name: string): string {
  if (name === 'className') return 'Class';
  if (name === 'objectId') return 'id';
  if (name === 'triggerName') return 'trigger';
  return 'name';
}
