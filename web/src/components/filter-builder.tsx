/** Filter builder (and/or/nor groups of conditions) with a raw JSON tab and saved filters. */
import { useState } from 'react';
import {
  type Condition,
  filterToWhere,
  firstProblem,
  type Group,
  LIST_OPERATORS,
  type Node,
  OPERATORS,
  type Operator,
  type SavedFilter,
  SCALAR_OPERATORS,
  type Where,
  whereToFilter,
} from '../lib/filter.ts';
import { editText, parseEdit, parseJson, type SchemaDoc, toQueryValue, typeOf } from '../lib/wire.ts';
import { SavedFilterList } from './saved-filters.tsx';

export interface FilterBuilderProps {
  schema: SchemaDoc;
  columns: string[];
  where: Where;
  /** `where` as typed in the JSON tab when it was applied from there: shown as typed. */
  typed?: string;
  /** The service's refusal of the applied filter (rows or count), shown with it. */
  refusal?: string | null;
  /** `typed` is the JSON tab's text when the filter is applied from there. */
  onApply(where: Where, typed?: string): void;
  /** The class's saved filters (kept by the bff): the user's own and those shared with them. */
  saved: SavedFilter[];
  /** The console user looking: the owner of the filters they may delete. */
  me: string;
  canSave: boolean;
  onSave(name: string, where: Where): void;
  onDelete(filter: SavedFilter): void;
  /** Shares the user's own filter with the app's console users, or keeps it theirs only. */
  onShare?(filter: SavedFilter, shared: boolean): void;
}

const input = 'rounded border px-1 text-sm dark:bg-gray-800';
const TYPE_A_VALUE = 'type a value';

/** The builder's tree of a where, or null when the builder cannot show it (the JSON tab can). */
function treeOf(where: Where): Group | null {
  try {
    return whereToFilter(where);
  } catch {
    return null;
  }
}

export function FilterBuilder(p: FilterBuilderProps) {
  const [initial] = useState(() => treeOf(p.where));
  const [tree, setTree] = useState<Group>(initial ?? { kind: 'group', op: 'and', children: [] });
  const [raw, setRaw] = useState(p.typed ?? JSON.stringify(p.where, null, 2));
  // A filter typed as JSON, or one the builder cannot show, opens in the JSON tab: never as {}.
  const [mode, setMode] = useState<'builder' | 'json'>(
    p.typed !== undefined || initial === null ? 'json' : 'builder',
  );
  const [err, setErr] = useState<string | null>(null);
  const [name, setName] = useState('');

  const current = (): Where | null => {
    if (mode === 'builder') {
      // A value that does not parse is never applied as null: say what is wrong and keep the text.
      const problem = firstProblem(tree);
      if (problem) {
        setErr(`Not applied: ${problem}`);
        return null;
      }
      setErr(null);
      return filterToWhere(tree);
    }
    const r = parseJson(raw);
    if (!r.ok || typeof r.value !== 'object' || r.value === null || Array.isArray(r.value)) {
      setErr(r.ok ? 'the where clause must be a JSON object' : r.error);
      return null;
    }
    return r.value as Where;
  };

  const switchTo = (m: 'builder' | 'json') => {
    setErr(null);
    if (m === 'json') setRaw(JSON.stringify(filterToWhere(tree), null, 2));
    else {
      const w = current();
      if (!w) return;
      try {
        setTree(whereToFilter(w));
      } catch (e) {
        return setErr((e as Error).message);
      }
    }
    setMode(m);
  };

  return (
    <div className="space-y-2 border-b p-2" data-testid="filter-builder">
      <div className="flex gap-2 text-sm">
        <button
          type="button"
          className={mode === 'builder' ? 'font-bold' : ''}
          onClick={() => switchTo('builder')}
        >
          Builder
        </button>
        <button type="button" className={mode === 'json' ? 'font-bold' : ''} onClick={() => switchTo('json')}>
          JSON
        </button>
      </div>
      {mode === 'builder' ? (
        <GroupEditor group={tree} schema={p.schema} columns={p.columns} onChange={setTree} root />
      ) : (
        <textarea
          aria-label="where JSON"
          className="h-32 w-full rounded border font-mono text-xs dark:bg-gray-800"
          value={raw}
          onChange={(e) => setRaw(e.target.value)}
        />
      )}
      {(err || p.refusal) && (
        <div className="text-xs text-red-600" role="alert">
          {err ?? `The service refused this filter: ${p.refusal}`}
        </div>
      )}
      <div className="flex flex-wrap items-center gap-2 text-sm">
        <button
          type="button"
          className="rounded bg-blue-600 px-2 py-0.5 text-white"
          onClick={() => {
            const w = current();
            if (w) p.onApply(w, mode === 'json' ? raw : undefined);
          }}
        >
          Apply filter
        </button>
        <button type="button" className="rounded border px-2 py-0.5" onClick={() => p.onApply({})}>
          Clear
        </button>
        {p.canSave && (
          <>
            <input
              className={input}
              placeholder="filter name"
              value={name}
              onChange={(e) => setName(e.target.value)}
              aria-label="saved filter name"
            />
            <button
              type="button"
              className="rounded border px-2 py-0.5"
              disabled={!name.trim()}
              onClick={() => {
                const w = current();
                if (w) p.onSave(name.trim(), w);
              }}
            >
              Save filter
            </button>
          </>
        )}
        <SavedFilterList
          saved={p.saved}
          me={p.me}
          canSave={p.canSave}
          onApply={(w) => p.onApply(w)}
          onDelete={p.onDelete}
          onShare={p.onShare}
        />
      </div>
    </div>
  );
}

