import { createRequire } from 'node:module';

/** Loads modules as parse-server itself resolves them (its own express, the router it finds). */
export const requireAsIncumbent = createRequire(createRequire(import.meta.url).resolve('parse-server'));

/**
 * parse-server 9.10 matches its REST routes (the sub-requests of /batch, and the internal calls of
 * its SDK) with `router/lib/layer`, a module it does not depend on and gets from express's router;
 * it reads the params that `layer.match()` stored on the layer. router 2.3 (the one this workspace
 * installs, for the service's express) keeps them in the match's result instead, so every /batch
 * answers 500. Pinning router 2.2 for parse-server with an npm override would reach the service's
 * express as well (parse-server's peer dependencies resolve to it). So, in this process only, a
 * match also stores its params on the layer again, as router 2.2 did.
 */
export function restoreLayerParams(): void {
  const Layer = requireAsIncumbent('router/lib/layer');
  const probe = new Layer('/probe/:id', {}, () => undefined);
  const found = probe.match('/probe/1');
  if (probe.params !== undefined || !found?.params) return; // a router that stores them itself
  const match = Layer.prototype.match;
  Layer.prototype.match = function matchAndStoreParams(this: { params?: unknown }, pathname: string) {
    const result = match.call(this, pathname);
    if (result && typeof result === 'object') this.params = result.params;
    return result;
  };
}
