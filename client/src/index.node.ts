// Node entry: async scopes are tracked with AsyncLocalStorage; realtime falls back to `ws`.
import './ambient.node.ts';
import './realtime.node.ts';

export * from './index.ts';
