import { parseArgs } from 'node:util';
import { loadOptions, OptionError } from './config/options.ts';

/** `npm run server`: the service alone. Options from --config/BDS_CONFIG, then env. */
export async function main(argv = process.argv.slice(2), extra: Record<string, unknown> = {}) {
  let configFile: string | undefined;
  try {
    const { values } = parseArgs({ args: argv, options: { config: { type: 'string' } }, strict: true });
    configFile = values.config;
  } catch (err) {
    console.error(`[bds] ${(err as Error).message}`);
    process.exit(2);
  }
  let loaded: ReturnType<typeof loadOptions>;
  try {
    loaded = loadOptions(process.env, configFile, extra);
  } catch (err) {
    if (err instanceof OptionError) {
      console.error(`[bds] ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
  const { options } = loaded;
  // The service's code loads only once the options are good: a bad option fails in a moment.
  const { serve } = await import('./index.ts');
  const { service, url } = await serve(options);
  console.log(`[bds] service listening at ${url.replace('127.0.0.1', 'localhost')}`);
  console.log(`[bds] data dir: ${options.dataDir}`);
  if (loaded.keysFile) {
    // Development keys, generated once and kept in the data dir; printed so a developer can use them.
    console.log(`[bds] development keys (${loaded.keysFile}):`);
    console.log(`        application id: ${options.appId}`);
    console.log(`        master key:     ${options.masterKey}`);
    if (options.restAPIKey) console.log(`        REST API key:   ${options.restAPIKey}`);
    if (options.javascriptKey) console.log(`        JavaScript key: ${options.javascriptKey}`);
  }
  const shutdown = async (signal: string) => {
    console.log(`[bds] ${signal}: draining in-flight requests`);
    await service.close();
    console.log('[bds] store closed');
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
  return service;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((err) => {
    console.error('[bds] failed to start:', err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
