import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { rootCertificates } from 'node:tls';
import { HEADERS, isObject } from '@bds/client/protocol';
import { OptionError, type ServiceOptions } from '../config/options.ts';

/** How a call to a hook receiver ended, when it did not answer `{success}` or `{error}`. */
export type TransportFailure = 'timeout' | 'unreachable' | 'garbage' | 'http' | 'refused';

/** A receiver's answer: `{success: value}` or `{error: text}` (docs/protocol.md#hook-calls). */
export type HookAnswer =
  | { ok: true; value: unknown; status: number }
  | { ok: false; error: string; status: number };

/** The call did not produce an answer of the protocol: the text says what happened, never a stack. */
export class HookTransportError extends Error {
  constructor(
    readonly failure: TransportFailure,
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/** Where a receiver lives, for messages: scheme, host and path; never a query (it may hold a token). */
export function describeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return 'the receiver';
  }
}

/** Reads `hooks.trustedCA`: PEM text, or a path to a PEM file. */
export function loadTrustedCA(value: string | undefined): string | undefined {
  if (!value) return undefined;
  if (value.includes('-----BEGIN CERTIFICATE-----')) return value;
  try {
    const text = readFileSync(value, 'utf8');
    if (!text.includes('-----BEGIN CERTIFICATE-----')) throw new Error('the file holds no PEM certificate');
    return text;
  } catch (err) {
    throw new OptionError('hooks.trustedCA', `cannot read ${value}: ${(err as Error).message}`);
  }
}

const MAX_ANSWER_BYTES = 10 * 1024 * 1024;

/**
 * Posts JSON to hook receivers: HTTPS (plain http only with `hooks.allowInsecureUrls`), the system
 * CAs plus `hooks.trustedCA`, the webhook key header, and a timeout for the whole call.
 */
export class HookClient {
  private readonly agent: https.Agent;

  constructor(private readonly options: ServiceOptions) {
    const extra = loadTrustedCA(options.hooks.trustedCA);
    this.agent = new https.Agent({ keepAlive: true, ca: extra ? [...rootCertificates, extra] : undefined });
  }

  /** Whether a receiver URL may be registered: https, or http when insecure URLs are allowed. */
  urlProblem(url: unknown): string | undefined {
    if (typeof url !== 'string' || url === '') return 'url must be a string.';
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return `url is not a valid URL: ${JSON.stringify(url)}.`;
    }
    if (parsed.protocol === 'https:') return undefined;
    if (parsed.protocol === 'http:' && this.options.hooks.allowInsecureUrls) return undefined;
    if (parsed.protocol === 'http:') {
      return 'url must use https (plain http needs the option hooks.allowInsecureUrls).';
    }
    return `url must use https, not ${parsed.protocol.replace(':', '')}.`;
  }

  /**
   * One call. A URL that may not be registered (plain http without `hooks.allowInsecureUrls`, a
   * row stored before the rules or by an older version) is refused here too: nothing is sent.
   */
  async post(url: string, body: unknown): Promise<HookAnswer> {
    const problem = this.urlProblem(url);
    if (problem) {
      throw new HookTransportError('refused', `The webhook ${describeUrl(url)} was not called: ${problem}`);
    }
    const payload = JSON.stringify(body);
    const headers: Record<string, string | number> = {
      'Content-Type': 'application/json',
      'Content-Length': Buffer.byteLength(payload),
    };
    if (this.options.webhookKey) headers[HEADERS.webhookKey] = this.options.webhookKey;
    const where = describeUrl(url);
    const { status, text } = await this.send(url, 'POST', headers, payload, `The webhook ${where}`);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    if (isObject(json) && 'success' in json && status >= 200 && status < 300) {
      return { ok: true, value: json.success, status };
    }
    if (isObject(json) && typeof json.error === 'string') return { ok: false, error: json.error, status };
    if (status >= 300) {
      throw new HookTransportError('http', `The webhook ${where} answered HTTP ${status}.`, status);
    }
    throw new HookTransportError(
      'garbage',
      `The webhook ${where} answered something other than {"success": …} or {"error": "…"}.`,
      status,
    );
  }

  /**
   * Any other outgoing call of cloud code (`Parse.Cloud.httpRequest`, docs/cloud.md): by the same
   * rules as a webhook call (the URL rule, the CAs, the timeout, the answer's size), without the
   * webhook key. Answers the status, headers and body; a refused URL sends nothing.
   */
  async request(
    url: string,
    method: string,
    headers: Record<string, string | number>,
    body: string | Buffer | undefined,
  ): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
    const problem = this.urlProblem(url);
    if (problem) {
      throw new HookTransportError('refused', `The request to ${describeUrl(url)} was not sent: ${problem}`);
    }
    return this.send(url, method, headers, body, `The request to ${describeUrl(url)}`);
  }

  private send(
    url: string,
    method: string,
    headers: Record<string, string | number>,
    payload: string | Buffer | undefined,
    who: string,
  ): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
    const target = new URL(url);
    const timeoutMs = this.options.hooks.timeoutMs;
    return new Promise((resolve, reject) => {
      const lib = target.protocol === 'https:' ? https : http;
      const req = lib.request(
        target,
        {
          method,
          headers,
          agent: target.protocol === 'https:' ? this.agent : undefined,
          signal: AbortSignal.timeout(timeoutMs),
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > MAX_ANSWER_BYTES) {
              req.destroy();
              reject(new HookTransportError('garbage', `${who} answered more than 10 MB.`));
              return;
            }
            chunks.push(chunk);
          });
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              text: Buffer.concat(chunks).toString(),
            }),
          );
          res.on('error', reject);
        },
      );
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (err.name === 'AbortError' || err.name === 'TimeoutError') {
          reject(new HookTransportError('timeout', `${who} did not answer within ${timeoutMs} ms.`));
        } else if (err instanceof HookTransportError) {
          reject(err);
        } else {
          const reason = err.code ?? err.message;
          reject(new HookTransportError('unreachable', `${who} is unreachable (${reason}).`));
        }
      });
      req.end(payload);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
