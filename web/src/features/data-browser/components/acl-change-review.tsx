/**
 * An ACL typed as JSON (a grid cell or the row panel's field editor) is a permission change like
 * any other: before it is saved, its impact (who gains or loses each operation on this row) is
 * computed by the service and shown, with the change itself; then Save ACL or Cancel.
 */
import { useState } from 'react';
import { ImpactPreview } from '../../../components/impact-preview.tsx';
import { JsonDiff } from '../../../components/json-diff.tsx';
import { Dialog } from '../../../components/ui/dialog.tsx';
import { toast } from '../../../lib/toast.ts';
import { isPlainObject, type Row } from '../../../lib/wire.ts';
import { dataApi } from '../api/bff.ts';

export type WireAcl = Record<string, { read?: boolean; write?: boolean }>;

/**
 * The value typed is an ACL as the wire carries it (each principal with boolean read and write
 * only); anything else is not a permission change to preview: the service answers its own error.
 */
export function asWireAcl(value: unknown): WireAcl | null {
  if (!isPlainObject(value)) return null;
  for (const perm of Object.values(value)) {
    if (!isPlainObject(perm)) return null;
    for (const [k, v] of Object.entries(perm))
      if ((k !== 'read' && k !== 'write') || typeof v !== 'boolean') return null;
  }
  return value as WireAcl;
}

export function AclChangeReview({
  appId,
  className,
  row,
  acl,
  onClose,
  onSaved,
}: {
  appId: string;
  className: string;
  row: Row;
  acl: WireAcl;
  onClose: () => void;
  onSaved: (acl: WireAcl) => void;
}) {
  const [busy, setBusy] = useState(false);
  const save = async () => {
    setBusy(true);
    try {
      await dataApi.setAcl(appId, className, row.objectId, acl);
      toast.success(`Saved the ACL of ${row.objectId}`);
      onSaved(acl);
    } catch (err) {
      toast.error(err, 'Saving the ACL refused');
      setBusy(false);
    }
  };
  return (
    <Dialog open title={`Review the ACL of ${className} ${row.objectId}`} onClose={onClose} wide>
      <div className="space-y-3 text-sm" data-testid="acl-change-review">
        <div>
          <h3 className="mb-1 font-semibold">Change</h3>
          <JsonDiff before={row.ACL ?? null} after={acl} />
        </div>
        <ImpactPreview
          appId={appId}
          className={className}
          change={{ kind: 'acl', objectIds: [row.objectId], ACL: acl }}
          confirmLabel="Save ACL"
          busy={busy}
          onConfirm={save}
          onCancel={onClose}
        />
      </div>
    </Dialog>
  );
}
