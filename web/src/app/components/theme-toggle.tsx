import { type ThemeChoice, useTheme } from '../../lib/theme.ts';

const LABEL: Record<ThemeChoice, string> = { system: 'System', light: 'Light', dark: 'Dark' };

export function ThemeToggle() {
  const { choice, setTheme } = useTheme();
  return (
    <label className="flex items-center gap-1 text-sm">
      <span className="text-slate-500 dark:text-slate-400">Theme</span>
      <select
        aria-label="Theme"
        data-testid="theme-select"
        value={choice}
        onChange={(e) => setTheme(e.target.value as ThemeChoice)}
        className="rounded-md border border-slate-300 bg-white px-1.5 py-1 text-sm dark:border-slate-600 dark:bg-slate-800"
      >
        {(Object.keys(LABEL) as ThemeChoice[]).map((c) => (
          <option key={c} value={c}>
            {LABEL[c]}
          </option>
        ))}
      </select>
    </label>
  );
}
