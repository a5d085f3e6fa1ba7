/**
 * What is open over or beside the grid of a class: the panel under the toolbar (filter, columns,
 * schema or recent changes) and the filter as typed, the viewpoint comparison, a dry run's answer, and the dialogs (Why?, the ACL editor,
 * the review of a typed ACL, the create-row form).
 */
import { useState } from 'react';
import type { Evaluation, Viewpoint } from '../../../lib/security-api.ts';
import type { Row } from '../../../lib/wire.ts';
import type { WireAcl } from '../components/acl-change-review.tsx';
import type { WhyQuestion } from '../components/why-panel.tsx';

/** The panel under the toolbar. */
export type ClassPanel = 'none' | 'filter' | 'schema' | 'columns' | 'changes';

/** The answer to an edit made while viewing as someone else: checked, then rolled back. */
export interface DryRun {
  objectId: string;
  field: string;
  body: Record<string, unknown>;
  answer: Evaluation;
}

/** An ACL typed as JSON, waiting for its impact to be reviewed before it is saved. */
export interface TypedAcl {
  row: Row;
  acl: WireAcl;
}

/** The JSON of the applied filter as typed in the JSON tab: shown again, not rewritten. */
export interface TypedFilter {
  whereText: string;
  text: string;
}

export type CompareSides = [Viewpoint | null, Viewpoint | null];

/** `hasFilter` and `viewpoint` as the class opens: a filter in the address opens the filter panel. */
export function useClassPanels(hasFilter: boolean, viewpoint: Viewpoint | null) {
  const [panel, setPanel] = useState<ClassPanel>(hasFilter ? 'filter' : 'none');
  const [typedFilter, setTypedFilter] = useState<TypedFilter | null>(null);
  const [comparing, setComparing] = useState(false);
  const [compareSides, setCompareSides] = useState<CompareSides>([null, viewpoint]);
  const [dryRun, setDryRun] = useState<DryRun | null>(null);
  const [why, setWhy] = useState<WhyQuestion | null>(null);
  const [aclRows, setAclRows] = useState<Row[] | null>(null);
  const [aclTyped, setAclTyped] = useState<TypedAcl | null>(null);
  const [creating, setCreating] = useState(false);
  return {
    panel,
    /** Opens `which`, or closes it when it is the one open. */
    togglePanel: (which: Exclude<ClassPanel, 'none'>) => setPanel(panel === which ? 'none' : which),
    typedFilter,
    setTypedFilter,
    comparing,
    /** Opens the comparison master against `viewpoint`, or closes it. */
    toggleCompare: (viewpoint: Viewpoint | null) => {
      setCompareSides([null, viewpoint]);
      setComparing(!comparing);
    },
    compareSides,
    setCompareSides,
    dryRun,
    setDryRun,
    why,
    setWhy,
    aclRows,
    setAclRows,
    aclTyped,
    setAclTyped,
    creating,
    setCreating,
  };
}

export type ClassPanels = ReturnType<typeof useClassPanels>;
