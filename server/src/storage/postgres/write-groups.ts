import type pg from 'pg';
import type { Statement } from '../sql/driver.ts';

/** Queues a statement of a write to run just before its group commits (see WriteGroupsOptions.runDeferred). */
export type Defer = (statement: Statement) => void;

/**
 * One write waiting for its group: what it runs on the group's connection, and what it runs on its
 * own when the group cannot commit it.
 */
interface GroupedWrite {
  inGroup(client: pg.PoolClient, defer: Defer | undefined): Promise<unknown>;
  alone(): Promise<unknown>;
  together?: Together;
  /** The write's place in its group's lock order (see WriteGroups); none: it stays where it came. */
  order?: string;
  resolve(value: unknown): void;
  reject(err: unknown): void;
  outcome?: Outcome;
}

interface Group {
  writes: GroupedWrite[];
  accepting: boolean;
}

/** Most writes one group commits; the next ones open the next group. */
export const MAX_GROUP_WRITES = 256;

/**
 * A write that may run in one statement with the group's other writes of the same `key` (one-row
 * INSERTs of the same text): its parameters.
 */
export interface Together {
  key: string;
  params: unknown[];
}

/** What one write of a statement run for several answers. */
export type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

export interface WriteGroupsOptions {
  /** A connection of the pool, ready for statements. */
  checkout(): Promise<pg.PoolClient>;
  /**
   * True for an error a write answers without harm to the group's transaction (a refusal found
   * before the statement reached the server, or answered without an error from it).
   */
  leavesTransactionIntact(err: unknown): boolean;
  /** True when the connection still works after the error (the server answered it). */
  fromServer(err: unknown): boolean;
  /**
   * Runs consecutive writes of one `Together.key` as one statement, answering one outcome per
   * write in order; throws as a statement would (the group then runs its writes again alone).
   */
  runTogether?(client: pg.PoolClient, key: string, params: unknown[][]): Promise<Outcome[]>;
  /**
   * Runs, in order, the statements the group's writes deferred (their versions, say) once every
   * write ran, before the commit; throws as a statement would (the group then runs its writes again
   * alone, where nothing is deferred).
   */
  runDeferred?(client: pg.PoolClient, statements: Statement[]): Promise<void>;
  /** Told of the error that made a group run its writes again alone (a deadlock, say). */
  ranAgainAlone?(err: unknown): void;
}

/**
 * Group commit for writes made outside a transaction. Each write waits for its commit, and every
 * commit waits for PostgreSQL to flush its log, so one commit per write caps writes at the flush
 * rate. Here the writes that arrive while a group runs join it: one connection runs them one
 * after another in one transaction, and one commit makes them all durable.
 *
 * - A write's promise settles only after its group committed: nothing is acknowledged before it
 *   is durable.
 * - Groups run their statements one group at a time (the next one starts once the previous one
 *   is committing), so two groups of one WriteGroups never wait for each other's row locks.
 * - A group takes the writes that arrived before it starts, and runs those with an `order` (the
 *   row each locks, docs/architecture/storage.md) sorted by it: every group, of every lane and
 *   every instance, locks rows in one order, so two groups can wait for each other's locks but
 *   never deadlock. A write without an `order` runs where it came, between the sorted runs.
 * - What a write calls for once it ran (its row's version) may be deferred to the end of its
 *   group, where the deferred statements run together (`runDeferred`): one statement for the
 *   group's versions instead of one round trip per write.
 * - When a statement fails on the server, the whole transaction is lost. The group rolls back
 *   and each of its writes runs again on its own, as it would have without groups: the failing
 *   write gets its own error and the others their results.
 * - A commit whose connection broke may or may not have landed, so its writes fail with the
 *   error rather than run twice.
 */
export class WriteGroups {
  private open: Group | undefined;
  /** Settles when the group running statements has finished them. */
  private executing: Promise<void> = Promise.resolve();
  private readonly running = new Set<Promise<void>>();

  constructor(private readonly options: WriteGroupsOptions) {}

