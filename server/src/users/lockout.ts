import { BdsError, ErrorCode } from '../kernel/errors.ts';

export interface LockoutPolicy {
  threshold: number;
  /** Seconds. */
  duration: number;
}

/**
 * Account lockout after repeated failed logins (option `accountLockout`). Failures are counted per
 * login name whether or not an account exists, so the lockout answer tells nothing about existence.
 * Kept in memory: a restart (or another instance) starts counting afresh.
 */
export class Lockout {
  private readonly entries = new Map<string, { failures: number; until: number }>();

  constructor(private readonly policy: LockoutPolicy | undefined) {}

  /** Throws while `key` is locked. */
  check(key: string): void {
    if (!this.policy) return;
    const entry = this.entries.get(key);
    if (!entry || entry.until === 0) return;
    const left = entry.until - Date.now();
    if (left > 0) {
      const minutes = Math.max(1, Math.ceil(left / 60_000));
      throw new BdsError(
        ErrorCode.OBJECT_NOT_FOUND,
        `Your account is locked due to multiple failed login attempts. Please try again after ${minutes} minute(s).`,
      );
    }
    this.entries.delete(key);
  }

  fail(key: string): void {
    if (!this.policy) return;
    if (this.entries.size > 50_000) this.prune();
    const entry = this.entries.get(key) ?? { failures: 0, until: 0 };
    entry.failures += 1;
    if (entry.failures >= this.policy.threshold) {
      entry.until = Date.now() + this.policy.duration * 1000;
      entry.failures = 0;
    }
    this.entries.set(key, entry);
  }

  succeed(key: string): void {
    this.entries.delete(key);
  }

  private prune(): void {
    const now = Date.now();
    for (const [key, entry] of this.entries) if (entry.until < now) this.entries.delete(key);
  }
}
