import http2 from 'node:http2';
import { importPKCS8, SignJWT } from 'jose';
import type { Delivery, DeliveryResult, PushProvider } from './provider.ts';
import { STANDARD_KEYS } from './provider.ts';

export interface ApnsOptions {
  keyId: string;
  teamId: string;
  key: string;
  topic: string;
  production: boolean;
  url?: string;
}

/** Apple refuses a provider token older than an hour and one renewed more than every 20 minutes. */
const TOKEN_LIFETIME_MS = 40 * 60 * 1000;
/** Reasons for which the token will never work again: it is removed from its installation. */
const INVALID_TOKEN = new Set(['BadDeviceToken', 'Unregistered', 'DeviceTokenNotForTopic']);

/** The APNs payload of a push's `data`: the `aps` dictionary plus custom keys. */
export function apnsPayload(data: Record<string, unknown>): Record<string, unknown> {
  const aps: Record<string, unknown> = {};
  if (data.title !== undefined)
    aps.alert = { title: data.title, ...(data.alert !== undefined ? { body: data.alert } : {}) };
  else if (data.alert !== undefined) aps.alert = data.alert;
  if (data.badge !== undefined) aps.badge = data.badge;
  if (data.sound !== undefined) aps.sound = data.sound;
  if (data['content-available'] !== undefined)
    aps['content-available'] = Number(data['content-available']) ? 1 : 0;
  if (data.category !== undefined) aps.category = data.category;
  const payload: Record<string, unknown> = { aps };
  for (const [k, v] of Object.entries(data)) if (!STANDARD_KEYS.has(k)) payload[k] = v;
  return payload;
}

/**
 * APNs over HTTP/2 with token-based authentication (an ES256 JWT signed with the team's .p8 key),
 * one long-lived connection whose streams carry the sends.
 */
export class ApnsProvider implements PushProvider {
  readonly name = 'apns';
  private session: http2.ClientHttp2Session | undefined;
  private token: { value: string; at: number } | undefined;
  private readonly origin: string;

  constructor(private readonly options: ApnsOptions) {
    this.origin =
      options.url ??
      (options.production ? 'https://api.push.apple.com' : 'https://api.sandbox.push.apple.com');
  }

  private async providerToken(): Promise<string> {
    if (this.token && Date.now() - this.token.at < TOKEN_LIFETIME_MS) return this.token.value;
    const key = await importPKCS8(this.options.key, 'ES256');
    const value = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: this.options.keyId })
      .setIssuer(this.options.teamId)
      .setIssuedAt()
      .sign(key);
    this.token = { value, at: Date.now() };
    return value;
  }

  private connection(): http2.ClientHttp2Session {
    if (!this.session || this.session.closed || this.session.destroyed) {
      const session = http2.connect(this.origin);
      session.on('error', () => session.destroy());
      session.on('goaway', () => session.close());
      this.session = session;
    }
    return this.session;
  }

  async send(delivery: Delivery): Promise<DeliveryResult> {
    const token = await this.providerToken();
    const background = delivery.data.alert === undefined && delivery.data.title === undefined;
    const body = JSON.stringify(apnsPayload(delivery.data));
    try {
      const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
        const stream = this.connection().request({
          ':method': 'POST',
          ':path': `/3/device/${encodeURIComponent(delivery.token)}`,
          authorization: `bearer ${token}`,
          'apns-topic': this.options.topic,
          'apns-push-type': background ? 'background' : 'alert',
          'apns-priority': background ? '5' : '10',
          'apns-expiration': String(delivery.expiration ?? 0),
          'content-type': 'application/json',
        });
        let status = 0;
        let text = '';
        stream.setEncoding('utf8');
        stream.on('response', (headers) => {
          status = Number(headers[':status']);
        });
        stream.on('data', (chunk: string) => {
          text += chunk;
        });
        stream.on('end', () => resolve({ status, text }));
        stream.on('error', reject);
        stream.end(body);
      });
      if (status === 200) return { ok: true };
      let reason = `HTTP ${status}`;
      try {
        reason = (JSON.parse(text) as { reason?: string }).reason ?? reason;
      } catch {
        // not JSON: keep the status
      }
      if (reason === 'ExpiredProviderToken') this.token = undefined;
      return { ok: false, reason, invalidToken: status === 410 || INVALID_TOKEN.has(reason) };
    } catch (err) {
      return { ok: false, reason: `ConnectionFailed: ${(err as Error).message}`, invalidToken: false };
    }
  }

  async close(): Promise<void> {
    const session = this.session;
    this.session = undefined;
    if (session && !session.closed) await new Promise<void>((resolve) => session.close(() => resolve()));
  }
}
