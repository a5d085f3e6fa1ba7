// Node entry: async scopes are tracked with AsyncLocalStorage.
import './ambient.node.ts';

export * from './index.ts';
