import { expect } from 'vitest';
import { runScenarios, type Scenario } from './helpers/scenarios.ts';
import type { TestService } from './helpers/service.ts';

const TOKEN = 'r:fedcba9876543210fedcba9876543210';

async function seed(t: TestService, className: string, body: Record<string, unknown>): Promise<string> {
  const res = await t.request('POST', `/classes/${className}`, { as: 'master', body });
  if (res.status !== 201) throw new Error(`seed ${className} failed: ${res.status} ${res.text}`);
  return res.json.objectId as string;
}

const ptr = (className: string, objectId: string) => ({ __type: 'Pointer', className, objectId });

type Row = Record<string, any>;
const byTitle = (results: Row[], title: string) => results.find((r) => r.title === title)!;

async function setup(ctx: { t: TestService; vars: Record<string, string> }): Promise<void> {
  const { t, vars: v } = ctx;
  v.user = await seed(t, '_User', { username: 'reader' });
  await seed(t, '_Session', { user: ptr('_User', v.user), sessionToken: TOKEN });
  v.region = await seed(t, 'Region', { name: 'Europe' });
  v.country = await seed(t, 'Country', { name: 'Norway', region: ptr('Region', v.region) });
  v.ann = await seed(t, 'Author', { name: 'ann', bio: 'writes', country: ptr('Country', v.country) });
  v.secret = await seed(t, 'Author', { name: 'secret author', bio: 'classified', ACL: {} });
  v.private = await seed(t, 'Author', {
    name: 'private author',
    ACL: { [v.user]: { read: true } },
  });
  v.gone = await seed(t, 'Author', { name: 'gone' });
  v.p1 = await seed(t, 'Post', {
    title: 'p1',
    author: ptr('Author', v.ann),
    editor: ptr('Author', v.ann),
    meta: { words: 100 },
  });
  v.p2 = await seed(t, 'Post', { title: 'p2', author: ptr('Author', v.secret) });
  v.p3 = await seed(t, 'Post', {
    title: 'p3',
    authors: [ptr('Author', v.ann), ptr('Author', v.secret), 'not a pointer'],
  });
  v.p4 = await seed(t, 'Post', { title: 'p4' });
  v.p5 = await seed(t, 'Post', { title: 'p5', author: ptr('Author', v.gone) });
  v.p6 = await seed(t, 'Post', { title: 'p6', author: ptr('Author', v.private) });
  const del = await t.request('DELETE', `/classes/Author/${v.gone}`, { as: 'master' });
  if (del.status !== 200) throw new Error(del.text);
}

const deep = (n: number) => Array.from({ length: n }, (_, i) => (i === 0 ? 'author' : `f${i}`)).join('.');
const many = (n: number) => Array.from({ length: n }, (_, i) => `f${i}`).join(',');

