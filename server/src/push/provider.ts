import { APNS_DEVICE_TYPES, FCM_DEVICE_TYPES } from '@bds/client/protocol';

/** One notification to one device, as a delivery adapter sends it. */
export interface Delivery {
  /** The `_Installation` row. */
  installation: string;
  token: string;
  deviceType: string;
  /** The push's `data` with the badge resolved for this installation. */
  data: Record<string, unknown>;
  /** Seconds since the epoch after which the provider should drop it; undefined: no expiry. */
  expiration?: number;
}

export type DeliveryResult = { ok: true } | { ok: false; reason: string; invalidToken: boolean };

/** A push provider (APNs, FCM): sends one delivery; a failure answers a reason, never throws. */
export interface PushProvider {
  readonly name: 'apns' | 'fcm';
  send(delivery: Delivery): Promise<DeliveryResult>;
  close(): Promise<void>;
}

/** Keys of `data` that the providers map to their own fields; the rest travels as custom data. */
export const STANDARD_KEYS = new Set([
  'alert',
  'badge',
  'sound',
  'title',
  'content-available',
  'category',
  'uri',
]);

/** The protocol's lists of device types, as sets for the per-installation lookup. */
const APNS_TYPES: ReadonlySet<string> = new Set(APNS_DEVICE_TYPES);
const FCM_TYPES: ReadonlySet<string> = new Set(FCM_DEVICE_TYPES);

/** Which provider delivers to an installation: its pushType first, then its deviceType. */
export function providerFor(installation: {
  deviceType?: unknown;
  pushType?: unknown;
}): 'apns' | 'fcm' | undefined {
  const pushType = typeof installation.pushType === 'string' ? installation.pushType.toLowerCase() : '';
  if (pushType === 'apns') return 'apns';
  if (pushType === 'fcm' || pushType === 'gcm') return 'fcm';
  const deviceType = String(installation.deviceType ?? '').toLowerCase();
  if (APNS_TYPES.has(deviceType)) return 'apns';
  if (FCM_TYPES.has(deviceType)) return 'fcm';
  return undefined;
}

/** Runs `fn` over `items` with at most `limit` calls in flight; answers the results in order. */
export async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
