/** The dialogs over a class: Why?, the ACL editor, the review of a typed ACL, the create-row form. */
import { useQueryClient } from '@tanstack/react-query';
import { dataBrowserKeys } from '../api/query-keys.ts';
import type { ClassPanels } from '../hooks/use-class-panels.ts';
import type { RowPages } from '../hooks/use-row-pages.ts';
import { AclChangeReview } from './acl-change-review.tsx';
import { AclEditor } from './acl-editor.tsx';
import { CreateRowDialog } from './create-row-dialog.tsx';
import { WhyDialog } from './why-panel.tsx';

export function ClassDialogs({
  appId,
  cls,
  panels,
  rows,
  onCreated,
  onAclSaved,
}: {
  appId: string;
  cls: string;
  panels: ClassPanels;
  rows: RowPages;
  /** A row was created by the form: `objectId` is the new row's. */
  onCreated(objectId: string): void;
  /** The ACL editor saved the ACLs of its rows. */
  onAclSaved(): void;
}) {
  const qc = useQueryClient();
  const { why, aclRows, aclTyped, creating } = panels;
  return (
    <>
      {why && <WhyDialog appId={appId} className={cls} initial={why} onClose={() => panels.setWhy(null)} />}
      {aclRows && (
        <AclEditor
          appId={appId}
          className={cls}
          rows={aclRows}
          onClose={() => panels.setAclRows(null)}
          onSaved={() => {
            panels.setAclRows(null);
            onAclSaved();
            void qc.invalidateQueries({ queryKey: dataBrowserKeys.rowsOf(appId, cls) });
          }}
        />
      )}
      {aclTyped && (
        <AclChangeReview
          appId={appId}
          className={cls}
          row={aclTyped.row}
          acl={aclTyped.acl}
          onClose={() => panels.setAclTyped(null)}
          onSaved={(acl) => {
            panels.setAclTyped(null);
            rows.patch(aclTyped.row.objectId, { ACL: acl });
            void qc.invalidateQueries({ queryKey: dataBrowserKeys.rowsOf(appId, cls) });
          }}
        />
      )}
      {creating && (
        <CreateRowDialog
          appId={appId}
          className={cls}
          onClose={() => panels.setCreating(false)}
          onCreated={(id) => {
            panels.setCreating(false);
            onCreated(id);
          }}
        />
      )}
    </>
  );
}
