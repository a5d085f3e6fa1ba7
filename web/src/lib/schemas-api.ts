/**
 * The app's class schemas as the bff answers them (`GET /bff/apps/:appId/schemas`): read by the
 * data browser, the access tab and the realtime inspector.
 */
import { apiFetch, seg } from './api.ts';
import type { SchemaDoc } from './wire.ts';

export const fetchSchemas = (appId: string, signal?: AbortSignal) =>
  apiFetch<{ results: SchemaDoc[] }>(`/apps/${seg(appId)}/schemas`, { method: 'GET', signal });
