/** The banner over a class viewed as someone else: who, what that means, and the way back. */
export function ViewAsBanner({
  viewpointName,
  canWrite,
  onBack,
}: {
  viewpointName: string;
  /** Writers are told their edits here are dry runs. */
  canWrite: boolean;
  onBack(): void;
}) {
  return (
    <div
      role="status"
      data-testid="viewas-banner"
      className="flex flex-wrap items-center gap-3 border-y-4 border-amber-600 bg-amber-300 px-3 py-2 text-base font-bold text-amber-950"
    >
      <span>Viewing as {viewpointName} — not as master</span>
      <span className="text-sm font-normal">
        Rows and fields are exactly what this viewpoint gets.{' '}
        {canWrite ? 'Edits are dry runs: checked with its permissions, then rolled back.' : ''}
      </span>
      <button
        type="button"
        className="ml-auto rounded border-2 border-amber-900 bg-white px-2 py-0.5 text-sm"
        onClick={onBack}
      >
        Back to master
      </button>
    </div>
  );
}
