/**
 * Realtime's one queue: subscribes, fan-outs, schema rechecks and session expiries run one after
 * the other in the order they were queued, so every connection receives events in the order of the
 * application's sequence. A task that fails is logged and the queue goes on.
 */
import type { Logger } from '../kernel/log.ts';

export type Task = () => Promise<void> | void;

export class TaskQueue {
  private tail: Promise<void> = Promise.resolve();

  constructor(private readonly log: Logger) {}

  /** Runs `task` after everything queued before it; answers when it has run (a failure is logged). */
  enqueue(task: Task): Promise<void> {
    this.tail = this.tail.then(task).catch(this.logFailure);
    return this.tail;
  }

  /** Settles once everything queued so far has run. */
  get drained(): Promise<void> {
    return this.tail;
  }

  private readonly logFailure = (err: unknown): void => {
    this.log.error({ err: err instanceof Error ? err.stack : String(err) }, 'realtime delivery failed');
  };
}
