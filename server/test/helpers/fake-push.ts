import { generateKeyPairSync } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { importSPKI, jwtVerify } from 'jose';

/**
 * Local stand-ins for APNs and FCM, written against their published wire formats: they check the
 * credentials the service must send (an ES256 provider token for APNs; an OAuth token obtained
 * with an RS256 service-account assertion for FCM) and answer like the real ones. Tokens starting
 * with `bad` are unknown to the provider (APNs 410 Unregistered, FCM 404 UNREGISTERED).
 */
export interface FakeSend {
  provider: 'apns' | 'fcm';
  token: string;
  headers: Record<string, string>;
  body: any;
}

export interface FakePush {
  /** The `push` service option pointing at the fakes. */
  options: Record<string, unknown>;
  sends: FakeSend[];
  /** Requests refused for bad credentials. */
  refused: number;
  /** The most sends (both providers) that were in flight at once since the start or `resetPeak`. */
  readonly peakInFlight: number;
  resetPeak(): void;
  close(): Promise<void>;
}

const TEAM_ID = 'TEAM123456';
const KEY_ID = 'KEY1234567';
const CLIENT_EMAIL = 'push@fake-project.iam.gserviceaccount.com';

export async function startFakePush(opts: { delayMs?: number } = {}): Promise<FakePush> {
  const apnsKeys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const fcmKeys = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const apnsPublic = await importSPKI(
    apnsKeys.publicKey.export({ type: 'spki', format: 'pem' }) as string,
    'ES256',
  );
  const fcmPublic = await importSPKI(
    fcmKeys.publicKey.export({ type: 'spki', format: 'pem' }) as string,
    'RS256',
  );
  const sends: FakeSend[] = [];
  const state = { refused: 0, inFlight: 0, peak: 0 };
  const accessTokens = new Set<string>();
  const verifiedTokens = new Set<string>();
  const delay = () => (opts.delayMs ? new Promise((r) => setTimeout(r, opts.delayMs)) : Promise.resolve());
  /** Holds a send for `delayMs`, counting the sends in flight meanwhile. */
  const wait = async () => {
    state.inFlight++;
    state.peak = Math.max(state.peak, state.inFlight);
    try {
      await delay();
    } finally {
      state.inFlight--;
    }
  };

  const apns = http2.createServer();
  apns.on('stream', (stream, headers) => {
    let text = '';
    stream.setEncoding('utf8');
    stream.on('data', (c: string) => {
      text += c;
    });
    stream.on('end', async () => {
      const answer = (status: number, body?: unknown) => {
        stream.respond({ ':status': status, 'apns-id': 'fake-apns-id', 'content-type': 'application/json' });
        stream.end(body === undefined ? undefined : JSON.stringify(body));
      };
      const auth = String(headers.authorization ?? '').replace(/^bearer /, '');
      try {
        // A provider token is reused for many sends (as Apple asks): verified once.
        if (!verifiedTokens.has(auth)) {
          const { payload, protectedHeader } = await jwtVerify(auth, apnsPublic, {
            issuer: TEAM_ID,
            algorithms: ['ES256'],
          });
          if (protectedHeader.kid !== KEY_ID || typeof payload.iat !== 'number') throw new Error('claims');
          verifiedTokens.add(auth);
        }
      } catch {
        state.refused++;
        answer(403, { reason: 'InvalidProviderToken' });
        return;
      }
      const path = String(headers[':path']);
      const token = decodeURIComponent(path.replace(/^\/3\/device\//, ''));
      if (
        headers[':method'] !== 'POST' ||
        !path.startsWith('/3/device/') ||
        headers['apns-topic'] !== 'com.example.app'
      ) {
        answer(400, { reason: 'BadPath' });
        return;
      }
      await wait();
      sends.push({
        provider: 'apns',
        token,
        headers: headers as Record<string, string>,
        body: JSON.parse(text),
      });
      if (token.startsWith('bad')) answer(410, { reason: 'Unregistered', timestamp: Date.now() });
      else answer(200);
    });
  });
  await new Promise<void>((resolve) => apns.listen(0, '127.0.0.1', resolve));

  const fcm: Server = createServer((req, res) => {
    let text = '';
    req.on('data', (c) => {
      text += c;
    });
    req.on('end', async () => {
      const json = (status: number, body: unknown) => {
        res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
      };
      if (req.url === '/token') {
        const form = new URLSearchParams(text);
        try {
          const { payload } = await jwtVerify(form.get('assertion') ?? '', fcmPublic, {
            issuer: CLIENT_EMAIL,
            audience: `${fcmBase}/token`,
          });
          if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer')
            throw new Error('grant');
          if (payload.scope !== 'https://www.googleapis.com/auth/firebase.messaging')
            throw new Error('scope');
        } catch {
          state.refused++;
          json(400, { error: 'invalid_grant' });
          return;
        }
        const token = `ya29.fake-${accessTokens.size}`;
        accessTokens.add(token);
        json(200, { access_token: token, expires_in: 3599, token_type: 'Bearer' });
        return;
      }
      if (req.url !== '/v1/projects/fake-project/messages:send' || req.method !== 'POST') {
        json(404, { error: { code: 404, status: 'NOT_FOUND', message: 'no such method' } });
        return;
      }
      if (!accessTokens.has(String(req.headers.authorization ?? '').replace(/^Bearer /, ''))) {
        state.refused++;
        json(401, { error: { code: 401, status: 'UNAUTHENTICATED', message: 'bad token' } });
        return;
      }
      const body = JSON.parse(text);
      await wait();
      sends.push({
        provider: 'fcm',
        token: body.message.token,
        headers: req.headers as Record<string, string>,
        body,
      });
      if (String(body.message.token).startsWith('bad')) {
        json(404, {
          error: {
            code: 404,
            status: 'NOT_FOUND',
            message: 'Requested entity was not found.',
            details: [
              { '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode: 'UNREGISTERED' },
            ],
          },
        });
        return;
      }
      json(200, { name: `projects/fake-project/messages/${sends.length}` });
    });
  });
  await new Promise<void>((resolve) => fcm.listen(0, '127.0.0.1', resolve));
  const fcmBase = `http://127.0.0.1:${(fcm.address() as AddressInfo).port}`;

  return {
    sends,
    get refused() {
      return state.refused;
    },
    get peakInFlight() {
      return state.peak;
    },
    resetPeak() {
      state.peak = state.inFlight;
    },
    options: {
      apns: {
        keyId: KEY_ID,
        teamId: TEAM_ID,
        key: apnsKeys.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
        topic: 'com.example.app',
        url: `http://127.0.0.1:${(apns.address() as AddressInfo).port}`,
      },
      fcm: {
        projectId: 'fake-project',
        clientEmail: CLIENT_EMAIL,
        privateKey: fcmKeys.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
        url: fcmBase,
        tokenUrl: `${fcmBase}/token`,
      },
    },
    async close() {
      await new Promise<void>((resolve) => apns.close(() => resolve()));
      fcm.closeAllConnections();
      await new Promise<void>((resolve) => fcm.close(() => resolve()));
    },
  };
}
