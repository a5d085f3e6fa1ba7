import { AsyncLocalStorage } from 'node:async_hooks';
import { type AmbientSlot, installScopeRunner } from './ambient.ts';

const storage = new AsyncLocalStorage<AmbientSlot>();
installScopeRunner({
  run: (slot, fn) => storage.run(slot, fn),
  current: () => storage.getStore(),
});
