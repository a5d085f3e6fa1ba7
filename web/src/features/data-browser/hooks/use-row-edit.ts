/**
 * One edit of one field of a row, from the grid or the row panel. Viewing as someone else it is a
 * dry run with their permissions (nothing is saved); a typed ACL goes to the review of its impact
 * first; otherwise it is saved and the loaded row patched. Answers true when it was saved.
 */
import { ErrorCode } from '@bds/client/protocol';
import { useQueryClient } from '@tanstack/react-query';
import { isApiError } from '../../../lib/api.ts';
import type { Viewpoint } from '../../../lib/security-api.ts';
import { toast } from '../../../lib/toast.ts';
import type { Row } from '../../../lib/wire.ts';
import { dataApi } from '../api/bff.ts';
import { dataBrowserKeys } from '../api/query-keys.ts';
import { viewAsApi } from '../api/viewas.ts';
import { asWireAcl } from '../components/acl-change-review.tsx';
import type { ClassPanels } from './use-class-panels.ts';
import type { RowPages } from './use-row-pages.ts';

export interface RowEditInput {
  appId: string;
  cls: string;
  viewpoint: Viewpoint | null;
  rows: RowPages;
  panels: Pick<ClassPanels, 'setDryRun' | 'setAclTyped'>;
  /** The row was not found: it was deleted elsewhere. */
  rowGone(objectId: string): void;
}

export function useRowEdit({ appId, cls, viewpoint, rows, panels, rowGone }: RowEditInput) {
  const qc = useQueryClient();
  return async (row: Row, field: string, value: unknown): Promise<boolean> => {
    if (viewpoint) {
      // Viewing as someone else: the edit is a dry run with their permissions; nothing is saved.
      const body = { [field]: value === undefined ? { __op: 'Delete' } : value };
      try {
        const answer = await viewAsApi.dryRunUpdate(appId, cls, viewpoint, row.objectId, body);
        panels.setDryRun({ objectId: row.objectId, field, body, answer });
      } catch (err) {
        toast.error(err, 'Dry run refused');
      }
      return false;
    }
    // A permission change: its impact is reviewed first (AclChangeReview saves it).
    const typedAcl = field === 'ACL' ? asWireAcl(value) : null;
    if (typedAcl) {
      panels.setAclTyped({ row, acl: typedAcl });
      return false;
    }
    try {
      const res = await dataApi.update(appId, cls, row.objectId, {
        [field]: value === undefined ? { __op: 'Delete' } : value,
      });
      rows.patch(row.objectId, { [field]: value, updatedAt: res.updatedAt ?? row.updatedAt });
      void qc.invalidateQueries({ queryKey: dataBrowserKeys.row(appId, cls, row.objectId) });
      toast.success(`${value === undefined ? 'Unset' : 'Saved'} ${field} of ${row.objectId}`);
      return true;
    } catch (err) {
      toast.error(err, `Edit of ${field} on ${row.objectId} refused`);
      // Not found: the row was deleted elsewhere.
      if (isApiError(err) && err.code === ErrorCode.OBJECT_NOT_FOUND) rowGone(row.objectId);
      return false;
    }
  };
}
