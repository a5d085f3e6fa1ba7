import { APNS_DEVICE_TYPES, DEVICE_TYPES, FCM_DEVICE_TYPES } from '@bds/client/protocol';
import { describe, expect, it } from 'vitest';
import { providerFor } from '../src/push/provider.ts';

describe('the device types a push is delivered to', () => {
  it('are one list in the protocol: the APNs types, then the FCM types', () => {
    expect(APNS_DEVICE_TYPES).toEqual(['ios', 'osx', 'tvos', 'watchos', 'visionos']);
    expect(FCM_DEVICE_TYPES).toEqual(['android', 'web']);
    expect(DEVICE_TYPES).toEqual([...APNS_DEVICE_TYPES, ...FCM_DEVICE_TYPES]);
  });

  it.each(APNS_DEVICE_TYPES.map((t) => [t]))('routes %s to APNs', (deviceType) => {
    expect(providerFor({ deviceType })).toBe('apns');
    expect(providerFor({ deviceType: deviceType.toUpperCase() })).toBe('apns');
  });

  it.each(FCM_DEVICE_TYPES.map((t) => [t]))('routes %s to FCM', (deviceType) => {
    expect(providerFor({ deviceType })).toBe('fcm');
  });

  it('routes no other device type, unless its pushType names a provider', () => {
    for (const deviceType of ['winphone', 'win', 'embedded', '', undefined]) {
      expect(providerFor({ deviceType })).toBeUndefined();
    }
    expect(providerFor({ deviceType: 'embedded', pushType: 'fcm' })).toBe('fcm');
    expect(providerFor({ deviceType: 'android', pushType: 'APNS' })).toBe('apns');
  });
});
