/**
 * The device types of an installation (`_Installation.deviceType`) the service delivers pushes
 * to, by the provider that delivers them: the service routes a push by these lists
 * (server/src/push/provider.ts) and the console filters installations by them.
 */
export const APNS_DEVICE_TYPES = ['ios', 'osx', 'tvos', 'watchos', 'visionos'] as const;
export const FCM_DEVICE_TYPES = ['android', 'web'] as const;

/** Every device type a push reaches: the APNs types, then the FCM types. */
export const DEVICE_TYPES = [...APNS_DEVICE_TYPES, ...FCM_DEVICE_TYPES] as const;
export type DeviceType = (typeof DEVICE_TYPES)[number];
