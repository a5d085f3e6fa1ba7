import { useNavigate, useParams } from 'react-router';
import { InstallationsTable } from '../../components/installations-table.tsx';
import { Tabs } from '../../components/ui/tabs.tsx';
import { AccessTab } from './access/access-tab.tsx';
import { RolesTab } from './people/roles-tab.tsx';
import { SessionsTab } from './people/sessions-tab.tsx';
import { UsersTab } from './people/users-tab.tsx';

const TABS = [
  { id: 'access', label: 'Class access' },
  { id: 'roles', label: 'Roles' },
  { id: 'users', label: 'Users' },
  { id: 'sessions', label: 'Sessions' },
  { id: 'installations', label: 'Installations' },
] as const;
type TabId = (typeof TABS)[number]['id'];

/** /apps/:appId/security/:tab? (class access by default). */
export default function SecurityRoute() {
  const { appId = '', tab } = useParams();
  const navigate = useNavigate();
  const current: TabId = TABS.some((t) => t.id === tab) ? (tab as TabId) : 'access';

  return (
    <div className="mx-auto max-w-6xl p-6">
      <h1 className="text-xl font-semibold">Security</h1>
      <p className="mt-1 mb-4 text-sm text-slate-500 dark:text-slate-400">
        Who may see and change what: class-level permissions, protected fields, roles, users and their
        sessions.
      </p>
      <Tabs tabs={TABS} current={current} onSelect={(id) => navigate(`/apps/${appId}/security/${id}`)} />
      {current === 'access' && <AccessTab appId={appId} />}
      {current === 'roles' && <RolesTab appId={appId} />}
      {current === 'users' && <UsersTab appId={appId} />}
      {current === 'sessions' && <SessionsTab appId={appId} />}
      {current === 'installations' && <InstallationsTable appId={appId} />}
    </div>
  );
}
