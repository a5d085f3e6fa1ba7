/** Settings shared by the bench driver (run.ts) and its child processes (service.ts, baseline.ts). */

export const BENCH_KEYS = {
  appId: 'bench-app',
  masterKey: 'bench-master-key-0123456789',
  restAPIKey: 'bench-rest-key',
};

export const BENCH_CLASS = 'BenchItem';
export const MOUNT_PATH = '/api';

/** `n` values of seeded and created rows are drawn from [0, N_RANGE). */
export const N_RANGE = 100_000;

/** Messages a child sends to the driver over the IPC channel. */
export type ChildMessage =
  | { type: 'ready'; url: string; seedMs?: number; ids?: string[] }
  | { type: 'error'; message: string };

/**
 * Exits the child on SIGTERM/SIGINT and when the driver goes away (its IPC channel closes, e.g. it
 * was killed), so no child outlives a run. `orphaned` tells `onExit` that the driver is gone.
 */
export function exitWithParent(onExit: (orphaned: boolean) => Promise<void> | void): void {
  let exiting = false;
  const stop = async (orphaned: boolean) => {
    if (exiting) return;
    exiting = true;
    const force = setTimeout(() => process.exit(0), 5_000);
    force.unref();
    try {
      await onExit(orphaned);
    } finally {
      process.exit(0);
    }
  };
  process.on('disconnect', () => void stop(true));
  process.on('SIGTERM', () => void stop(false));
  process.on('SIGINT', () => void stop(false));
}

export function send(message: ChildMessage): void {
  process.send?.(message);
}
