import { useEffect, useState } from 'react';
import { Button } from '../../../components/ui/button.tsx';
import { Input } from '../../../components/ui/input.tsx';
import { useUserSearch } from '../api/api-console.ts';

/** Picks the user a call runs as, by username prefix. */
export function UserPicker({
  appId,
  user,
  onPick,
}: {
  appId: string;
  user: { userId: string; username: string } | null;
  onPick: (user: { userId: string; username: string }) => void;
}) {
  const [text, setText] = useState('');
  const [debounced, setDebounced] = useState('');
  useEffect(() => {
    const timer = setTimeout(() => setDebounced(text), 200);
    return () => clearTimeout(timer);
  }, [text]);
  const matches = useUserSearch(appId, debounced);
  return (
    <div className="flex flex-wrap items-center gap-2">
      <label>
        Find user
        <Input
          aria-label="Find user"
          className="ml-2"
          placeholder="username"
          value={text}
          onChange={(e) => setText(e.target.value)}
        />
      </label>
      {debounced.trim() && matches.data?.length === 0 && (
        <span className="text-xs text-slate-500">No user starts with “{debounced.trim()}”.</span>
      )}
      {matches.data?.map((m) => (
        <Button
          key={m.objectId}
          size="sm"
          onClick={() => onPick({ userId: m.objectId, username: m.username })}
        >
          Use {m.username}
        </Button>
      ))}
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
