// Node entry: realtime uses the global WebSocket when the runtime has one (Node 22+), else the `ws` package.
import { installWebSocketFallback, type WebSocketConstructor } from './realtime/socket.ts';

installWebSocketFallback(async () => {
  const mod = await import('ws');
  return (mod.WebSocket ?? mod.default) as unknown as WebSocketConstructor;
});
