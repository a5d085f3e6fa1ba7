/** Placeholder until this tab is built. */
export function SessionsTab({ appId }: { appId: string }) {
  return (
    <p className="text-sm text-slate-500" data-app={appId}>
      Not built yet.
    </p>
  );
}
