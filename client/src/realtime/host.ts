/**
 * What a realtime connection needs from the client that opens it. The connection depends on this
 * interface rather than on the Client class, so that the client can compose its connections
 * without the two modules importing each other.
 */
import type { AuthOptions, ClientOptions, ResolvedAuth } from '../options.ts';

export interface RealtimeHost {
  readonly serverURL: string;
  readonly applicationId: string;
  readonly options: Readonly<ClientOptions>;
  /** True when a master key is configured and client mode is off (asked again at every connect). */
  readonly canUseMasterKey: boolean;
  /** The credential a call with these options sends (the client's resolution order). */
  resolveAuth(options: AuthOptions, defaultMaster?: boolean): ResolvedAuth;
  /** Whether the server's features block turns `feature` on. */
  serverSupports(feature: string): Promise<boolean>;
}
