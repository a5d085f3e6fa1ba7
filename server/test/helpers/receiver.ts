import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { generate } from 'selfsigned';

export interface ReceivedCall {
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
}

/** What the receiver answers for a path: JSON, raw text, a status, after a delay. */
export interface Reply {
  status?: number;
  json?: unknown;
  raw?: string;
  delayMs?: number;
}

export interface Receiver {
  url: string;
  /** The self-signed certificate (PEM) of an HTTPS receiver. */
  cert?: string;
  calls: ReceivedCall[];
  /** Sets how a path answers (by default `{"success": true}`). */
  on(path: string, reply: (call: ReceivedCall, nth: number) => Reply): void;
  close(): Promise<void>;
}

/** A self-signed certificate for 127.0.0.1 and localhost, made in the test (no openssl). */
export async function selfSignedCertificate(): Promise<{ key: string; cert: string }> {
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    keySize: 2048,
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: true },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: 'localhost' },
          { type: 7, ip: '127.0.0.1' },
        ],
      },
    ],
  });
  return { key: pems.private, cert: pems.cert };
}

/** A real hook receiver on loopback: HTTPS with a self-signed certificate, or plain http. */
export async function startReceiver(options: { https?: boolean } = {}): Promise<Receiver> {
  const calls: ReceivedCall[] = [];
  const replies = new Map<string, (call: ReceivedCall, nth: number) => Reply>();
  const counts = new Map<string, number>();
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString();
      const call: ReceivedCall = {
        path: req.url ?? '/',
        headers: req.headers,
        body: text ? JSON.parse(text) : undefined,
      };
      calls.push(call);
      const nth = (counts.get(call.path) ?? 0) + 1;
      counts.set(call.path, nth);
      const reply = replies.get(call.path)?.(call, nth) ?? { json: { success: true } };
      const send = () => {
        if (res.destroyed) return;
        res.writeHead(reply.status ?? 200, { 'Content-Type': 'application/json' });
        res.end(reply.raw ?? JSON.stringify(reply.json));
      };
      if (reply.delayMs) setTimeout(send, reply.delayMs);
      else send();
    });
  };
  let cert: string | undefined;
  const server = options.https
    ? await selfSignedCertificate().then((pems) => {
        cert = pems.cert;
        return createHttpsServer({ key: pems.key, cert: pems.cert }, handle);
      })
    : createHttpServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${options.https ? 'https' : 'http'}://127.0.0.1:${port}`,
    cert,
    calls,
    on: (path, reply) => replies.set(path, reply),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
