import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Secret, TOTP } from 'otpauth';
import { type Bff, type BffOptionsInput, createBff } from '../../bff/src/index.ts';
import type { ParseSourceConfig } from '../../bff/src/options.ts';
import { hashPassword } from '../../bff/src/passwords.ts';
import { createService, type Service } from '../../server/src/index.ts';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The built SPA; E2E_WEB_DIST points elsewhere (a separate build per parallel worker). */
export const WEB_DIST = process.env.E2E_WEB_DIST
  ? path.resolve(process.env.E2E_WEB_DIST)
  : path.join(ROOT, 'web', 'dist');
export const APP_ID = 'e2e-app';
export const PASSWORD = 'e2e correct horse battery';
export const MFA_SECRET = 'JBSWY3DPEHPK3PXPJBSWY3DP';

export interface Product {
  /** The console (bff + SPA): http://127.0.0.1:<port> */
  url: string;
  /** The service's REST base: http://127.0.0.1:<port>/api */
  serviceUrl: string;
  appId: string;
  /** The in-process service (e.g. to seed many rows fast through service.core.store). */
  service: Service;
  /** The console's data dir (its sessions, audit log and console users file). */
  consoleDataDir: string;
  /** Every configured key value: none may ever reach the browser. */
  secrets: { masterKey: string; restAPIKey: string; javascriptKey: string };
  /** A REST call to the service with the master key (to check what the console did). */
  rest(
    method: string,
    p: string,
    body?: unknown,
    as?: 'master' | 'rest',
  ): Promise<{ status: number; json: any }>;
  totp(): string;
  close(): Promise<void>;
}

/** `npm test` builds the SPA first; a lone run of the e2e suite builds it when it is missing. */
function ensureBuilt(): void {
  if (existsSync(path.join(WEB_DIST, 'index.html'))) return;
  execFileSync(
    process.execPath,
    [path.join(ROOT, 'node_modules/vite/bin/vite.js'), 'build', '--logLevel', 'warn', '--outDir', WEB_DIST],
    {
      cwd: path.join(ROOT, 'web'),
      stdio: 'inherit',
    },
  );
}

/** Starts the real service and the bff (serving the built SPA) on free ports with a fresh data dir. */
export async function startProduct(
  opts: {
    bff?: Partial<BffOptionsInput>;
    service?: Record<string, unknown>;
    /** The parse-servers the first app may import from (bff option `apps[].parseSources`). */
    parseSources?: ParseSourceConfig[];
  } = {},
): Promise<Product> {
  ensureBuilt();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'bds-e2e-'));
  const secrets = {
    masterKey: `e2e-master-${randomBytes(16).toString('hex')}`,
    restAPIKey: `e2e-rest-${randomBytes(16).toString('hex')}`,
    javascriptKey: `e2e-js-${randomBytes(16).toString('hex')}`,
  };
  const serviceAppId = 'e2e-service-app';
  let service: Service | undefined;
  let bff: Bff | undefined;
  try {
    service = await createService({
      appId: serviceAppId,
      ...secrets,
      dataDir: path.join(dataDir, 'service'),
      port: 0,
      host: '127.0.0.1',
      ...opts.service,
    });
    const { url: serviceUrl } = await service.listen(0, '127.0.0.1');
    const hash = await hashPassword(PASSWORD);
    bff = await createBff({
      port: 0,
      host: '127.0.0.1',
      dataDir: path.join(dataDir, 'console'),
      apps: [
        {
          id: APP_ID,
          name: 'E2E app',
          serverURL: serviceUrl,
          appId: serviceAppId,
          ...secrets,
          ...(opts.parseSources ? { parseSources: opts.parseSources } : {}),
        },
        { id: 'second-app', name: 'Second app', serverURL: serviceUrl, appId: serviceAppId, ...secrets },
      ],
      consoleUsers: [
        { username: 'admin', passwordHash: hash, role: 'admin' },
        { username: 'viewer', passwordHash: hash, role: 'read-only' },
        { username: 'mfa', passwordHash: hash, role: 'admin', mfaSecret: MFA_SECRET },
      ],
      logLevel: 'silent',
      webDist: WEB_DIST,
      ...opts.bff,
    });
    const { url } = await bff.listen(0, '127.0.0.1');
    const headers = (as: 'master' | 'rest'): Record<string, string> => ({
      'X-Backend-Application-Id': serviceAppId,
      ...(as === 'master'
        ? { 'X-Backend-Master-Key': secrets.masterKey }
        : { 'X-Backend-REST-API-Key': secrets.restAPIKey }),
    });
    const s = service;
    const b = bff;
    return {
      url,
      serviceUrl,
      appId: APP_ID,
      service: s,
      consoleDataDir: path.join(dataDir, 'console'),
      secrets,
      async rest(method, p, body, as = 'master') {
        const res = await fetch(`${serviceUrl}${p}`, {
          method,
          headers: { ...headers(as), ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const text = await res.text();
        return { status: res.status, json: text ? JSON.parse(text) : undefined };
      },
      totp: () => new TOTP({ secret: Secret.fromBase32(MFA_SECRET), digits: 6, period: 30 }).generate(),
      async close() {
        await b.close();
        await s.close();
        rmSync(dataDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await bff?.close();
    await service?.close();
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
}
