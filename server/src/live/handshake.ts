/**
 * The connect frame: who a connection is. The application id and a client key are checked in
 * constant time (as http/credentials.ts), the right master key sets master authority once for the
 * connection, cloud code's beforeConnect runs once the keys checked out, and the session token is
 * judged after it (209). A refusal answers an error frame and closes the socket (1008).
 */
import { LiveCode, LiveText } from '@bds/client/protocol';
import type { CallerResolver } from '../auth/caller.ts';
import type { ServiceOptions } from '../config/options.ts';
import type { Caller } from '../kernel/caller.ts';
import { BdsError, ErrorCode } from '../kernel/errors.ts';
import { keyAuthority } from '../kernel/keys.ts';
import { type ClientFrame, type Connections, frameHead } from './connections.ts';
import { errorFrame, FrameError } from './frames.ts';
import type { Connection, LiveTriggers } from './model.ts';

export class Handshake {
  constructor(
    private readonly options: ServiceOptions,
    private readonly callers: CallerResolver,
    private readonly clients: Connections,
    /** Cloud code's beforeConnect (none without a cloud module). */
    private readonly triggers: LiveTriggers | undefined,
  ) {}

  /** connect: application id and client key, optional master key and session; answers `connected`. */
  async connect(conn: Connection, frame: ClientFrame): Promise<void> {
    if (conn.connected || conn.connecting)
      throw new FrameError(LiveCode.MALFORMED, LiveText.alreadyConnected);
    conn.connecting = true;
    const { options } = this;
    const refuse = (code: number, text: string) => {
      this.clients.sendError(conn, errorFrame(code, text));
      conn.ws.close(1008, text.slice(0, 120));
    };
    const authority = keyAuthority(
      {
        applicationId: stringOf(frame.applicationId),
        masterKey: stringOf(frame.masterKey),
        restAPIKey: stringOf(frame.restAPIKey),
        javascriptKey: stringOf(frame.javascriptKey),
        clientKey: stringOf(frame.clientKey),
      },
      options,
    );
    if (authority === undefined) return refuse(LiveCode.PERMISSION, LiveText.unauthorized);
    const master = authority === 'master';
    const sessionToken = stringOf(frame.sessionToken) || undefined;
    const installationId = stringOf(frame.installationId) || null;
    let caller: Caller | undefined;
    let sessionInvalid = false;
    if (sessionToken !== undefined && !master) {
      try {
        caller = await this.callers.resolve({ master: false, sessionToken, installationId });
      } catch (err) {
        if (!(err instanceof BdsError && err.code === ErrorCode.INVALID_SESSION_TOKEN)) {
          conn.connecting = false;
          throw err;
        }
        sessionInvalid = true;
      }
    }
    // Cloud code's beforeConnect, once the keys checked out and before any other check passes (as
    // the incumbent, it also sees a session token that does not resolve, without a user): a throw
    // refuses the connection with its code (141) and text.
    if (this.triggers?.hasBeforeConnect()) {
      caller ??= await this.callers.resolve({ master, installationId });
      try {
        await this.triggers.beforeConnect(
          { caller, context: {}, ip: conn.ip },
          {
            installationId,
            useMasterKey: master,
            clientKey:
              stringOf(frame.clientKey) ?? stringOf(frame.javascriptKey) ?? stringOf(frame.restAPIKey),
            sessionToken,
          },
        );
      } catch (err) {
        if (err instanceof BdsError) return refuse(err.code, err.message);
        conn.connecting = false;
        throw err;
      }
    }
    if (sessionInvalid) return refuse(LiveCode.INVALID_SESSION, LiveText.invalidSession);
    if (conn.closed || conn.connected) return;
    conn.connected = true;
    conn.master = master;
    conn.sessionToken = sessionToken;
    conn.installationId = installationId;
    this.clients.send(conn, { op: 'connected', ...frameHead(conn) });
  }
}

function stringOf(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}
