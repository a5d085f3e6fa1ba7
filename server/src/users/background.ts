import type { Core } from '../data/core.ts';

/** The account rules' work done after the answer is sent (mail); awaited on close. */
export class BackgroundWork {
  private readonly pending = new Set<Promise<void>>();

  constructor(private readonly core: Core) {}

  /**
   * Runs `work` after the answer is sent (mail), so timing tells nothing; errors are logged without
   * data. Inside a transaction it waits for the commit: a rolled-back write (a dry run) sends nothing.
   */
  run(work: () => Promise<void>): void {
    if (this.core.store.inTransaction()) this.core.store.afterCommit(() => this.start(work));
    else this.start(work);
  }

  private start(work: () => Promise<void>): void {
    const p = work()
      .catch((err: unknown) => {
        // The message only: a mail task's data (addresses, links with tokens) stays out of the log.
        this.core.log.error(
          { err: err instanceof Error ? err.message : 'error' },
          'background mail task failed',
        );
      })
      .finally(() => this.pending.delete(p));
    this.pending.add(p);
  }

  /** Resolves once no work is running, also work started while it waits. */
  async idle(): Promise<void> {
    while (this.pending.size) await Promise.all([...this.pending]);
  }
}
