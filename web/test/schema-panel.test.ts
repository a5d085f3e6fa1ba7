import { describe, expect, it } from 'vitest';
import { fieldOptions } from '../src/features/data-browser/components/schema-panel.tsx';

describe("the schema editor's required and default", () => {
  it('sends required only when checked, and no default when empty', () => {
    expect(fieldOptions('Number', false, '')).toEqual({});
    expect(fieldOptions('Number', true, '')).toEqual({ required: true });
  });
  it('takes a String default as typed and any other as JSON', () => {
    expect(fieldOptions('String', false, '10')).toEqual({ defaultValue: '10' });
    expect(fieldOptions('Number', true, '10')).toEqual({ required: true, defaultValue: 10 });
    expect(fieldOptions('Object', false, '{"a": 1}')).toEqual({ defaultValue: { a: 1 } });
    expect(fieldOptions('Boolean', false, 'false')).toEqual({ defaultValue: false });
  });
  it('sends text that is no JSON as it is, for the service to refuse', () => {
    expect(fieldOptions('Number', false, 'ten')).toEqual({ defaultValue: 'ten' });
  });
});
