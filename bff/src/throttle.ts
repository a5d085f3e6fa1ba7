/**
 * Login throttling with exponential backoff. Each key (an IP, a username) counts failures; past
 * `freeAttempts` every further failure locks the key for base * 2^(n - 1) seconds, capped.
 * Failures are forgotten after a quiet period.
 */
export interface ThrottleOptions {
  freeAttempts: number;
  baseDelaySeconds: number;
  maxDelaySeconds: number;
}

interface Entry {
  failures: number;
  lockedUntil: number;
  lastFailure: number;
}

const MAX_ENTRIES = 50_000;

export class LoginThrottle {
  private readonly entries = new Map<string, Entry>();
  private readonly forgetAfterMs: number;

  constructor(
    private readonly options: ThrottleOptions,
    private readonly now: () => number = Date.now,
  ) {
    this.forgetAfterMs = Math.max(options.maxDelaySeconds * 2_000, 60 * 60_000);
  }

  /** Seconds to wait before any of these keys may try again (0: go ahead). */
  waitSeconds(keys: string[]): number {
    const now = this.now();
    let wait = 0;
    for (const key of keys) {
      const entry = this.entries.get(key);
      if (!entry) continue;
      if (now - entry.lastFailure > this.forgetAfterMs) {
        this.entries.delete(key);
        continue;
      }
      wait = Math.max(wait, Math.ceil((entry.lockedUntil - now) / 1000));
    }
    return wait;
  }

  failure(keys: string[]): void {
    const now = this.now();
    for (const key of keys) {
      const entry = this.entries.get(key) ?? { failures: 0, lockedUntil: 0, lastFailure: now };
      entry.failures += 1;
      entry.lastFailure = now;
      const over = entry.failures - this.options.freeAttempts;
      if (over > 0) {
        const delay = Math.min(this.options.baseDelaySeconds * 2 ** (over - 1), this.options.maxDelaySeconds);
        entry.lockedUntil = now + delay * 1000;
      }
      this.entries.delete(key);
      this.entries.set(key, entry);
    }
    while (this.entries.size > MAX_ENTRIES) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
  }

  success(keys: string[]): void {
    for (const key of keys) this.entries.delete(key);
  }
}
