export type { AmbientSlot } from './ambient.ts';
export * from './client.ts';
export * from './errors.ts';
export * from './model.ts';
export * from './objects.ts';
export * from './realtime.ts';
export * from './scrub.ts';
export * from './wire.ts';
