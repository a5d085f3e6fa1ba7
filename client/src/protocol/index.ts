export * from './audit.ts';
export * from './errors.ts';
export * from './fields.ts';
export * from './headers.ts';
export * from './hooks.ts';
export * from './paths.ts';
export * from './scrub.ts';
export * from './values.ts';
