import { Input, Select, Textarea } from '../../../components/ui/input.tsx';
import type { ParamType } from '../lib/values.ts';

/** ISO instant -> the `datetime-local` value in the browser's time zone (seconds precision). */
function isoToLocal(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** A typed editor for one config value; the value travels as its text form (see values.ts). */
export function ValueEditor({
  type,
  text,
  onChange,
  disabled,
  label,
}: {
  type: ParamType;
  text: string;
  onChange: (text: string) => void;
  disabled?: boolean;
  label: string;
}) {
  switch (type) {
    case 'null':
      return <span className="text-sm text-slate-400 italic">null</span>;
    case 'boolean':
      return (
        <Select
          aria-label={label}
          value={text}
          disabled={disabled}
          onChange={(e) => onChange(e.target.value)}
        >
          <option value="true">true</option>
          <option value="false">false</option>
        </Select>
      );
    case 'number':
      return (
        <Input
          aria-label={label}
          type="number"
          step="any"
          value={text}
          disabled={disabled}
          onChange={(e) => onChange(e.target.value)}
          className="w-48"
        />
      );
    case 'date':
      return (
        <span className="flex items-center gap-2">
          <Input
            aria-label={label}
            type="datetime-local"
            step="1"
            value={isoToLocal(text)}
            disabled={disabled}
            onChange={(e) => {
              const d = new Date(e.target.value);
              if (!Number.isNaN(d.getTime())) onChange(d.toISOString());
            }}
          />
          <span className="font-mono text-xs text-slate-500" title="Stored value (UTC)">
            {text}
          </span>
        </span>
      );
    case 'object':
    case 'array':
      return (
        <Textarea
          aria-label={label}
          rows={Math.min(8, Math.max(2, text.split('\n').length))}
          value={text}
          disabled={disabled}
          spellCheck={false}
          onChange={(e) => onChange(e.target.value)}
          className="w-full min-w-64"
        />
      );
    case 'geopoint':
      return (
        <Input
          aria-label={label}
          placeholder="latitude, longitude"
          value={text}
          disabled={disabled}
          onChange={(e) => onChange(e.target.value)}
          className="w-56"
        />
      );
    default:
      return (
        <Input
          aria-label={label}
          value={text}
          disabled={disabled}
          onChange={(e) => onChange(e.target.value)}
          className="w-full min-w-64"
        />
      );
  }
}
