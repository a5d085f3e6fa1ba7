// The package's public API. Modules are listed by name so that a helper of one of them (an
// internal function) is not exported by accident.
export { Client, createClient } from './client.ts';
export { isClientMode, setClientMode } from './client-mode.ts';
export * from './errors.ts';
export * from './model.ts';
export * from './objects.ts';
export {
  type AuthOptions,
  type ClientOptions,
  checkAuthOptions,
  type Failure,
  type FileBody,
  type LogEntry,
  type RequestOptions,
  type ResolvedAuth,
  type Result,
  type Success,
} from './options.ts';
export type { JobStatus } from './protocol/hooks.ts';
export { RealtimeConnection } from './realtime/connection.ts';
export { scrubFrame } from './realtime/frame-log.ts';
export {
  type BackoffOptions,
  backoffDelay,
  DEFAULT_BACKOFF,
  defaultLiveURL,
  installWebSocketFallback,
  type Timers,
  type WebSocketConstructor,
  type WebSocketLike,
} from './realtime/socket.ts';
export { Subscription } from './realtime/subscription.ts';
export {
  disableRealtime,
  enableRealtime,
  isRealtimeEnabled,
  REALTIME_WARNINGS,
  resetRealtimeWarnings,
} from './realtime/switch.ts';
export type {
  ConnectionEvents,
  LiveEvent,
  LiveEventKind,
  LiveObject,
  LiveQuerySpec,
  RealtimeOptions,
  SubscribeOptions,
  SubscriptionEvents,
} from './realtime/types.ts';
export * from './scrub.ts';
export {
  BATCH_SEGMENT,
  type BatchItem,
  type BatchRequest,
  type QueryParams,
} from './services/records.ts';
export { DEFAULT_MINIMUM_SERVER_VERSION, resetVersionWarning } from './services/server-info.ts';
export { currentSessionToken, withCacheTenant, withScope, withSession } from './session-scope.ts';
export * from './wire.ts';
