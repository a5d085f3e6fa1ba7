import { createElement, type ReactNode } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { QueryState, type QueryStateProps } from '../src/components/query-state.tsx';
import { ApiError, errorText } from '../src/lib/api.ts';

type Rows = { results: string[] };
const pending = { isPending: true, isError: false, error: null, data: undefined };
const failed = (error: Error) => ({ isPending: false, isError: true, error, data: undefined });
const answered = (data: Rows) => ({ isPending: false, isError: false, error: null, data });

const render = (
  props: Omit<QueryStateProps<Rows>, 'children'>,
  children = (d: Rows): ReactNode => d.results.join(','),
) => renderToStaticMarkup(createElement(QueryState<Rows>, { ...props, children }));
const text = (html: string) => html.replace(/<[^>]+>/g, '');

describe('the query state (pending, error, empty, answered)', () => {
  it('says what it is loading while the query runs', () => {
    const html = render({ query: pending, loading: 'Loading rows…', failed: 'Could not load the rows' });
    expect(html).toContain('role="status"');
    expect(text(html)).toBe('Loading rows…');
  });

  it("says what failed and the error's message, as an alert", () => {
    const html = render({
      query: failed(new Error('boom')),
      loading: 'Loading rows…',
      failed: 'Could not load the rows',
    });
    expect(html).toBe('<p role="alert" class="text-sm text-red-600">Could not load the rows: boom</p>');
  });

  it('says the error alone without a lead, in the words asked for, with a test id when given', () => {
    const refused = new ApiError(400, 119, 'Permission denied');
    expect(text(render({ query: failed(refused), loading: '…' }))).toBe('Permission denied (code 119)');
    const html = render({
      query: failed(refused),
      loading: '…',
      failed: 'Could not compute the impact',
      errorText,
      errorTestId: 'impact-error',
    });
    expect(html).toContain('data-testid="impact-error"');
    expect(text(html)).toBe('Could not compute the impact: Error 119: Permission denied');
  });

  it('says both in plain lines inside a dialog or a small panel', () => {
    const props = { loading: 'Loading members…', failed: 'Could not load the members', inline: true };
    expect(render({ ...props, query: pending })).toBe('<p>Loading members…</p>');
    expect(render({ ...props, query: failed(new Error('boom')) })).toBe(
      '<p role="alert" class="text-red-600">Could not load the members: boom</p>',
    );
  });

  it('shows the empty state when the answer is empty, else the answer', () => {
    const props = {
      loading: '…',
      failed: 'x',
      isEmpty: (d: Rows) => d.results.length === 0,
      empty: createElement('p', null, 'Nothing yet.'),
    };
    expect(render({ ...props, query: answered({ results: [] }) })).toBe('<p>Nothing yet.</p>');
    expect(render({ ...props, query: answered({ results: ['a', 'b'] }) })).toBe('a,b');
    expect(render({ query: answered({ results: [] }), loading: '…' })).toBe('');
  });
});
