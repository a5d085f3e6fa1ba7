import { UserPicker, userName } from '../../../components/user-picker.tsx';

/** Picks the user a call runs as (the console's one user picker), and says who it is. */
export function RunAsUserPicker({
  appId,
  user,
  onPick,
}: {
  appId: string;
  user: { userId: string; username: string } | null;
  onPick: (user: { userId: string; username: string }) => void;
}) {
  return (
    <div className="flex flex-wrap items-center gap-2">
      <UserPicker
        appId={appId}
        label="Find user"
        optionLabel={(u) => `Use ${userName(u)}`}
        onPick={(u) => onPick({ userId: u.objectId, username: userName(u) })}
      />
      {user ? (
        <span data-testid="picked-user" className="text-xs">
          Running as <strong>{user.username}</strong>{' '}
          <span className="font-mono text-slate-500">{user.userId}</span>
        </span>
      ) : (
        <span className="text-xs text-slate-500">No user chosen.</span>
      )}
    </div>
  );
}