  submit<T>(
    inGroup: (client: pg.PoolClient, defer: Defer | undefined) => Promise<T>,
    alone: () => Promise<T>,
    together?: Together,
    order?: string,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const write: GroupedWrite = {
        inGroup,
        alone,
        together,
        order,
        resolve: resolve as (value: unknown) => void,
        reject,
      };
      const open = this.open;
      if (open?.accepting && open.writes.length < MAX_GROUP_WRITES) {
        open.writes.push(write);
        return;
      }
      const group: Group = { writes: [write], accepting: true };
      this.open = group;
      const previous = this.executing;
      let executed!: () => void;
      this.executing = new Promise<void>((done) => {
        executed = done;
      });
      const run = this.run(group, previous, executed).finally(() => this.running.delete(run));
      this.running.add(run);
    });
  }

  /** Waits for every group under way. */
  async drain(): Promise<void> {
    while (this.running.size > 0) await Promise.all(this.running);
  }

  private stopAccepting(group: Group): void {
    group.accepting = false;
    if (this.open === group) this.open = undefined;
  }

  /** How many writes from `from` on share its `Together.key` (1 when it has none). */
  private runOfSameKey(writes: GroupedWrite[], from: number): number {
    const key = writes[from]!.together?.key;
    if (key === undefined || !this.options.runTogether) return 1;
    let end = from + 1;
    while (end < writes.length && writes[end]!.together?.key === key) end++;
    return end - from;
  }

  private async run(group: Group, previous: Promise<void>, executed: () => void): Promise<void> {
    await previous;
    let client: pg.PoolClient;
    try {
      client = await this.options.checkout();
    } catch (err) {
      this.stopAccepting(group);
      executed();
      for (const write of group.writes) write.reject(err);
      return;
    }
    // The writes that arrived while this group waited for its turn and a connection; later ones
    // open the next group, which starts once this one's statements are done.
    this.stopAccepting(group);
    const writes = inLockOrder(group.writes);
    let phase: 'statements' | 'commit' = 'statements';
    let broken: Error | undefined;
    const deferred: Statement[] = [];
    try {
      await client.query('BEGIN');
      for (let i = 0; i < writes.length; ) {
        const write = writes[i]!;
        const together = this.runOfSameKey(writes, i);
        if (together > 1) {
          const run = writes.slice(i, i + together);
          const key = write.together!.key;
          const outcomes = await this.options.runTogether!(
            client,
            key,
            run.map((w) => w.together!.params),
          );
          for (let k = 0; k < run.length; k++) run[k]!.outcome = outcomes[k];
          i += together;
          continue;
        }
        // A write's deferred statements run only when the write itself succeeded; without
        // runDeferred, a write runs them itself.
        const own: Statement[] = [];
        const defer = this.options.runDeferred ? (s: Statement) => own.push(s) : undefined;
        try {
          write.outcome = { ok: true, value: await write.inGroup(client, defer) };
          deferred.push(...own);
        } catch (err) {
          if (!this.options.leavesTransactionIntact(err)) throw err;
          write.outcome = { ok: false, error: err };
        }
        i++;
      }
      if (deferred.length > 0) await this.options.runDeferred!(client, deferred);
      executed();
      phase = 'commit';
      await client.query('COMMIT');
    } catch (err) {
      if (phase === 'statements') executed();
      if (!this.options.fromServer(err)) broken = err as Error;
      if (phase === 'commit' && broken) {
        client.release(broken);
        for (const write of group.writes) write.reject(err);
        return;
      }
      if (!broken) {
        try {
          await client.query('ROLLBACK');
        } catch (rollbackError) {
          broken = rollbackError as Error;
        }
      }
      // Before the commit, a lost connection loses the transaction too: running again is safe.
      client.release(broken);
      this.options.ranAgainAlone?.(err);
      await Promise.all(group.writes.map((write) => write.alone().then(write.resolve, write.reject)));
      return;
    }
    client.release();
    for (const write of group.writes) {
      const outcome = write.outcome!;
      if (outcome.ok) write.resolve(outcome.value);
      else write.reject(outcome.error);
    }
  }
}

/**
 * The writes of a group in the order it runs them: each run of writes with an `order` sorted by it
 * (stably: writes of one row keep the order they came in), the writes without one where they came.
 */
function inLockOrder(writes: GroupedWrite[]): GroupedWrite[] {
  const ordered: GroupedWrite[] = [];
  let run: GroupedWrite[] = [];
  const endRun = () => {
    run.sort((a, b) => (a.order! < b.order! ? -1 : a.order! > b.order! ? 1 : 0));
    ordered.push(...run);
    run = [];
  };
  for (const write of writes) {
    if (write.order === undefined) {
      endRun();
      ordered.push(write);
    } else run.push(write);
  }
  endRun();
  return ordered;
}
