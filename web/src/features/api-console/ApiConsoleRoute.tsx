/** /apps/:appId/api-console (placeholder until built). */
export default function ApiConsoleRoute() {
  return <p className="p-6 text-sm text-slate-500">Not built yet.</p>;
}
