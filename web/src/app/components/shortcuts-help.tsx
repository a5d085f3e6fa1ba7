import { Dialog } from '../../components/ui/dialog.tsx';
import { Kbd } from '../../components/ui/kbd.tsx';
import { useRegisteredShortcuts } from '../../lib/shortcuts.ts';

/** The `?` overlay: every shortcut registered right now, grouped. */
export function ShortcutsHelp({ open, onClose }: { open: boolean; onClose: () => void }) {
  const shortcuts = useRegisteredShortcuts();
  const groups = new Map<string, typeof shortcuts>();
  for (const s of shortcuts) groups.set(s.group, [...(groups.get(s.group) ?? []), s]);
  return (
    <Dialog open={open} onClose={onClose} title="Keyboard shortcuts">
      <div className="grid gap-4 sm:grid-cols-2">
        {[...groups].map(([group, list]) => (
          <section key={group}>
            <h3 className="mb-2 text-xs font-semibold tracking-wide text-slate-500 uppercase">{group}</h3>
            <dl className="space-y-1.5 text-sm">
              {list.map((s) => (
                <div key={`${s.group}:${s.keys}`} className="flex items-center justify-between gap-3">
                  <dt>{s.description}</dt>
                  <dd className="flex gap-1">
                    {s.keys.split(' ').map((k, i) => (
                      // biome-ignore lint/suspicious/noArrayIndexKey: keys of a sequence may repeat
                      <Kbd key={i}>{k}</Kbd>
                    ))}
                  </dd>
                </div>
              ))}
            </dl>
          </section>
        ))}
      </div>
    </Dialog>
  );
}
