/**
 * The realtime inspector's stream: server-sent events from the bff (`/bff/apps/:appId/realtime/
 * stream`), which holds the WebSocket to the service. The URL carries only the class, the where,
 * the viewpoint and a user id: no key, no session token.
 */
import { bffUrl, seg } from './api.ts';

export type Viewpoint = 'master' | 'anonymous' | 'user';
export type LiveKind = 'create' | 'update' | 'delete' | 'enter' | 'leave';
export type EventKind = LiveKind | 'filtered';
export type Row = Record<string, unknown> & { objectId?: string };

export interface StreamSpec {
  appId: string;
  className: string;
  where: Record<string, unknown>;
  viewpoint: Viewpoint;
  userId?: string;
}

export interface InspectorEvent {
  /** Local order of arrival. */
  seq: number;
  kind: EventKind;
  /** When the bff received it (live) or the service decided it (filtered). */
  time: string;
  eventId?: string;
  objectId: string;
  object?: Row;
  original?: Row;
  /** For `filtered`: the check of the delivery trace that filtered it, and the event's kind. */
  reason?: string;
  op?: string;
}

export interface StreamHandlers {
  onReady(info: { clientId?: number; inspectionSession?: string }): void;
  onEvent(ev: Omit<InspectorEvent, 'seq'>): void;
  onFail(error: string): void;
}

export function streamUrl(spec: StreamSpec): string {
  return bffUrl(`/apps/${seg(spec.appId)}/realtime/stream`, {
    className: spec.className,
    where: Object.keys(spec.where).length ? JSON.stringify(spec.where) : undefined,
    viewpoint: spec.viewpoint,
    userId: spec.viewpoint === 'user' ? spec.userId : undefined,
  });
}

const parse = (e: MessageEvent): Record<string, unknown> | null => {
  try {
    return JSON.parse(String(e.data));
  } catch {
    return null;
  }
};

/** Opens the stream; returns the function that closes it (the bff then ends its subscription). */
export function openStream(spec: StreamSpec, h: StreamHandlers): () => void {
  const es = new EventSource(streamUrl(spec), { withCredentials: false });
  let closed = false;
  const close = () => {
    closed = true;
    es.close();
  };
  es.addEventListener('ready', (e) => {
    const d = parse(e as MessageEvent);
    if (d) h.onReady(d as { clientId?: number; inspectionSession?: string });
  });
  es.addEventListener('live', (e) => {
    const d = parse(e as MessageEvent);
    if (!d) return;
    const object = (d.object ?? {}) as Row;
    h.onEvent({
      kind: d.op as LiveKind,
      time: String(d.at ?? new Date().toISOString()),
      eventId: typeof d.eventId === 'string' ? d.eventId : undefined,
      objectId: String(object.objectId ?? ''),
      object,
      original: d.original as Row | undefined,
    });
  });
  es.addEventListener('filtered', (e) => {
    const d = parse(e as MessageEvent);
    if (!d) return;
    h.onEvent({
      kind: 'filtered',
      time: String(d.at ?? new Date().toISOString()),
      eventId: String(d.eventId ?? ''),
      objectId: String(d.objectId ?? ''),
      reason: String(d.reason ?? 'unknown'),
      op: String(d.op ?? ''),
    });
  });
  es.addEventListener('fail', (e) => {
    const d = parse(e as MessageEvent);
    close();
    h.onFail(d ? `Error ${d.code}: ${d.error}` : 'The stream failed.');
  });
  es.onerror = () => {
    if (closed) return;
    // CONNECTING: the browser reconnects by itself; CLOSED: refused (logged out, no access).
    if (es.readyState === EventSource.CLOSED) {
      closed = true;
      h.onFail('The stream was refused or ended (is the console session still open?).');
    }
  };
  return close;
}
