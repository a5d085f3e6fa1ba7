/**
 * The process-wide realtime switch (off until `enableRealtime()`: docs/protocol.md#client-library-conventions)
 * and the one-time realtime warnings.
 */
import { RealtimeError } from '../errors.ts';

let realtimeEnabled = false;

/** Turns realtime on for the process (off until then: docs/protocol.md#client-library-conventions). */
export function enableRealtime(): void {
  realtimeEnabled = true;
}

/** Turns realtime off again: new connections and subscriptions are refused (open ones stay). */
export function disableRealtime(): void {
  realtimeEnabled = false;
}

export function isRealtimeEnabled(): boolean {
  return realtimeEnabled;
}

/** Throws unless realtime was turned on. */
export function requireRealtime(): void {
  if (!realtimeEnabled) {
    throw new RealtimeError(
      'Realtime is off: call enableRealtime() once before opening a realtime connection or subscribing.',
    );
  }
}

const warned = new Set<string>();

/** Warns once per process for each key. */
export function warnOnce(key: keyof typeof REALTIME_WARNINGS, message: string): void {
  if (warned.has(key)) return;
  warned.add(key);
  console.warn(`[@bds/client] ${message}`);
}

/** For tests: lets the one-time realtime warnings fire again. */
export function resetRealtimeWarnings(): void {
  warned.clear();
}

export const REALTIME_WARNINGS = {
  masterConnection:
    'A realtime connection was opened with the master key (useMasterKey: true): every subscription on ' +
    'it bypasses ACLs and class-level permissions. Use it for admin streams on a server only, never in a client build.',
  perSubscriptionMaster:
    'useMasterKey on subscribe() is ignored: per-subscription master authority does not exist. ' +
    'Open a separate connection with client.realtime({ useMasterKey: true }) for admin streams.',
} as const;
