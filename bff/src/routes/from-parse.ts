import {
  ErrorCode,
  FROM_PARSE_PATH,
  type FromParseRun,
  type FromParseStart,
  type ParseImportSource,
} from '@bds/client/protocol';
import type express from 'express';
import { z } from 'zod';
import type { BffContext } from '../context.ts';
import { type AppScope, appRoute, BffError, bodyOf, errorAnswer, param, parse, unwrap } from './http.ts';

/**
 * Imports from a running parse-server (docs/transfer.md, "From the console"): the service's
 * master-only routes proxied, and ONE audit entry per import (`app.importFromParse`, the incumbent's
 * URL as target) holding what was asked and how it ended. The bff follows each import it started
 * to its end, so the entry is written whether or not a console stays open. The incumbents come
 * from the bff's option `apps[].parseSources`: the console names one, and its master key and
 * database URL go from here to the service only, so no browser ever holds them (and a console user
 * cannot point the service at an arbitrary URL).
 *
 *   GET  /apps/:appId/transfer/parse-sources   the configured sources, without keys
 *   POST /apps/:appId/transfer/parse           start from a source (202, the run)
 *   GET  /apps/:appId/transfer/parse/:name     its progress per class, then its summary
 */

/** How often the bff asks the service about an import it follows. */
export const FOLLOW_MS = 1000;
/** Failed looks in a row (the service away) after which the entry is written without a summary. */
const FOLLOW_FAILURES = 30;

const startBody = z.strictObject({
  source: z.string().min(1).max(64),
  sessions: z.boolean().optional(),
});

const runPath = (id: string) => `${FROM_PARSE_PATH}/${encodeURIComponent(id)}`;

export function registerFromParseRoutes(router: express.Router, ctx: BffContext): void {
  const base = '/apps/:appId/transfer/parse';

  router.get(
    '/apps/:appId/transfer/parse-sources',
    appRoute(ctx, {}, async (s) => ({
      results: ctx.apps.parseSources(s.appId).map(
        (source): ParseImportSource => ({
          name: source.name,
          serverURL: source.serverURL,
          appId: source.appId,
          postgres: source.postgresURL !== undefined,
        }),
      ),
    })),
  );

  router.post(
    base,
    appRoute(ctx, { write: true, status: 202 }, async (s) => {
      const asked = parse(startBody, bodyOf(s.req), 'import from parse-server');
      const source = ctx.apps.parseSources(s.appId).find((c) => c.name === asked.source);
      if (!source) {
        throw new BffError(
          404,
          ErrorCode.OBJECT_NOT_FOUND,
          `No import source ${asked.source} is configured.`,
        );
      }
      const body: FromParseStart = {
        serverURL: source.serverURL,
        appId: source.appId,
        masterKey: source.masterKey,
        ...(source.postgresURL !== undefined ? { postgresURL: source.postgresURL } : {}),
        ...(asked.sessions !== undefined ? { sessions: asked.sessions } : {}),
      };
      const run = unwrap(
        await s.client.request<FromParseRun>('POST', FROM_PARSE_PATH, { useMasterKey: true, body }),
      );
      follow(s, source.name, run);
      return run;
    }),
  );

  router.get(
    `${base}/:name`,
    appRoute(ctx, {}, async (s) => {
      const id = param(s.req, 'name');
      if (id === '') throw new BffError(404, ErrorCode.OBJECT_NOT_FOUND, 'No such import.');
      return unwrap(await s.client.request<FromParseRun>('GET', runPath(id), { useMasterKey: true }));
    }),
  );
}

/** Asks the service about a run until it ends, then records its one audit entry. */
function follow(s: AppScope, source: string, started: FromParseRun): void {
  const asked = {
    source,
    serverURL: started.serverURL,
    appId: started.appId,
    sessions: started.sessions,
    postgres: started.postgres,
  };
  const record = (after: Record<string, unknown>) =>
    s.audit('app.importFromParse', started.serverURL, null, {
      ...asked,
      id: started.id,
      startedAt: started.startedAt,
      ...after,
    });
  let failures = 0;
  const look = async () => {
    try {
      const run = unwrap(
        await s.client.request<FromParseRun>('GET', runPath(started.id), { useMasterKey: true }),
      );
      failures = 0;
      if (run.status === 'running') return later();
      record({ status: run.status, finishedAt: run.finishedAt, summary: run.summary, error: run.error });
    } catch (err) {
      if (++failures < FOLLOW_FAILURES) return later();
      record({
        status: 'unknown',
        finishedAt: null,
        summary: null,
        error: `The console lost the import: ${errorAnswer(err).error}`,
      });
    }
  };
  const later = () => {
    setTimeout(() => void look(), FOLLOW_MS).unref?.();
  };
  later();
}