const scenarios: Scenario[] = [
  {
    name: 'without include a pointer stays a pointer',
    method: 'GET',
    path: '/classes/Post/{p1}',
    status: 200,
    after: async (ctx, res) => {
      expect(res.json.author).toEqual(ptr('Author', ctx.vars.ann!));
    },
  },
  {
    name: 'include turns the pointer into the object (__type Object, className, fields)',
    method: 'GET',
    path: '/classes/Post',
    query: { include: 'author', where: JSON.stringify({ title: 'p1' }) },
    status: 200,
    after: async (ctx, res) => {
      const author = res.json.results[0].author;
      expect(author).toMatchObject({
        __type: 'Object',
        className: 'Author',
        objectId: ctx.vars.ann,
        name: 'ann',
        bio: 'writes',
        country: ptr('Country', ctx.vars.country!),
      });
      expect(author.createdAt).toBeTypeOf('string');
      expect(res.json.results[0].editor).toEqual(ptr('Author', ctx.vars.ann!));
    },
  },
  {
    name: 'include on a single-object GET',
    method: 'GET',
    path: '/classes/Post/{p1}',
    query: { include: 'author' },
    status: 200,
    expect: { author: { __type: 'Object', className: 'Author', name: 'ann' } },
  },
  {
    name: 'include takes a comma list',
    method: 'GET',
    path: '/classes/Post/{p1}',
    query: { include: 'author,editor' },
    status: 200,
    expect: {
      author: { __type: 'Object', name: 'ann' },
      editor: { __type: 'Object', name: 'ann' },
    },
  },
  {
    name: 'include with nested dot paths includes every level',
    method: 'GET',
    path: '/classes/Post/{p1}',
    query: { include: 'author.country.region' },
    status: 200,
    after: async (ctx, res) => {
      expect(res.json.author).toMatchObject({
        __type: 'Object',
        className: 'Author',
        name: 'ann',
        country: {
          __type: 'Object',
          className: 'Country',
          objectId: ctx.vars.country,
          name: 'Norway',
          region: { __type: 'Object', className: 'Region', objectId: ctx.vars.region, name: 'Europe' },
        },
      });
    },
  },
  {
    name: 'include of one level leaves the deeper pointer bare',
    method: 'GET',
    path: '/classes/Post/{p1}',
    query: { include: 'author.country' },
    status: 200,
    after: async (ctx, res) => {
      expect(res.json.author.country.__type).toBe('Object');
      expect(res.json.author.country.region).toEqual(ptr('Region', ctx.vars.region!));
    },
  },
  {
    name: 'include=* includes every top-level pointer field',
    method: 'GET',
    path: '/classes/Post/{p1}',
    query: { include: '*' },
    status: 200,
    after: async (ctx, res) => {
      expect(res.json.author.__type).toBe('Object');
      expect(res.json.editor.__type).toBe('Object');
      // `*` is one level: the author's own pointers stay pointers.
      expect(res.json.author.country).toEqual(ptr('Country', ctx.vars.country!));
    },
  },
  {
    name: 'include=* with a nested path too',
    method: 'GET',
    path: '/classes/Post/{p1}',
    query: { include: '*,author.country' },
    status: 200,
    after: async (_ctx, res) => {
      expect(res.json.editor.__type).toBe('Object');
      expect(res.json.author.country.__type).toBe('Object');
    },
  },
  {
    name: 'an included pointer whose target the caller cannot read stays a bare pointer',
    method: 'GET',
    path: '/classes/Post/{p2}',
    query: { include: 'author' },
    status: 200,
    notContains: ['secret author', 'classified'],
    after: async (ctx, res) => {
      expect(res.json.author).toEqual(ptr('Author', ctx.vars.secret!));
    },
  },
  {
    name: 'the same in a find',
    method: 'GET',
    path: '/classes/Post',
    query: { include: 'author', order: 'title' },
    status: 200,
    notContains: ['secret author', 'classified', 'private author'],
    after: async (ctx, res) => {
      const results = res.json.results as Row[];
      expect(byTitle(results, 'p1').author.__type).toBe('Object');
      expect(byTitle(results, 'p2').author).toEqual(ptr('Author', ctx.vars.secret!));
      expect(byTitle(results, 'p6').author).toEqual(ptr('Author', ctx.vars.private!));
      expect(byTitle(results, 'p4')).not.toHaveProperty('author');
    },
  },
  {
    name: 'the master key gets the hidden target included',
    method: 'GET',
    path: '/classes/Post/{p2}',
    as: 'master',
    query: { include: 'author' },
    status: 200,
    expect: { author: { __type: 'Object', name: 'secret author' } },
  },
  {
    name: "a user named in the target's ACL gets it included",
    method: 'GET',
    path: '/classes/Post/{p6}',
    sessionToken: TOKEN,
    query: { include: 'author' },
    status: 200,
    expect: { author: { __type: 'Object', name: 'private author' } },
  },
  {
    name: 'a pointer to a deleted row stays a pointer',
    method: 'GET',
    path: '/classes/Post/{p5}',
    query: { include: 'author' },
    status: 200,
    after: async (ctx, res) => {
      expect(res.json.author).toEqual(ptr('Author', ctx.vars.gone!));
    },
  },
  {
    name: 'include of an array of pointers includes each readable element, in place',
    method: 'GET',
    path: '/classes/Post/{p3}',
    query: { include: 'authors' },
    status: 200,
    notContains: ['secret author'],
    after: async (ctx, res) => {
      const [first, second, third] = res.json.authors;
      expect(first).toMatchObject({
        __type: 'Object',
        className: 'Author',
        objectId: ctx.vars.ann,
        name: 'ann',
      });
      expect(second).toEqual(ptr('Author', ctx.vars.secret!));
      expect(third).toBe('not a pointer');
    },
  },
  {
    name: 'include with keys narrows the included object to the dotted keys',
    method: 'GET',
    path: '/classes/Post/{p1}',
    query: { include: 'author', keys: 'title,author.name' },
    status: 200,
    after: async (ctx, res) => {
      expect(res.json.title).toBe('p1');
      expect(res.json).not.toHaveProperty('editor');
      expect(res.json.author).toMatchObject({
        __type: 'Object',
        className: 'Author',
        objectId: ctx.vars.ann,
        name: 'ann',
      });
      expect(res.json.author).not.toHaveProperty('bio');
      expect(res.json.author).not.toHaveProperty('country');
    },
  },
  {
    name: 'keys reach through two included levels',
    method: 'GET',
    path: '/classes/Post/{p1}',
    query: { include: 'author.country', keys: 'author.country.name' },
    status: 200,
    after: async (_ctx, res) => {
      expect(res.json).not.toHaveProperty('title');
      expect(res.json.author).not.toHaveProperty('name');
      expect(res.json.author.country).toMatchObject({
        __type: 'Object',
        className: 'Country',
        name: 'Norway',
      });
      expect(res.json.author.country).not.toHaveProperty('region');
    },
  },
  {
    name: 'keys naming only the pointer keeps the whole included object',
    method: 'GET',
    path: '/classes/Post/{p1}',
    query: { include: 'author', keys: 'author' },
    status: 200,
    after: async (_ctx, res) => {
      expect(res.json.author).toMatchObject({ __type: 'Object', name: 'ann', bio: 'writes' });
      expect(res.json).not.toHaveProperty('title');
    },
  },
  {
    name: 'include of a field that is not a pointer is ignored',
    method: 'GET',
    path: '/classes/Post/{p1}',
    query: { include: 'title,meta' },
    status: 200,
    expect: { title: 'p1', meta: { words: 100 } },
  },
  {
    name: 'include of a field the class does not have is ignored',
    method: 'GET',
    path: '/classes/Post/{p1}',
    query: { include: 'nothing.deeper' },
    status: 200,
    expect: { title: 'p1' },
  },
  {
    name: 'include with an invalid path is 105',
    method: 'GET',
    path: '/classes/Post/{p1}',
    query: { include: 'author..name' },
    status: 400,
    code: 105,
    errorContains: 'Invalid include',
  },
  // requestComplexity.
  {
    name: 'includeDepth: a path of 12 levels is over the default of 10',
    method: 'GET',
    path: '/classes/Post',
    query: { include: deep(12) },
    status: 400,
    code: 102,
    errorContains: 'Include depth of 12 exceeds the maximum of 10.',
  },
  {
    name: 'includeDepth: also on a single-object GET',
    method: 'GET',
    path: '/classes/Post/{p1}',
    query: { include: deep(11) },
    status: 400,
    code: 102,
    errorContains: 'Include depth of 11 exceeds the maximum of 10.',
  },
  {
    name: 'includeDepth: 10 levels are fine',
    method: 'GET',
    path: '/classes/Post/{p1}',
    query: { include: deep(10) },
    status: 200,
    expect: { author: { __type: 'Object', name: 'ann' } },
  },
  {
    name: 'includeCount: 101 paths are over the default of 100',
    method: 'GET',
    path: '/classes/Post',
    query: { include: many(101) },
    status: 400,
    code: 102,
    errorContains: 'Include count of 101 exceeds the maximum of 100.',
  },
  {
    name: 'includeCount: 100 paths are fine',
    method: 'GET',
    path: '/classes/Post',
    query: { include: many(100) },
    status: 200,
  },
  {
    name: 'the master key is exempt from includeDepth',
    method: 'GET',
    path: '/classes/Post/{p1}',
    as: 'master',
    query: { include: deep(12) },
    status: 200,
  },
  {
    name: 'the master key is exempt from includeCount',
    method: 'GET',
    path: '/classes/Post',
    as: 'master',
    query: { include: many(150) },
    status: 200,
  },
];

