import { existsSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { OptionError } from '../config/options.ts';
import { type CloudDefinitions, CloudRegistry } from './registry.ts';

/**
 * Loads the module named by the option `cloud` (JS, or TS when the service runs under tsx) and
 * calls its default export with the registry object. Anything wrong stops the start, naming the
 * option: a missing file, no default function, a registration that throws.
 */
export async function loadCloudModule(file: string | undefined): Promise<CloudRegistry> {
  const registry = new CloudRegistry();
  if (!file) return registry;
  const resolved = path.resolve(file);
  if (!existsSync(resolved)) throw new OptionError('cloud', `no such file: ${resolved}`);
  let mod: { default?: unknown };
  try {
    mod = await import(pathToFileURL(resolved).href);
  } catch (err) {
    throw new OptionError('cloud', `cannot load ${resolved}: ${(err as Error).message}`);
  }
  if (typeof mod.default !== 'function') {
    throw new OptionError('cloud', `${resolved} must export a default function that receives the registry`);
  }
  try {
    await (mod.default as (cloud: CloudDefinitions) => unknown)(registry.definitions());
  } catch (err) {
    throw new OptionError('cloud', `${resolved} failed to register: ${(err as Error).message}`);
  }
  return registry;
}
