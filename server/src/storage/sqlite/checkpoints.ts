import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * WAL checkpoints off the event loop's thread. SQLite copies the WAL back into the database file
 * (a checkpoint, with a flush of both files) from inside the COMMIT that pushes the WAL past its
 * threshold, so on the writer connection every few hundred group commits one of them stalls the
 * event loop for the copy and the flushes. Measured with better-sqlite3 on this project's machines
 * (inserts in groups of 16, a class table with three indexes): 30-34 µs a row with the writer's
 * checkpoints, 18-24 µs without; with the row history's version beside each row, 72-91 against
 * 45-57 µs.
 *
 * Here a worker thread with its own connection to the file runs PASSIVE checkpoints, which never
 * wait for or block the writer or the readers; the WAL starts over from its beginning at the next
 * write once it is all copied. The writer keeps its own automatic checkpoint at a much higher
 * threshold (`BACKSTOP_PAGES`), which only a worker that falls far behind (or died) lets it reach.
 */

/** The writer's own checkpoint threshold in pages (about 64 MB of WAL): the backstop. */
export const BACKSTOP_PAGES = 16_000;

/** How often the worker looks whether the WAL changed since its last checkpoint. */
const DEFAULT_INTERVAL_MS = 100;

/**
 * The worker: every interval, a PASSIVE checkpoint when the WAL file changed since the last look.
 * A script rather than a module file so that it runs the same under every loader (tsx, vitest, node).
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const fs = require('node:fs');
const Database = require(workerData.binding);
const db = new Database(workerData.file);
db.pragma('synchronous = NORMAL');
const wal = workerData.file + '-wal';
let seen = '';
const look = () => {
  let stat;
  try {
    stat = fs.statSync(wal);
  } catch {
    return;
  }
  const mark = stat.size + ':' + stat.mtimeMs;
  if (mark === seen) return;
  try {
    const [result] = db.pragma('wal_checkpoint(PASSIVE)');
    // Only a complete copy settles the mark: frames a reader still needed are copied next time.
    if (result && result.busy === 0 && result.log === result.checkpointed) seen = mark;
    parentPort.postMessage({ checkpointed: result ? result.checkpointed : 0 });
  } catch (err) {
    parentPort.postMessage({ error: String(err && err.message || err) });
  }
};
const timer = setInterval(look, workerData.intervalMs);
parentPort.on('message', (message) => {
  if (message !== 'close') return;
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

export interface CheckpointerOptions {
  intervalMs?: number;
  /** Told of each checkpoint's failure (the writer's backstop still bounds the WAL). */
  onError?: (message: string) => void;
}

/** The checkpoint worker of one database file. */
export class Checkpointer {
  private readonly worker: Worker;
  private readonly exited: Promise<void>;
  /** Checkpoints run so far (tests and diagnostics). */
  runs = 0;

  constructor(file: string, options: CheckpointerOptions = {}) {
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        file,
        binding: createRequire(import.meta.url).resolve('better-sqlite3'),
        intervalMs: options.intervalMs ?? DEFAULT_INTERVAL_MS,
      },
    });
    // The worker never keeps the process alive: a service that is not closed still exits.
    this.worker.unref();
    this.worker.on('message', (message: { checkpointed?: number; error?: string }) => {
      if (message.error !== undefined) options.onError?.(message.error);
      else this.runs++;
    });
    this.worker.on('error', (err) => options.onError?.(err.message));
    this.exited = new Promise((resolve) => this.worker.once('exit', () => resolve()));
  }

  /** Stops the worker and closes its connection; resolves once it has. */
  async close(): Promise<void> {
    // Referenced again while it ends: an unreferenced worker lets the process exit before its exit
    // event, leaving whoever awaits close (and everything after it) behind.
    this.worker.ref();
    this.worker.postMessage('close');
    await this.exited;
  }
}
