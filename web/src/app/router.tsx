import { lazy } from 'react';
import { createBrowserRouter, Navigate } from 'react-router';
import AppShell from './routes/app-shell.tsx';
import { ComingSoon } from './routes/coming-soon.tsx';
import { RequireSession } from './routes/require-session.tsx';
import { RouteError } from './routes/route-error.tsx';
import { SECTIONS } from './sections.ts';

// Route-level code splitting: each section is its own chunk, loaded on first visit.
const LoginRoute = lazy(() => import('./routes/login.tsx'));
const HomeRoute = lazy(() => import('./routes/home.tsx'));
const NotFoundRoute = lazy(() => import('./routes/not-found.tsx'));
const DataBrowserRoute = lazy(() => import('../features/data-browser/data-browser-route.tsx'));
const ConfigRoute = lazy(() => import('../features/config/config-route.tsx'));
const AuditRoute = lazy(() => import('../features/audit/audit-route.tsx'));
const CloudRoute = lazy(() => import('../features/cloud/cloud-route.tsx'));
const FilesRoute = lazy(() => import('../features/files/files-route.tsx'));
const RealtimeRoute = lazy(() => import('../features/realtime/realtime-route.tsx'));
const PushRoute = lazy(() => import('../features/push/push-route.tsx'));
// Its chart library (uPlot) is in this chunk only: the initial bundle does not carry it.
const AnalyticsRoute = lazy(() => import('../features/analytics/analytics-route.tsx'));
const SecurityRoute = lazy(() => import('../features/security/security-route.tsx'));
const ApiConsoleRoute = lazy(() => import('../features/api-console/api-console-route.tsx'));
const ApiDocsRoute = lazy(() => import('../features/api-docs/api-docs-route.tsx'));
const ServerRoute = lazy(() => import('../features/server/server-route.tsx'));
const PerformanceRoute = lazy(() => import('../features/performance/performance-route.tsx'));
const LogsRoute = lazy(() => import('../features/logs/logs-route.tsx'));

export function createRouter() {
  return createBrowserRouter([
    {
      errorElement: <RouteError />,
      children: [
        { path: '/login', element: <LoginRoute /> },
        {
          path: '/',
          element: (
            <RequireSession>
              <HomeRoute />
            </RequireSession>
          ),
        },
        {
          path: '/apps/:appId',
          element: (
            <RequireSession>
              <AppShell />
            </RequireSession>
          ),
          errorElement: <RouteError />,
          children: [
            { index: true, element: <Navigate to="data" replace /> },
            { path: 'data/:className?', element: <DataBrowserRoute /> },
            { path: 'config', element: <ConfigRoute /> },
            { path: 'audit', element: <AuditRoute /> },
            { path: 'cloud', element: <CloudRoute /> },
            { path: 'files', element: <FilesRoute /> },
            { path: 'push', element: <PushRoute /> },
            { path: 'realtime', element: <RealtimeRoute /> },
            { path: 'analytics', element: <AnalyticsRoute /> },
            { path: 'security/:tab?', element: <SecurityRoute /> },
            { path: 'api-console', element: <ApiConsoleRoute /> },
            { path: 'api-docs/:className', element: <ApiDocsRoute /> },
            { path: 'server', element: <ServerRoute /> },
            { path: 'performance', element: <PerformanceRoute /> },
            { path: 'logs', element: <LogsRoute /> },
            ...SECTIONS.filter((s) => !s.ready).map((s) => ({
              path: s.slug,
              element: <ComingSoon slug={s.slug} />,
            })),
          ],
        },
        { path: '*', element: <NotFoundRoute /> },
      ],
    },
  ]);
}