function GroupEditor({
  group,
  schema,
  columns,
  onChange,
  root,
}: {
  group: Group;
  schema: SchemaDoc;
  columns: string[];
  onChange(g: Group): void;
  root?: boolean;
}) {
  const set = (i: number, n: Node | null) => {
    const children = [...group.children];
    if (n) children[i] = n;
    else children.splice(i, 1);
    onChange({ ...group, children });
  };
  return (
    <div className={`space-y-1 ${root ? '' : 'ml-4 border-l pl-2'}`}>
      <div className="flex items-center gap-2 text-sm">
        <select
          aria-label="group operator"
          className={input}
          value={group.op}
          onChange={(e) => onChange({ ...group, op: e.target.value as Group['op'] })}
        >
          <option value="and">all of (and)</option>
          <option value="or">any of (or)</option>
          <option value="nor">none of (nor)</option>
        </select>
        <button
          type="button"
          className="rounded border px-1"
          onClick={() =>
            onChange({
              ...group,
              children: [
                ...group.children,
                { kind: 'cond', field: columns[0] ?? 'objectId', op: '$eq', value: '', error: TYPE_A_VALUE },
              ],
            })
          }
        >
          + condition
        </button>
        <button
          type="button"
          className="rounded border px-1"
          onClick={() =>
            onChange({ ...group, children: [...group.children, { kind: 'group', op: 'or', children: [] }] })
          }
        >
          + group
        </button>
      </div>
      {group.children.map((n, i) =>
        n.kind === 'group' ? (
          // biome-ignore lint/suspicious/noArrayIndexKey: conditions have no identity but their place
          <div key={`g${i}`} className="flex items-start gap-1">
            <GroupEditor group={n} schema={schema} columns={columns} onChange={(g) => set(i, g)} />
            <button type="button" aria-label="remove group" onClick={() => set(i, null)}>
              ✕
            </button>
          </div>
        ) : (
          <ConditionEditor
            // biome-ignore lint/suspicious/noArrayIndexKey: conditions have no identity but their place
            key={`c${i}`}
            cond={n}
            schema={schema}
            columns={columns}
            onChange={(c) => set(i, c)}
          />
        ),
      )}
    </div>
  );
}

function valueText(c: Condition, schema: SchemaDoc): string {
  if (SCALAR_OPERATORS.has(c.op)) return editText(typeOf(schema, c.field), c.value);
  if (c.op === '$regex') return typeof c.value === 'string' ? c.value : '';
  return c.value === undefined || c.value === '' ? '' : JSON.stringify(c.value);
}