runScenarios('include', scenarios, { setup });

runScenarios(
  'include: requestComplexity -1 removes the caps',
  [
    {
      name: 'includeDepth -1',
      method: 'GET',
      path: '/classes/Post/{p1}',
      query: { include: deep(30) },
      status: 200,
      expect: { author: { __type: 'Object' } },
    },
    {
      name: 'includeCount -1',
      method: 'GET',
      path: '/classes/Post',
      query: { include: many(300) },
      status: 200,
    },
  ],
  { setup, serviceOptions: { requestComplexity: { includeDepth: -1, includeCount: -1 } } },
);

runScenarios(
  'include: lower caps',
  [
    {
      name: 'includeDepth 2 rejects a path of 3',
      method: 'GET',
      path: '/classes/Post/{p1}',
      query: { include: 'author.country.region' },
      status: 400,
      code: 102,
      errorContains: 'Include depth of 3 exceeds the maximum of 2.',
    },
    {
      name: 'includeDepth 2 allows a path of 2',
      method: 'GET',
      path: '/classes/Post/{p1}',
      query: { include: 'author.country' },
      status: 200,
      expect: { author: { country: { __type: 'Object', name: 'Norway' } } },
    },
    {
      name: 'includeCount 1 rejects two paths',
      method: 'GET',
      path: '/classes/Post',
      query: { include: 'author,editor' },
      status: 400,
      code: 102,
      errorContains: 'Include count of 2 exceeds the maximum of 1.',
    },
  ],
  { setup, serviceOptions: { requestComplexity: { includeDepth: 2, includeCount: 1 } } },
);
