/**
 * Process-wide client mode: in client mode no master-key header is ever sent, whatever a client or
 * a call asks for (docs/protocol.md#client-library-conventions).
 */

let clientModeFlag: boolean | undefined;

/** An environment variable of the process; undefined in browsers, which have none. */
export function environmentVariable(name: string): string | undefined {
  const proc = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  return proc?.env?.[name];
}

/** In client mode no master-key header is ever sent, whatever a client or a call asks for. */
export function setClientMode(on: boolean): void {
  clientModeFlag = on;
}

export function isClientMode(): boolean {
  return clientModeFlag ?? environmentVariable('BDS_CLIENT_MODE') === 'true';
}
