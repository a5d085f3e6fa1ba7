/**
 * Time as the service's schedulers see it. The real one reads the system clock; tests inject one
 * they move by hand, so a schedule is checked at the instant of its tick, not in a real-time window.
 */
export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    const handle = setTimeout(fn, ms);
    // A pending timer of the service never keeps the process alive on its own.
    handle.unref?.();
    return handle;
  },
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};