function ConditionEditor({
  cond,
  schema,
  columns,
  onChange,
}: {
  cond: Condition;
  schema: SchemaDoc;
  columns: string[];
  onChange(c: Condition | null): void;
}) {
  const [text, setText] = useState(valueText(cond, schema));
  /**
   * Reads the typed text for this operator and field. The operator and field always change as
   * chosen; a value that does not parse (yet) marks the condition with why, and keeps the text.
   */
  const commitText = (t: string, op: Operator = cond.op, field = cond.field) => {
    setText(t);
    const type = typeOf(schema, field);
    const next = { ...cond, op, field };
    if (op === '$regex') return onChange({ ...next, value: t, error: t ? undefined : TYPE_A_VALUE });
    if (t.trim() === '') return onChange({ ...next, error: TYPE_A_VALUE });
    if (SCALAR_OPERATORS.has(op)) {
      const r = parseEdit(type === 'ACL' ? 'Object' : type, t, schema.fields[field]?.targetClass);
      if (!r.ok) return onChange({ ...next, error: r.error });
      return onChange({ ...next, value: toQueryValue(type, r.value ?? null), error: undefined });
    }
    const r = parseJson(t);
    if (!r.ok) return onChange({ ...next, error: r.error });
    if (LIST_OPERATORS.has(op) && !Array.isArray(r.value))
      return onChange({ ...next, error: 'expected a JSON array, e.g. [1, 2]' });
    onChange({ ...next, value: r.value, error: undefined });
  };
  const err = cond.error && !(cond.error === TYPE_A_VALUE && text === '') ? cond.error : null;
  const type = typeOf(schema, cond.field);
  return (
    <div className="flex flex-wrap items-center gap-1 text-sm" data-testid="filter-condition">
      {cond.op !== '$relatedTo' && (
        <input
          list="db-filter-fields"
          aria-label="field"
          className={`${input} w-36`}
          value={cond.field}
          onChange={(e) => commitText(text, cond.op, e.target.value)}
        />
      )}
      <datalist id="db-filter-fields">
        {columns.map((c) => (
          <option key={c} value={c} />
        ))}
      </datalist>
      <select
        aria-label="operator"
        className={input}
        value={cond.op}
        onChange={(e) => {
          const op = e.target.value as Operator;
          if (op === '$exists') onChange({ ...cond, op, value: true, extra: undefined, error: undefined });
          else commitText(text, op);
        }}
      >
        {OPERATORS.map((o) => (
          <option key={o.op} value={o.op}>
            {o.label} ({o.op})
          </option>
        ))}
      </select>
      {cond.op === '$exists' ? (
        <select
          aria-label="value"
          className={input}
          value={String(cond.value)}
          onChange={(e) => onChange({ ...cond, value: e.target.value === 'true' })}
        >
          <option value="true">true</option>
          <option value="false">false</option>
        </select>
      ) : (
        <input
          aria-label="value"
          className={`${input} w-56`}
          value={text}
          placeholder={SCALAR_OPERATORS.has(cond.op) || cond.op === '$regex' ? type : 'JSON'}
          onChange={(e) => commitText(e.target.value)}
        />
      )}
      {cond.op === '$regex' && (
        <input
          aria-label="regex options"
          className={`${input} w-12`}
          placeholder="imxs"
          value={String(cond.extra?.$options ?? '')}
          onChange={(e) =>
            onChange({ ...cond, extra: e.target.value ? { $options: e.target.value } : undefined })
          }
        />
      )}
      {cond.op === '$nearSphere' && (
        <input
          aria-label="max distance km"
          className={`${input} w-24`}
          placeholder="max km"
          value={String(cond.extra?.$maxDistanceInKilometers ?? '')}
          onChange={(e) =>
            onChange({
              ...cond,
              extra: e.target.value ? { $maxDistanceInKilometers: Number(e.target.value) } : undefined,
            })
          }
        />
      )}
      <button type="button" aria-label="remove condition" onClick={() => onChange(null)}>
        ✕
      </button>
      {err && (
        <span className="text-xs text-red-600" data-testid="condition-error">
          {err}
        </span>
      )}
    </div>
  );
}
