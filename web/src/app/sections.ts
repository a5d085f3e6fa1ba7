/** The console's sections, in sidebar order. `ready: false` ones show a "coming later" page. */
export interface Section {
  slug: string;
  label: string;
  /** Second key of the "g <key>" navigation shortcut. */
  key: string;
  ready: boolean;
  blurb: string;
}

export const SECTIONS: Section[] = [
  { slug: 'data', label: 'Data', key: 'd', ready: true, blurb: 'Browse and edit classes and rows.' },
  {
    slug: 'security',
    label: 'Security',
    key: 's',
    ready: true,
    blurb: 'Roles, users, sessions and who may do what.',
  },
  { slug: 'realtime', label: 'Realtime', key: 'r', ready: true, blurb: 'Live queries and subscriptions.' },
  { slug: 'cloud', label: 'Cloud', key: 'l', ready: true, blurb: 'Cloud functions, jobs and hooks.' },
  { slug: 'files', label: 'Files', key: 'f', ready: true, blurb: 'Uploads and files no row references.' },
  { slug: 'push', label: 'Push', key: 'p', ready: true, blurb: 'Push notifications and installations.' },
  { slug: 'analytics', label: 'Analytics', key: 'n', ready: true, blurb: 'Events over time.' },
  { slug: 'config', label: 'Config', key: 'c', ready: true, blurb: 'Config parameters.' },
  { slug: 'server', label: 'Server', key: 'v', ready: true, blurb: 'The options the service runs with.' },
  {
    slug: 'performance',
    label: 'Performance',
    key: 'q',
    ready: true,
    blurb: 'Slow query shapes and the indexes that serve them.',
  },
  {
    slug: 'logs',
    label: 'Logs',
    key: 'o',
    ready: true,
    blurb: 'Recent requests, and what each one logged.',
  },
  { slug: 'audit', label: 'Audit', key: 'a', ready: true, blurb: 'Who changed what, and when.' },
  { slug: 'api-console', label: 'API console', key: 'k', ready: true, blurb: 'Send raw REST calls.' },
];
