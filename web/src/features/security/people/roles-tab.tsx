import { type FormEvent, useState } from 'react';
import { ImpactPreview } from '../../../components/impact-preview.tsx';
import { QueryState } from '../../../components/query-state.tsx';
import { Button } from '../../../components/ui/button.tsx';
import { Dialog } from '../../../components/ui/dialog.tsx';
import { Input, Select } from '../../../components/ui/input.tsx';
import { UserPicker, userName } from '../../../components/user-picker.tsx';
import { api, isApiError, seg } from '../../../lib/api.ts';
import type { RoleChange } from '../../../lib/security-api.ts';
import { useCanWrite } from '../../../lib/session.ts';
import { toast } from '../../../lib/toast.ts';
import {
  type RoleDetail,
  type RoleNode,
  useEffectiveMembers,
  usePeopleWrite,
  useRoleDetail,
  useRoleHierarchy,
} from './api.ts';
import { RoleGraph } from './role-graph.tsx';

/** Roles: the hierarchy as a graph, a role's members, inheritance edits and effective members. */
export function RolesTab({ appId }: { appId: string }) {
  const canWrite = useCanWrite();
  const hierarchy = useRoleHierarchy(appId);
  const [selected, setSelected] = useState<string | null>(null);

  return (
    <QueryState query={hierarchy} loading="Loading roles…" failed="Could not load the roles">
      {({ roles, edges, truncated }) => {
        const current = roles.some((r) => r.objectId === selected) ? selected : null;
        return (
          <div className="space-y-4">
            {canWrite && <CreateRole appId={appId} onCreated={setSelected} />}
            {roles.length === 0 ? (
              <p className="text-sm text-slate-500">No roles yet.</p>
            ) : (
              <RoleGraph roles={roles} edges={edges} selected={current} onSelect={setSelected} />
            )}
            {truncated && (
              <p className="text-xs text-amber-700">
                Only the first {roles.length} roles (by name) are drawn.
              </p>
            )}
            {current ? (
              <RolePanel key={current} appId={appId} roleId={current} roles={roles} canWrite={canWrite} />
            ) : (
              roles.length > 0 && (
                <p className="text-sm text-slate-500">Choose a role in the graph to see its members.</p>
              )
            )}
          </div>
        );
      }}
    </QueryState>
  );
}

function CreateRole({ appId, onCreated }: { appId: string; onCreated: (roleId: string) => void }) {
  const [name, setName] = useState('');
  const [refusal, setRefusal] = useState<string | null>(null);
  const create = usePeopleWrite(appId, (base, roleName: string) =>
    api.post<{ objectId: string }>(`${base}/roles`, { name: roleName }),
  );
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setRefusal(null);
    create.mutate(name.trim(), {
      onSuccess: (created) => {
        toast.success(`Role ${name.trim()} created`);
        setName('');
        onCreated(created.objectId);
      },
      // The service's own words (a name already taken names the role), next to the name typed.
      onError: (err) =>
        setRefusal(
          isApiError(err) ? `${err.error} (code ${err.code})` : `Could not create the role: ${String(err)}`,
        ),
    });
  };
  return (
    <form onSubmit={submit} className="space-y-1">
      <div className="flex items-center gap-2">
        <Input
          aria-label="New role name"
          placeholder="New role name"
          value={name}
          aria-invalid={refusal !== null}
          aria-describedby={refusal ? 'create-role-error' : undefined}
          onChange={(e) => {
            setName(e.target.value);
            setRefusal(null);
          }}
        />
        <Button type="submit" variant="primary" disabled={!name.trim() || create.isPending}>
          Create role
        </Button>
      </div>
      {refusal && (
        <p
          id="create-role-error"
          role="alert"
          data-testid="create-role-error"
          className="text-sm text-red-600"
        >
          {refusal}
        </p>
      )}
    </form>
  );
}

/** A role change waiting for its impact to be reviewed, with the words that describe it. */
interface PendingRoleChange {
  change: RoleChange;
  sentence: string;
  confirmLabel: string;
  apply: () => void;
}

