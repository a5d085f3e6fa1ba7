import { type Client, createClient } from '@bds/client';
import { consoleCallerFetch } from './console-caller.ts';
import type { AppRegistry, AppSummary } from './context.ts';
import type { AppConfig, ParseSourceConfig } from './options.ts';

/**
 * One client library instance per configured app, holding its master key. Keys never leave this
 * module except through `secrets()` (leak scans and log redaction).
 */
export function createAppRegistry(apps: AppConfig[]): AppRegistry {
  const entries = new Map<
    string,
    { summary: AppSummary; client: Client; parseSources: ParseSourceConfig[] }
  >();
  const secrets = new Set<string>();
  for (const app of apps) {
    const client = createClient({
      serverURL: app.serverURL.replace(/\/+$/, ''),
      applicationId: app.appId,
      masterKey: app.masterKey,
      restAPIKey: app.restAPIKey,
      javaScriptKey: app.javascriptKey,
      clientKey: app.clientKey,
      silenceVersionWarning: true,
      // Names the console user on master-key calls (console-caller.ts).
      fetch: consoleCallerFetch,
    });
    entries.set(app.id, {
      summary: { id: app.id, name: app.name ?? app.id, serverURL: app.serverURL },
      client,
      parseSources: app.parseSources,
    });
    for (const key of [app.masterKey, app.restAPIKey, app.javascriptKey, app.clientKey, app.webhookKey]) {
      if (key) secrets.add(key);
    }
    for (const source of app.parseSources) {
      secrets.add(source.masterKey);
      if (source.postgresURL) secrets.add(source.postgresURL);
    }
  }
  return {
    list: () => [...entries.values()].map((e) => ({ ...e.summary })),
    has: (appId) => entries.has(appId),
    clientFor(appId) {
      const entry = entries.get(appId);
      if (!entry) throw new Error(`unknown app "${appId}"`);
      return entry.client;
    },
    parseSources: (appId) => entries.get(appId)?.parseSources ?? [],
    secrets: () => [...secrets],
  };
}
