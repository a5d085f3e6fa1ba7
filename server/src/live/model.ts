/**
 * What realtime keeps, with no behaviour: a client's connection, its subscriptions, and what a
 * subscription holds once its query is checked and compiled for its caller; and what realtime is
 * given (its options, cloud code's realtime triggers). Every part of live/ works on these records
 * (connections.ts, prepare.ts, registry.ts, fan-out.ts); none owns them.
 */
import type { RequestId } from '@bds/client/protocol';
import type { WebSocket } from 'ws';
import type { CloudTriggers } from '../cloud/triggers.ts';
import type { ServiceOptions } from '../config/options.ts';
import type { Caller } from '../kernel/caller.ts';
import type { QueryNode } from '../kernel/query.ts';
import type { ClassSchema } from '../kernel/schema.ts';
import type { FindQuery } from '../kernel/triggers.ts';
import type { RowMatcher } from '../query/match.ts';
import type { IndexSpec } from './class-index.ts';
import type { SubscriptionRequest } from './frames.ts';

export type LiveOptions = ServiceOptions['liveQuery'];

/** The realtime triggers of cloud code (cloud/triggers.ts): beforeConnect, beforeSubscribe and afterLiveQueryEvent. */
export type LiveTriggers = Pick<
  CloudTriggers,
  | 'hasBeforeConnect'
  | 'beforeConnect'
  | 'hasBeforeSubscribe'
  | 'beforeSubscribe'
  | 'hasAfterLiveQueryEvent'
  | 'afterLiveQueryEvent'
>;

export interface Connection {
  /** The clientId of its frames. */
  readonly id: number;
  readonly ws: WebSocket;
  connected: boolean;
  /** Master authority, set once by a connect frame with the right master key. */
  master: boolean;
  sessionToken: string | undefined;
  installationId: string | null;
  /** The client's address at the upgrade (kernel/client-address.ts); cloud code sees it as `request.ip`. */
  readonly ip: string | null;
  /** By requestId: pending (being prepared) and active subscriptions. */
  readonly subs: Map<RequestId, Subscription>;
  lastFrameAt: number;
  /** Whether it answered the last ping (the heartbeat terminates one that did not). */
  alive: boolean;
  closed: boolean;
  /** Frames of a connection are handled one after the other, so its answers come in frame order. */
  frameQueue: Promise<void>;
  connecting: boolean;
}

/** What a subscription holds once its query is checked for its caller. */
export interface CompiledSubscription {
  /** As the class's beforeFind answered it at subscribe, when the class has one. */
  request: SubscriptionRequest;
  caller: Caller;
  /** When the caller's session expires (Infinity: never, or no session). */
  expiresAt: number;
  /** The where as parsed (re-secured when the caller changes). */
  parsed: QueryNode;
  /** What the class's beforeFind answered at subscribe (the snapshot runs it, not the trigger again). */
  answered: FindQuery | undefined;
  /** Schema the matchers were compiled for; recompiled when the class's schema changes. */
  schema: ClassSchema | undefined;
  matcher: RowMatcher;
  /** The class-level row condition (pointer permissions), compiled; null when none. */
  clpMatcher: RowMatcher | null;
  /** The equality of the where the subscription is indexed by (null: a candidate for every event). */
  index: IndexSpec | null;
}

export interface Subscription {
  readonly conn: Connection;
  readonly requestId: RequestId;
  /** Set once prepared; replaced by an update, a caller that moved or a schema change. */
  compiled: CompiledSubscription | undefined;
  /** The token the caller was resolved from (null: anonymous or master). */
  token: string | null;
  /** The caller generation it was resolved at (registry.ts). */
  generation: number;
  active: boolean;
  ended: boolean;
  /** Where it sits in its class's index (kept by ClassSubscriptions). */
  indexedAs: IndexSpec | null;
  groupedAs: Caller | null;
  ordinal: number;
  /** The seq of the last event it was found a candidate for. */
  candidateOf: number;
}