/** The impact of a role change (every class), then Apply or Cancel. */
function RoleChangeReview({
  appId,
  pending,
  onCancel,
  onRefused,
}: {
  appId: string;
  pending: PendingRoleChange;
  onCancel: () => void;
  onRefused?: (error: unknown) => void;
}) {
  return (
    <div className="space-y-1" data-testid="role-change-review">
      <p className="text-sm font-medium">Before applying: {pending.sentence}</p>
      <ImpactPreview
        appId={appId}
        draft={{ roles: [pending.change] }}
        confirmLabel={pending.confirmLabel}
        onConfirm={pending.apply}
        onCancel={onCancel}
        onRefused={onRefused}
      />
    </div>
  );
}

/** "<a>, which inherits from <b>, …": how a member holds the role, in the direction of docs/protocol.md#built-in-classes. */
function chainInWords(via: string[]): string {
  if (via.length === 1) return `direct member of ${via[0]}`;
  return `member of ${via[0]}${via
    .slice(1)
    .map((r) => `, which inherits capabilities from ${r}`)
    .join('')}`;
}

function RolePanel({
  appId,
  roleId,
  roles,
  canWrite,
}: {
  appId: string;
  roleId: string;
  roles: RoleNode[];
  canWrite: boolean;
}) {
  const detail = useRoleDetail(appId, roleId);
  const effective = useEffectiveMembers(appId, roleId);
  return (
    <QueryState query={detail} loading="Loading the role…" failed="Could not load the role">
      {(d) => (
        <section
          aria-label={`Role ${d.role.name}`}
          className="space-y-4 rounded-md border border-slate-200 p-4 dark:border-slate-700"
        >
          <div className="flex items-center justify-between">
            <h2 className="text-base font-semibold">{d.role.name}</h2>
            {canWrite && <DeleteRole appId={appId} detail={d} />}
          </div>
          <Inheritance appId={appId} detail={d} roles={roles} canWrite={canWrite} />
          <Members appId={appId} detail={d} canWrite={canWrite} />
          <section aria-label="Effective members" className="space-y-1">
            <h3 className="text-sm font-semibold">Effective members</h3>
            <p className="text-xs text-slate-500">
              Everyone who holds {d.role.name}'s capabilities: its members and the members of every role that
              inherits from it, directly or through other roles.
            </p>
            <QueryState
              query={effective}
              loading="Loading effective members…"
              isEmpty={(d) => d.results.length === 0}
              empty={<p className="text-sm text-slate-500">Nobody holds this role.</p>}
            >
              {({ results }) => (
                <ul className="text-sm" data-testid="effective-members">
                  {results.map((m) => (
                    <li key={m.user.objectId} data-testid="effective-member" data-username={m.user.username}>
                      <span className="font-medium">{m.user.username ?? m.user.objectId}</span>{' '}
                      <span className="text-slate-500">({chainInWords(m.via)})</span>
                    </li>
                  ))}
                </ul>
              )}
            </QueryState>
          </section>
        </section>
      )}
    </QueryState>
  );
}

