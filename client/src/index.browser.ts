// Browser entry: no Node-only imports.
import './ambient.browser.ts';

export * from './index.ts';
