import { importPKCS8, SignJWT } from 'jose';
import type { Delivery, DeliveryResult, PushProvider } from './provider.ts';
import { STANDARD_KEYS } from './provider.ts';

export interface FcmOptions {
  projectId: string;
  clientEmail: string;
  privateKey: string;
  url?: string;
  tokenUrl?: string;
}

const SCOPE = 'https://www.googleapis.com/auth/firebase.messaging';

/** The FCM HTTP v1 message of a push's `data` (data values travel as strings). */
export function fcmMessage(delivery: Delivery): Record<string, unknown> {
  const { data } = delivery;
  const message: Record<string, unknown> = { token: delivery.token };
  if (data.alert !== undefined || data.title !== undefined) {
    message.notification = {
      ...(data.title !== undefined ? { title: String(data.title) } : {}),
      ...(data.alert !== undefined ? { body: String(data.alert) } : {}),
    };
  }
  const custom: Record<string, string> = {};
  for (const [k, v] of Object.entries(data)) {
    if (STANDARD_KEYS.has(k) && k !== 'badge') continue;
    custom[k] = typeof v === 'string' ? v : JSON.stringify(v);
  }
  if (Object.keys(custom).length) message.data = custom;
  const android: Record<string, unknown> = { priority: 'high' };
  if (delivery.expiration !== undefined) {
    android.ttl = `${Math.max(0, delivery.expiration - Math.floor(Date.now() / 1000))}s`;
  }
  if (data.sound !== undefined) android.notification = { sound: String(data.sound) };
  message.android = android;
  return { message };
}

/**
 * FCM HTTP v1: an OAuth 2 access token from a service-account JWT (RS256), then one
 * `messages:send` call per device.
 */
export class FcmProvider implements PushProvider {
  readonly name = 'fcm';
  private access: { token: string; expires: number } | undefined;
  private pending: Promise<string> | undefined;
  private readonly tokenUrl: string;
  private readonly sendUrl: string;

  constructor(private readonly options: FcmOptions) {
    this.tokenUrl = options.tokenUrl ?? 'https://oauth2.googleapis.com/token';
    const base = (options.url ?? 'https://fcm.googleapis.com').replace(/\/+$/, '');
    this.sendUrl = `${base}/v1/projects/${encodeURIComponent(options.projectId)}/messages:send`;
  }

  private accessToken(): Promise<string> {
    if (this.access && this.access.expires > Date.now() + 60_000) return Promise.resolve(this.access.token);
    this.pending ??= this.fetchToken().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  private async fetchToken(): Promise<string> {
    const key = await importPKCS8(this.options.privateKey, 'RS256');
    const assertion = await new SignJWT({ scope: SCOPE })
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT' })
      .setIssuer(this.options.clientEmail)
      .setAudience(this.tokenUrl)
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(key);
    const res = await fetch(this.tokenUrl, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }),
    });
    if (!res.ok) throw new Error(`the OAuth token endpoint answered HTTP ${res.status}`);
    const json = (await res.json()) as { access_token?: string; expires_in?: number };
    if (!json.access_token) throw new Error('the OAuth token endpoint answered no access_token');
    this.access = { token: json.access_token, expires: Date.now() + (json.expires_in ?? 3600) * 1000 };
    return json.access_token;
  }

  async send(delivery: Delivery): Promise<DeliveryResult> {
    try {
      const token = await this.accessToken();
      const res = await fetch(this.sendUrl, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify(fcmMessage(delivery)),
      });
      const text = await res.text();
      if (res.ok) return { ok: true };
      let status = `HTTP ${res.status}`;
      let errorCode: string | undefined;
      try {
        const error = (
          JSON.parse(text) as { error?: { status?: string; details?: Array<{ errorCode?: string }> } }
        ).error;
        status = error?.status ?? status;
        errorCode = error?.details?.find((d) => d.errorCode)?.errorCode;
      } catch {
        // not JSON: keep the status
      }
      if (res.status === 401) this.access = undefined;
      const reason = errorCode ?? status;
      return { ok: false, reason, invalidToken: reason === 'UNREGISTERED' || res.status === 404 };
    } catch (err) {
      return { ok: false, reason: `ConnectionFailed: ${(err as Error).message}`, invalidToken: false };
    }
  }

  async close(): Promise<void> {}
}