function Inheritance({
  appId,
  detail,
  roles,
  canWrite,
}: {
  appId: string;
  detail: RoleDetail;
  roles: RoleNode[];
  canWrite: boolean;
}) {
  const me = detail.role;
  const [refusal, setRefusal] = useState<string | null>(null);
  const [pending, setPending] = useState<PendingRoleChange | null>(null);
  // Capabilities flow from `source` to `inheritor`: the inheritor joins the source's `roles` relation.
  const change = usePeopleWrite(appId, (base, v: { source: string; inheritor: string; add: boolean }) =>
    v.add
      ? api.post(`${base}/roles/${seg(v.source)}/roles`, { roleIds: [v.inheritor] })
      : api.delete(`${base}/roles/${seg(v.source)}/roles/${seg(v.inheritor)}`),
  );
  const refused = (sentence: string, err: unknown) =>
    setRefusal(
      `"${sentence}" was refused: ${isApiError(err) ? `${err.error} (code ${err.code})` : String(err)}`,
    );
  // The change is first previewed (who gains or loses what, on every class), then applied.
  const run = (v: { source: string; inheritor: string; add: boolean }, sentence: string) => {
    setRefusal(null);
    setPending({
      change: { roleId: v.source, roles: v.add ? { add: [v.inheritor] } : { remove: [v.inheritor] } },
      sentence,
      confirmLabel: 'Apply',
      apply: () => {
        setPending(null);
        change.mutate(v, {
          onSuccess: () => toast.success(sentence),
          onError: (err) => refused(sentence, err),
        });
      },
    });
  };
  const others = roles.filter((r) => r.objectId !== me.objectId);
  return (
    <section aria-label="Inheritance" className="space-y-2 text-sm">
      <h3 className="font-semibold">Inheritance</h3>
      <ul className="space-y-1" data-testid="inheritance">
        {detail.parents.map((p) => (
          <li key={p.objectId} className="flex items-center gap-2">
            <span>
              {me.name} inherits capabilities from {p.name}
            </span>
            {canWrite && (
              <Button
                size="sm"
                variant="ghost"
                aria-label={`Stop: ${me.name} inherits capabilities from ${p.name}`}
                onClick={() =>
                  run(
                    { source: p.objectId, inheritor: me.objectId, add: false },
                    `${me.name} no longer inherits capabilities from ${p.name}`,
                  )
                }
              >
                Remove
              </Button>
            )}
          </li>
        ))}
        {detail.roles.map((c) => (
          <li key={c.objectId} className="flex items-center gap-2">
            <span>
              {c.name} inherits capabilities from {me.name}
            </span>
            {canWrite && (
              <Button
                size="sm"
                variant="ghost"
                aria-label={`Stop: ${c.name} inherits capabilities from ${me.name}`}
                onClick={() =>
                  run(
                    { source: me.objectId, inheritor: c.objectId, add: false },
                    `${c.name} no longer inherits capabilities from ${me.name}`,
                  )
                }
              >
                Remove
              </Button>
            )}
          </li>
        ))}
        {detail.parents.length + detail.roles.length === 0 && (
          <li className="text-slate-500">{me.name} neither inherits nor grants capabilities.</li>
        )}
      </ul>
      {canWrite && others.length > 0 && (
        <div className="flex flex-wrap gap-4">
          <InheritForm
            label={`${me.name} inherits capabilities from`}
            others={others}
            onAdd={(other) =>
              run(
                { source: other.objectId, inheritor: me.objectId, add: true },
                `${me.name} inherits capabilities from ${other.name}`,
              )
            }
            button="Inherit"
            leading={me.name}
            trailing={null}
          />
          <InheritForm
            label={`Role that inherits capabilities from ${me.name}`}
            others={others}
            onAdd={(other) =>
              run(
                { source: me.objectId, inheritor: other.objectId, add: true },
                `${other.name} inherits capabilities from ${me.name}`,
              )
            }
            button="Grant"
            leading={null}
            trailing={me.name}
          />
        </div>
      )}
      {pending && (
        <RoleChangeReview
          appId={appId}
          pending={pending}
          onCancel={() => setPending(null)}
          // The service refuses the change itself (a cycle): said here, as the write would be.
          onRefused={(err) => {
            refused(pending.sentence, err);
            setPending(null);
          }}
        />
      )}
      {refusal && (
        <p role="alert" data-testid="inheritance-error" className="text-sm text-red-600">
          {refusal}
        </p>
      )}
    </section>
  );
}

/** "<leading> inherits capabilities from <select>" or "<select> inherits capabilities from <trailing>". */
function InheritForm({
  label,
  others,
  onAdd,
  button,
  leading,
  trailing,
}: {
  label: string;
  others: RoleNode[];
  onAdd: (role: RoleNode) => void;
  button: string;
  leading: string | null;
  trailing: string | null;
}) {
  const [choice, setChoice] = useState('');
  const role = others.find((r) => r.objectId === choice);
  const select = (
    <Select aria-label={label} value={choice} onChange={(e) => setChoice(e.target.value)}>
      <option value="">choose a role…</option>
      {others.map((r) => (
        <option key={r.objectId} value={r.objectId}>
          {r.name}
        </option>
      ))}
    </Select>
  );
  return (
    <form
      className="flex items-center gap-2"
      onSubmit={(e) => {
        e.preventDefault();
        if (role) onAdd(role);
        setChoice('');
      }}
    >
      {leading && <span>{leading}</span>}
      {leading && <span>inherits capabilities from</span>}
      {select}
      {trailing && <span>inherits capabilities from {trailing}</span>}
      <Button type="submit" size="sm" disabled={!role}>
        {button}
      </Button>
    </form>
  );
}

