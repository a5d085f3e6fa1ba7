import { type Bff, createBff } from './index.ts';
import { type BffOptions, loadBffOptions, OptionError } from './options.ts';

/** Validated options (or what else `load` checks) or exit code 2 with a message naming the bad option. */
export function optionsOrExit<T = BffOptions>(load: () => T): T {
  try {
    return load();
  } catch (err) {
    if (err instanceof OptionError) {
      console.error(`[bds-console] ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
}

/** Starts the bff, prints its address, and closes it on SIGTERM/SIGINT. */
export async function runBff(options: BffOptions): Promise<{ bff: Bff; url: string }> {
  const bff = await createBff(options);
  const { url } = await bff.listen();
  const stop = async () => {
    await bff.close();
  };
  process.once('SIGTERM', () => void stop());
  process.once('SIGINT', () => void stop());
  return { bff, url: url.replace('127.0.0.1', 'localhost') };
}

/**
 * `npm run console`: the bff alone, pointing at running services. Options from env
 * (BDS_CONSOLE_PORT, BDS_CONSOLE_HOST, BDS_DATA_DIR, BDS_CONSOLE_SESSION_SECRET, BDS_SERVER_URL +
 * BDS_APP_ID + BDS_MASTER_KEY ...) and the JSON file named by BDS_CONSOLE_CONFIG.
 */
if (import.meta.url === `file://${process.argv[1]}`) {
  const options = optionsOrExit(() => loadBffOptions(process.env));
  runBff(options)
    .then(({ url }) => console.log(`[bds-console] console listening at ${url}`))
    .catch((err) => {
      console.error('[bds-console] failed to start:', err instanceof Error ? err.message : err);
      process.exit(1);
    });
}
