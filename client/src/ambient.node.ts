import { AsyncLocalStorage } from 'node:async_hooks';
import { installScopeRunner, type ScopeSlot } from './ambient.ts';

const storage = new AsyncLocalStorage<ScopeSlot>();
installScopeRunner({
  run: (slot, fn) => storage.run(slot, fn),
  current: () => storage.getStore(),
});