function Members({ appId, detail, canWrite }: { appId: string; detail: RoleDetail; canWrite: boolean }) {
  const me = detail.role;
  const change = usePeopleWrite(appId, (base, v: { userId: string; add: boolean }) =>
    v.add
      ? api.post(`${base}/roles/${seg(me.objectId)}/users`, { userIds: [v.userId] })
      : api.delete(`${base}/roles/${seg(me.objectId)}/users/${seg(v.userId)}`),
  );
  const memberIds = new Set(detail.users.map((u) => u.objectId));
  const [pending, setPending] = useState<PendingRoleChange | null>(null);
  // The change is first previewed (who gains or loses what, on every class), then applied.
  const run = (v: { userId: string; add: boolean }, name: string) => {
    const done = v.add ? `${name} added to ${me.name}` : `${name} removed from ${me.name}`;
    setPending({
      change: { roleId: me.objectId, users: v.add ? { add: [v.userId] } : { remove: [v.userId] } },
      sentence: v.add ? `add ${name} to ${me.name}` : `remove ${name} from ${me.name}`,
      confirmLabel: v.add ? 'Add' : 'Remove',
      apply: () => {
        setPending(null);
        change.mutate(v, {
          onSuccess: () => toast.success(done),
          onError: (err) => toast.error(err, 'Could not change the members'),
        });
      },
    });
  };
  return (
    <section aria-label="Members" className="space-y-2 text-sm">
      <h3 className="font-semibold">Members ({detail.users.length})</h3>
      {detail.users.length === 0 ? (
        <p className="text-slate-500">No direct members.</p>
      ) : (
        <ul data-testid="role-members">
          {detail.users.map((u) => (
            <li key={u.objectId} data-testid="role-member" className="flex items-center gap-2">
              <span className="font-medium">{u.username ?? u.objectId}</span>
              {u.email && <span className="text-slate-500">{u.email}</span>}
              {canWrite && (
                <Button
                  size="sm"
                  variant="ghost"
                  aria-label={`Remove ${u.username ?? u.objectId} from ${me.name}`}
                  onClick={() => run({ userId: u.objectId, add: false }, u.username ?? u.objectId)}
                >
                  Remove
                </Button>
              )}
            </li>
          ))}
        </ul>
      )}
      {pending && <RoleChangeReview appId={appId} pending={pending} onCancel={() => setPending(null)} />}
      {canWrite && (
        <UserPicker
          appId={appId}
          label="Find users to add"
          placeholder="Add a member: username or email…"
          width="w-72"
          optionLabel={(u) => `Add ${userName(u)} to ${me.name}`}
          unavailable={(u) => (memberIds.has(u.objectId) ? 'already a member' : undefined)}
          onPick={(u) => run({ userId: u.objectId, add: true }, userName(u))}
        />
      )}
    </section>
  );
}

function DeleteRole({ appId, detail }: { appId: string; detail: RoleDetail }) {
  const [open, setOpen] = useState(false);
  const remove = usePeopleWrite(appId, (base, roleId: string) => api.delete(`${base}/roles/${seg(roleId)}`));
  return (
    <>
      <Button size="sm" variant="danger" onClick={() => setOpen(true)}>
        Delete role
      </Button>
      <Dialog
        open={open}
        title={`Delete role ${detail.role.name}?`}
        onClose={() => setOpen(false)}
        footer={
          <>
            <Button onClick={() => setOpen(false)}>Cancel</Button>
            <Button
              variant="danger"
              disabled={remove.isPending}
              onClick={() =>
                remove.mutate(detail.role.objectId, {
                  onSuccess: () => {
                    setOpen(false);
                    toast.success(`Role ${detail.role.name} deleted`);
                  },
                  onError: (err) => toast.error(err, 'Could not delete the role'),
                })
              }
            >
              Delete
            </Button>
          </>
        }
      >
        <p className="text-sm">
          Its {detail.users.length} direct members, and the members of the {detail.roles.length} roles that
          inherit from it, lose the capabilities it gives.
        </p>
      </Dialog>
    </>
  );
}
