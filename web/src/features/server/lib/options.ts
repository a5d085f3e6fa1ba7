import type { AuthProvider, OptionGroup, OptionRow } from '../api/server-options.ts';

/** How a value is written in the table: text for scalars, JSON for the rest. */
export function valueText(row: OptionRow): string {
  if (!row.set) return 'not set';
  if (row.hidden) return 'set (hidden)';
  if (row.object) return '';
  const { value } = row;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/** How deep a row sits below its top-level option (`email.smtp.host` is 2). */
export const depthOf = (row: OptionRow) => row.name.split('.').length - 1;

const matches = (needle: string, ...texts: string[]) => texts.some((t) => t.toLowerCase().includes(needle));

/** The groups with only the rows whose name or description contain `filter` (any case); empty groups left out. */
export function filterGroups(groups: OptionGroup[], filter: string): OptionGroup[] {
  const needle = filter.trim().toLowerCase();
  if (!needle) return groups;
  return groups
    .map((g) => ({ ...g, options: g.options.filter((r) => matches(needle, r.name, r.description)) }))
    .filter((g) => g.options.length > 0);
}

export const KIND_LABELS: Record<AuthProvider['kind'], string> = {
  anonymous: 'Built in',
  idToken: 'OpenID ID token',
  cloud: 'Cloud code adapter',
};

/** The providers whose name, kind or description contain `filter`. */
export function filterProviders(providers: AuthProvider[], filter: string): AuthProvider[] {
  const needle = filter.trim().toLowerCase();
  if (!needle || matches(needle, 'sign-in providers')) return providers;
  return providers.filter((p) => matches(needle, p.name, KIND_LABELS[p.kind], p.description));
}
