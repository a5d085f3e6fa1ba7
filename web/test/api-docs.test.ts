import { describe, expect, it } from 'vitest';
import { prefillOf } from '../src/features/api-console/lib/prefill.ts';
import {
  type ApiDocument,
  classOperations,
  classPath,
  exampleOf,
  tryItSearch,
} from '../src/features/api-docs/lib/operations.ts';

/** A document as GET /openapi.json answers it, cut to what the API tab reads. */
const DOC: ApiDocument = {
  servers: [{ url: 'http://localhost:1337/api' }],
  components: {
    securitySchemes: {
      ApplicationId: { name: 'X-Backend-Application-Id' },
      RestApiKey: { name: 'X-Backend-REST-API-Key' },
    },
  },
  paths: {
    '/classes/Post': {
      get: {
        summary: 'Find Post rows',
        parameters: [{ name: 'where', content: { 'application/json': { example: { title: 'text' } } } }],
      },
    },
    '/classes/Post/{objectId}': {
      put: {
        summary: 'Update a Post row',
        requestBody: { content: { 'application/json': { example: { title: 'text', score: 1 } } } },
      },
      delete: { summary: 'Delete a Post row' },
    },
  },
};

describe("a class's operations from the API document", () => {
  it('lists what the document holds, in the order find, create, get, update, delete', () => {
    expect(classOperations(DOC, 'Post')).toEqual([
      {
        kind: 'find',
        method: 'GET',
        path: '/classes/Post',
        summary: 'Find Post rows',
        where: { title: 'text' },
      },
      {
        kind: 'update',
        method: 'PUT',
        path: '/classes/Post/{objectId}',
        summary: 'Update a Post row',
        body: { title: 'text', score: 1 },
      },
      { kind: 'delete', method: 'DELETE', path: '/classes/Post/{objectId}', summary: 'Delete a Post row' },
    ]);
    expect(classOperations(DOC, 'Other')).toEqual([]);
    expect(classPath('_User')).toBe('/users');
    expect(classPath('Post')).toBe('/classes/Post');
  });

  it('writes the examples with the fields, the row id and placeholder keys', () => {
    const [find, update, remove] = classOperations(DOC, 'Post');
    expect(exampleOf(DOC, 'Post', update!, 'curl', 'abc')).toBe(
      [
        "curl -X PUT 'http://localhost:1337/api/classes/Post/abc' \\",
        '  -H "X-Backend-Application-Id: $APPLICATION_ID" \\',
        '  -H "X-Backend-REST-API-Key: $REST_API_KEY" \\',
        '  -H "Content-Type: application/json" \\',
        `  --data-raw '{"title":"text","score":1}'`,
      ].join('\n'),
    );
    expect(exampleOf(DOC, 'Post', update!, 'typescript', 'abc')).toContain(
      'const res = await client.update("Post", "abc", {"title":"text","score":1});',
    );
    expect(exampleOf(DOC, 'Post', remove!, 'parse', 'abc').split('\n').slice(-2)).toEqual([
      'const row = Parse.Object.fromJSON({ className: "Post", objectId: "abc" });',
      'await row.destroy();',
    ]);
    expect(exampleOf(DOC, 'Post', find!, 'parse', 'abc')).toContain('query.equalTo("title", "text");');
  });

  it('links Try it to the API console, which prefills the call and runs only a GET at once', () => {
    const [find, update] = classOperations(DOC, 'Post');
    const findSearch = tryItSearch(find!, 'abc', 'anonymous');
    expect(prefillOf(new URLSearchParams(findSearch))).toEqual({
      method: 'GET',
      path: '/classes/Post',
      queryText: JSON.stringify({ where: { title: 'text' }, limit: 10 }, null, 2),
      bodyText: '',
      as: 'anonymous',
      run: true,
    });
    const updateSearch = tryItSearch(update!, 'abc', 'master');
    expect(prefillOf(new URLSearchParams(updateSearch))).toEqual({
      method: 'PUT',
      path: '/classes/Post/abc',
      queryText: '',
      bodyText: JSON.stringify({ title: 'text', score: 1 }, null, 2),
      as: 'master',
      run: false,
    });
    // A GET as a user waits for the user to be picked; a forged run=1 on a write is not run.
    expect(prefillOf(new URLSearchParams(tryItSearch(find!, 'abc', 'user'))).run).toBe(false);
    expect(prefillOf(new URLSearchParams('method=DELETE&path=/classes/Post/abc&run=1')).run).toBe(false);
    // Only reads of rows run at once: not a login (it makes a session), nor any other route.
    expect(prefillOf(new URLSearchParams('path=/classes/Post/abc&run=1')).run).toBe(true);
    expect(
      prefillOf(new URLSearchParams('path=/login&query={"username":"a","password":"b"}&run=1')).run,
    ).toBe(false);
    expect(prefillOf(new URLSearchParams('path=/users/me&run=1')).run).toBe(true);
    expect(prefillOf(new URLSearchParams('path=/sessions&run=1')).run).toBe(false);
    expect(prefillOf(new URLSearchParams('method=PATCH&as=root'))).toEqual({
      method: 'GET',
      path: '/classes/',
      queryText: '',
      bodyText: '',
      as: 'master',
      run: false,
    });
  });
});
