/**
 * Inline editors by type. `onCommit` receives the new wire value; `undefined` unsets the field,
 * and only the editor's explicit Unset button sends it. Input an editor cannot read (empty, a
 * typo, a number out of range, a browser's rejected date) is refused with a message at the cell
 * and nothing is saved.
 */
import { type ReactNode, useEffect, useLayoutEffect, useRef, useState } from 'react';
import {
  dateIso,
  editText,
  type FieldType,
  isPlainObject,
  NOTHING_TYPED,
  parseEdit,
} from '../../../lib/wire.ts';
import { dataApi } from '../api/bff.ts';

export interface EditorProps {
  appId: string;
  type: FieldType;
  targetClass?: string;
  value: unknown;
  onCommit(value: unknown): void;
  onCancel(): void;
  /** In the row panel: laid out in the flow, not floating over the grid. */
  inline?: boolean;
}

/** `YYYY-MM-DDTHH:mm:ss` in local time, as `<input type="datetime-local">` wants it. */
function toLocalInput(iso: string | null): string {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

export function CellEditor(props: EditorProps) {
  const { type } = props;
  if (type === 'Boolean') return <BooleanEditor {...props} />;
  if (type === 'Date') return <DateEditor {...props} />;
  if (type === 'Pointer') return <PointerEditor {...props} />;
  if (type === 'GeoPoint') return <GeoEditor {...props} />;
  if (type === 'String' || type === 'Number') return <TextEditor {...props} />;
  return <JsonEditor {...props} />;
}

/**
 * Escape cancels the edit and goes no further: neither the grid nor the row panel (whose Escape
 * closes it) sees it.
 */
function cancelOnEscape(e: React.KeyboardEvent, cancel: () => void): boolean {
  if (e.key !== 'Escape') return false;
  e.preventDefault();
  e.stopPropagation();
  cancel();
  return true;
}

function keys(e: React.KeyboardEvent, commit: () => void, cancel: () => void) {
  if (cancelOnEscape(e, cancel)) return;
  if (e.key === 'Enter' && !e.shiftKey) {
    e.preventDefault();
    commit();
  }
}

/** Stable callback ref: focuses the editor once, when it mounts. */
const focusOnMount = (el: HTMLElement | null) => el?.focus();

const box =
  'absolute left-0 top-0 z-30 min-w-full rounded border border-blue-500 bg-white p-1 shadow-lg dark:bg-gray-900';
const inlineBox = 'rounded border border-blue-500 bg-white p-1 dark:bg-gray-900';

/**
 * The editor's frame. Over the grid it opens downwards from the cell, or upwards when it would
 * run past the grid's bottom edge and there is more room above.
 */
function EditorBox({
  inline,
  className = '',
  children,
}: {
  inline?: boolean;
  className?: string;
  children: ReactNode;
}) {
  const ref = useRef<HTMLDivElement>(null);
  const [up, setUp] = useState(false);
  useLayoutEffect(() => {
    const el = ref.current;
    const grid = el?.closest('[data-testid="grid"]');
    if (inline || !el || !grid) return;
    const r = el.getBoundingClientRect();
    // The visible part of the grid, above its horizontal scrollbar.
    const top = grid.getBoundingClientRect().top;
    const bottom = top + grid.clientHeight;
    if (r.bottom > bottom && r.top - top > bottom - r.top) setUp(true);
  }, [inline]);
  return (
    <div
      ref={ref}
      data-opens={inline ? undefined : up ? 'up' : 'down'}
      className={`${inline ? inlineBox : box} ${className}`}
      style={up ? { top: 'auto', bottom: 0 } : undefined}
    >
      {children}
    </div>
  );
}

/** Why the editor refused what was typed, at the cell. */
function Refusal({ error, live = false }: { error: string | null; live?: boolean }) {
  if (!error) return null;
  return (
    <div
      role={live ? undefined : 'alert'}
      data-testid="cell-editor-error"
      className="w-full text-xs text-red-600"
    >
      {error}
    </div>
  );
}

/** The one way to remove a value: shown only when the cell holds one. */
function UnsetButton({ value, onCommit }: Pick<EditorProps, 'value' | 'onCommit'>) {
  if (value === undefined) return null;
  return (
    <button
      type="button"
      className="shrink-0 rounded border px-2 text-xs"
      title="Remove the value from this row"
      onClick={() => onCommit(undefined)}
    >
      Unset
    </button>
  );
}

function TextEditor({ type, value, onCommit, onCancel, inline }: EditorProps) {
  const [text, setText] = useState(editText(type, value));
  const [err, setErr] = useState<string | null>(null);
  const commit = () => {
    const r = parseEdit(type, text);
    if (!r.ok) return setErr(r.error);
    onCommit(r.value);
  };
  return (
    <EditorBox inline={inline} className="flex flex-wrap items-center gap-1">
      <input
        ref={focusOnMount}
        aria-label="cell editor"
        data-testid="cell-editor"
        // A text input for numbers too: a number input hands over "" for what it cannot read.
        type="text"
        inputMode={type === 'Number' ? 'decimal' : undefined}
        className="min-w-0 flex-1 rounded border px-1 text-sm dark:bg-gray-800"
        value={text}
        onChange={(e) => {
          setText(e.target.value);
          setErr(null);
        }}
        onKeyDown={(e) => keys(e, commit, onCancel)}
      />
      <UnsetButton value={value} onCommit={onCommit} />
      <Refusal error={err} />
    </EditorBox>
  );
}

function BooleanEditor({ value, onCommit, onCancel, inline }: EditorProps) {
  return (
    <EditorBox inline={inline} className="flex items-center gap-1">
      <select
        ref={focusOnMount}
        aria-label="cell editor"
        data-testid="cell-editor"
        className="min-w-0 flex-1 rounded border text-sm dark:bg-gray-800"
        defaultValue={value === true ? 'true' : value === false ? 'false' : ''}
        onKeyDown={(e) => cancelOnEscape(e, onCancel)}
        onChange={(e) => e.target.value !== '' && onCommit(e.target.value === 'true')}
      >
        <option value="" disabled>
          (no value)
        </option>
        <option value="true">true</option>
        <option value="false">false</option>
      </select>
      <UnsetButton value={value} onCommit={onCommit} />
    </EditorBox>
  );
}

function DateEditor({ value, onCommit, onCancel, inline }: EditorProps) {
  const [text, setText] = useState(toLocalInput(dateIso(value)));
  const [err, setErr] = useState<string | null>(null);
  const input = useRef<HTMLInputElement | null>(null);
  const commit = () => {
    // The browser empties the value of a date it cannot read (a half-typed one): say so.
    if (input.current?.validity.badInput) return setErr('The date is not complete.');
    if (!text) return setErr(NOTHING_TYPED);
    const d = new Date(text);
    if (Number.isNaN(d.getTime())) return setErr(`"${text}" is not a date`);
    onCommit({ __type: 'Date', iso: d.toISOString() });
  };
  return (
    <EditorBox inline={inline} className="flex flex-wrap items-center gap-1">
      <input
        ref={(el) => {
          input.current = el;
          focusOnMount(el);
        }}
        aria-label="cell editor"
        data-testid="cell-editor"
        type="datetime-local"
        step="1"
        className="rounded border text-sm dark:bg-gray-800"
        value={text}
        onChange={(e) => {
          setText(e.target.value);
          setErr(null);
        }}
        onKeyDown={(e) => keys(e, commit, onCancel)}
      />
      <button type="button" className="rounded bg-blue-600 px-2 text-xs text-white" onClick={commit}>
        Save
      </button>
      <UnsetButton value={value} onCommit={onCommit} />
      <Refusal error={err} />
    </EditorBox>
  );
}

function GeoEditor({ value, onCommit, onCancel, inline }: EditorProps) {
  const v = isPlainObject(value) ? value : {};
  const [lat, setLat] = useState(v.latitude === undefined ? '' : String(v.latitude));
  const [lng, setLng] = useState(v.longitude === undefined ? '' : String(v.longitude));
  const [err, setErr] = useState<string | null>(null);
  const commit = () => {
    if (lat.trim() === '' && lng.trim() === '') return setErr(NOTHING_TYPED);
    if (lat.trim() === '' || lng.trim() === '') return setErr('Type both the latitude and the longitude.');
    const r = parseEdit('GeoPoint', `${lat}, ${lng}`);
    if (!r.ok) return setErr(r.error);
    onCommit(r.value);
  };
  const cls = 'w-24 rounded border px-1 text-sm dark:bg-gray-800';
  return (
    <EditorBox inline={inline} className="flex flex-wrap items-center gap-1">
      <input
        ref={focusOnMount}
        aria-label="latitude"
        data-testid="cell-editor"
        className={cls}
        value={lat}
        onChange={(e) => {
          setLat(e.target.value);
          setErr(null);
        }}
        onKeyDown={(e) => keys(e, commit, onCancel)}
      />
      <input
        aria-label="longitude"
        className={cls}
        value={lng}
        onChange={(e) => {
          setLng(e.target.value);
          setErr(null);
        }}
        onKeyDown={(e) => keys(e, commit, onCancel)}
      />
      <UnsetButton value={value} onCommit={onCommit} />
      <Refusal error={err} />
    </EditorBox>
  );
}

function PointerEditor({ appId, targetClass, value, onCommit, onCancel, inline }: EditorProps) {
  const [text, setText] = useState(editText('Pointer', value));
  const [options, setOptions] = useState<string[]>([]);
  const seq = useRef(0);
  useEffect(() => {
    if (!targetClass) return;
    const n = ++seq.current;
    const ctrl = new AbortController();
    const t = setTimeout(() => {
      const where = text ? { objectId: { $regex: `^${text.replace(/[^A-Za-z0-9_-]/g, '')}` } } : {};
      dataApi
        .find(appId, targetClass, { where, limit: 20, keys: 'objectId', order: 'objectId' }, ctrl.signal)
        .then((r) => n === seq.current && setOptions(r.results.map((x) => x.objectId)))
        .catch(() => undefined);
    }, 150);
    return () => {
      clearTimeout(t);
      ctrl.abort();
    };
  }, [appId, targetClass, text]);
  const [err, setErr] = useState<string | null>(null);
  const commit = () => {
    const r = parseEdit('Pointer', text, targetClass);
    if (!r.ok) return setErr(r.error);
    onCommit(r.value);
  };
  return (
    <EditorBox inline={inline}>
      <div className="flex items-center gap-1">
        <input
          ref={focusOnMount}
          aria-label="cell editor"
          data-testid="cell-editor"
          placeholder={`${targetClass ?? ''} objectId`}
          className="min-w-0 flex-1 rounded border px-1 text-sm dark:bg-gray-800"
          value={text}
          onChange={(e) => {
            setText(e.target.value);
            setErr(null);
          }}
          onKeyDown={(e) => keys(e, commit, onCancel)}
        />
        <UnsetButton value={value} onCommit={onCommit} />
      </div>
      <Refusal error={err} />
      <ul className="max-h-40 overflow-auto text-xs">
        {options.map((id) => (
          <li key={id}>
            <button
              type="button"
              className="w-full px-1 text-left hover:bg-blue-100 dark:hover:bg-gray-700"
              onClick={() => onCommit({ __type: 'Pointer', className: targetClass, objectId: id })}
            >
              {id}
            </button>
          </li>
        ))}
      </ul>
    </EditorBox>
  );
}

function JsonEditor({ type, value, onCommit, onCancel, inline }: EditorProps) {
  const [text, setText] = useState(editText(type, value));
  // The problem shows once the text is edited or a save is tried (not on opening an empty cell).
  const [touched, setTouched] = useState(false);
  const check = parseEdit(type, text);
  const commit = () => {
    setTouched(true);
    if (check.ok) onCommit(check.value);
  };
  return (
    <EditorBox inline={inline} className="w-96 max-w-full">
      <textarea
        ref={focusOnMount}
        aria-label="cell editor"
        data-testid="cell-editor"
        className="h-40 w-full rounded border font-mono text-xs dark:bg-gray-800"
        value={text}
        onChange={(e) => {
          setText(e.target.value);
          setTouched(true);
        }}
        onKeyDown={(e) => {
          if (cancelOnEscape(e, onCancel)) return;
          if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
            e.preventDefault();
            commit();
          }
        }}
      />
      <Refusal error={check.ok || !touched ? null : check.error} live />
      <div className="flex items-center gap-2 text-xs">
        {check.ok && <span className="text-green-700">valid</span>}
        <span className="text-gray-500">Ctrl+Enter saves, Esc cancels</span>
        <button
          type="button"
          disabled={!check.ok}
          className="ml-auto rounded bg-blue-600 px-2 text-white disabled:opacity-50"
          onClick={commit}
        >
          Save
        </button>
        <button type="button" className="rounded border px-2" onClick={onCancel}>
          Cancel
        </button>
        <UnsetButton value={value} onCommit={onCommit} />
      </div>
    </EditorBox>
  );
}
