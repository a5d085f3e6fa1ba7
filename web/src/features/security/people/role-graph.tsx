import type { RoleEdge, RoleNode } from './api.ts';

const NODE_W = 150;
const NODE_H = 34;
const COL_GAP = 80;
const ROW_GAP = 18;
const PAD = 12;

/**
 * Columns by depth: a role sits one column right of the deepest role it inherits from, so every
 * arrow (the way capabilities flow) points right.
 */
export function layoutRoles(roles: RoleNode[], edges: RoleEdge[]) {
  const depth = new Map(roles.map((r) => [r.objectId, 0]));
  // The service refuses cycles; the bound only keeps a bad answer from looping forever.
  for (let pass = 0; pass < roles.length; pass++) {
    let changed = false;
    for (const e of edges) {
      const d = (depth.get(e.from) ?? 0) + 1;
      if (depth.has(e.to) && d > (depth.get(e.to) ?? 0)) {
        depth.set(e.to, d);
        changed = true;
      }
    }
    if (!changed) break;
  }
  const columns: RoleNode[][] = [];
  for (const r of roles) {
    const d = depth.get(r.objectId) ?? 0;
    columns[d] ??= [];
    columns[d].push(r);
  }
  const position = new Map<string, { x: number; y: number }>();
  columns.forEach((column, c) => {
    column.forEach((r, i) => {
      position.set(r.objectId, { x: PAD + c * (NODE_W + COL_GAP), y: PAD + i * (NODE_H + ROW_GAP) });
    });
  });
  const rows = Math.max(1, ...columns.map((c) => c?.length ?? 0));
  return {
    position,
    width: PAD * 2 + Math.max(1, columns.length) * (NODE_W + COL_GAP) - COL_GAP,
    height: PAD * 2 + rows * (NODE_H + ROW_GAP) - ROW_GAP,
  };
}

/** The role hierarchy as a graph; arrows point the way capabilities flow. */
export function RoleGraph({
  roles,
  edges,
  selected,
  onSelect,
}: {
  roles: RoleNode[];
  edges: RoleEdge[];
  selected: string | null;
  onSelect: (roleId: string) => void;
}) {
  const { position, width, height } = layoutRoles(roles, edges);
  const name = new Map(roles.map((r) => [r.objectId, r.name]));
  return (
    <figure className="space-y-1">
      <div className="overflow-auto rounded-md border border-slate-200 dark:border-slate-700">
        <svg
          width={width}
          height={height}
          role="img"
          aria-label="Role hierarchy"
          data-testid="role-graph"
          className="text-slate-500"
        >
          <defs>
            <marker
              id="role-arrow"
              viewBox="0 0 10 10"
              refX="9"
              refY="5"
              markerWidth="8"
              markerHeight="8"
              orient="auto"
            >
              <path d="M0,0 L10,5 L0,10 z" fill="currentColor" />
            </marker>
          </defs>
          {edges.map((e) => {
            const a = position.get(e.from);
            const b = position.get(e.to);
            if (!a || !b) return null;
            const sentence = `${name.get(e.to)} inherits capabilities from ${name.get(e.from)}`;
            return (
              <line
                key={`${e.from}-${e.to}`}
                data-testid="role-edge"
                data-from={name.get(e.from)}
                data-to={name.get(e.to)}
                x1={a.x + NODE_W}
                y1={a.y + NODE_H / 2}
                x2={b.x - 2}
                y2={b.y + NODE_H / 2}
                stroke="currentColor"
                strokeWidth={1.5}
                markerEnd="url(#role-arrow)"
              >
                <title>{sentence}</title>
              </line>
            );
          })}
          {roles.map((r) => {
            const p = position.get(r.objectId);
            if (!p) return null;
            const active = r.objectId === selected;
            return (
              // biome-ignore lint/a11y/useSemanticElements: an SVG group cannot be a <button>.
              <g
                key={r.objectId}
                role="button"
                tabIndex={0}
                aria-label={`Role ${r.name}`}
                aria-pressed={active}
                data-testid="role-node"
                transform={`translate(${p.x},${p.y})`}
                className="cursor-pointer"
                onClick={() => onSelect(r.objectId)}
                onKeyDown={(e) => {
                  if (e.key === 'Enter' || e.key === ' ') onSelect(r.objectId);
                }}
              >
                <rect
                  width={NODE_W}
                  height={NODE_H}
                  rx={6}
                  className={
                    active
                      ? 'fill-indigo-100 stroke-indigo-600 dark:fill-indigo-950'
                      : 'fill-white stroke-slate-400 dark:fill-slate-900'
                  }
                />
                <text
                  x={NODE_W / 2}
                  y={NODE_H / 2 + 4}
                  textAnchor="middle"
                  className="fill-slate-900 text-xs dark:fill-slate-100"
                >
                  {r.name} ({r.users})
                </text>
              </g>
            );
          })}
        </svg>
      </div>
      <figcaption className="text-xs text-slate-500 dark:text-slate-400">
        Arrows show the way capabilities flow: an arrow from A to B means B inherits capabilities from A
        (members of B may do what members of A may do). The number is the role's direct members.
      </figcaption>
    </figure>
  );
}
