/**
 * What the server says about itself (GET /serverInfo, read once per client): its version, warned
 * about once per process when older than the client's minimum, and its features block.
 */
import { environmentVariable } from '../client-mode.ts';
import type { RequestCore } from '../request-core.ts';

export const DEFAULT_MINIMUM_SERVER_VERSION = '0.1.0';

type ServerInfoAnswer = { serverVersion?: string; features?: Record<string, unknown> } | null;

function compareVersions(a: string, b: string): number {
  const pa = a.split(/[.-]/).map((x) => Number.parseInt(x, 10) || 0);
  const pb = b.split(/[.-]/).map((x) => Number.parseInt(x, 10) || 0);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

let versionWarned = false;
/** For tests: allow the one-time version warning to fire again. */
export function resetVersionWarning(): void {
  versionWarned = false;
}

export class ServerInfo {
  private answer: Promise<ServerInfoAnswer> | null = null;

  constructor(private readonly core: RequestCore) {}

  /** The answer of GET /serverInfo, asked once; `null` when unavailable. */
  read(): Promise<ServerInfoAnswer> {
    this.answer ??= this.core
      .request('GET', '/serverInfo', {}, true)
      .then((res) => {
        if (!res.success || typeof res.data !== 'object' || res.data === null) return null;
        this.checkVersion(res.data.serverVersion);
        return res.data;
      })
      .catch(() => null);
    return this.answer;
  }

  /** The features block (`{}` when unavailable). */
  async features(): Promise<Record<string, unknown>> {
    const info = await this.read();
    return (info?.features as Record<string, unknown>) ?? {};
  }

  /** Whether a dot path of the features block is on; true without server information. */
  async supports(feature: string): Promise<boolean> {
    const info = await this.read();
    if (!info?.features) return true;
    let node: unknown = info.features;
    for (const part of feature.split('.')) {
      if (node === null || typeof node !== 'object' || !(part in node)) return false;
      node = (node as Record<string, unknown>)[part];
    }
    return Boolean(node);
  }

  private checkVersion(version: unknown): void {
    if (typeof version !== 'string' || versionWarned) return;
    const options = this.core.options;
    if (options.silenceVersionWarning || environmentVariable('BDS_SILENCE_VERSION_WARNING') === '1') return;
    const minimum = options.minimumServerVersion ?? DEFAULT_MINIMUM_SERVER_VERSION;
    if (compareVersions(version, minimum) < 0) {
      versionWarned = true;
      console.warn(
        `[@bds/client] The server version ${version} is older than ${minimum}; some features may be missing. ` +
          'Set silenceVersionWarning or BDS_SILENCE_VERSION_WARNING=1 to silence this warning.',
      );
    }
  }
}
