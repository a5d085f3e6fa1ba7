/** Schema changes: add/delete column, drop class, indexes editor. Each shows the service's answer. */
import { useState } from 'react';
import { FIELD_TYPES, type FieldSpec, type SchemaDoc } from '../../../lib/wire.ts';
import { dataApi } from '../api/bff.ts';

/**
 * `required` and `defaultValue` of a new column: a String default is the text as typed, any other
 * type's is read as JSON (`10`, `true`, `{"a": 1}`); text that is no JSON goes as it is, and the
 * service answers why it does not fit the type. An empty default sends none.
 */
export function fieldOptions(
  type: string,
  required: boolean,
  defaultText: string,
): { required?: boolean; defaultValue?: unknown } {
  const out: { required?: boolean; defaultValue?: unknown } = required ? { required: true } : {};
  if (defaultText === '') return out;
  if (type === 'String') return { ...out, defaultValue: defaultText };
  try {
    return { ...out, defaultValue: JSON.parse(defaultText) };
  } catch {
    return { ...out, defaultValue: defaultText };
  }
}

/** A column's options as the button's tooltip says them. */
function describeOptions(spec: FieldSpec | undefined): string | undefined {
  if (!spec) return undefined;
  const parts: string[] = [spec.type];
  if (spec.required) parts.push('required');
  if (spec.defaultValue !== undefined) parts.push(`default ${JSON.stringify(spec.defaultValue)}`);
  return parts.join(', ');
}

export function SchemaPanel({
  appId,
  schema,
  classNames,
  run,
  onDropped,
}: {
  appId: string;
  schema: SchemaDoc;
  classNames: string[];
  run(label: string, fn: () => Promise<unknown>): Promise<boolean>;
  onDropped(): void;
}) {
  const cls = schema.className;
  const [name, setName] = useState('');
  const [type, setType] = useState('String');
  const [target, setTarget] = useState(classNames[0] ?? '');
  const [idxName, setIdxName] = useState('');
  const [idxKeys, setIdxKeys] = useState('');
  const [confirmDrop, setConfirmDrop] = useState('');
  const [dimension, setDimension] = useState('384');
  const [required, setRequired] = useState(false);
  const [defaultText, setDefaultText] = useState('');
  const needsTarget = type === 'Pointer' || type === 'Relation';
  const isVector = type === 'Vector';
  // The service keeps `required` and `defaultValue` on every type but Relation and Vector.
  const takesOptions = type !== 'Relation' && !isVector;
  const input = 'rounded border px-1 dark:bg-gray-800';
  const own = Object.keys(schema.fields).filter(
    (f) => !['objectId', 'createdAt', 'updatedAt', 'ACL'].includes(f),
  );
  return (
    <div className="space-y-3 border-b p-2 text-sm" data-testid="schema-panel">
      <div className="flex flex-wrap items-center gap-1">
        <strong>Add column</strong>
        <input
          aria-label="column name"
          className={input}
          value={name}
          onChange={(e) => setName(e.target.value)}
          placeholder="name"
        />
        <select
          aria-label="column type"
          className={input}
          value={type}
          onChange={(e) => setType(e.target.value)}
        >
          {FIELD_TYPES.map((t) => (
            <option key={t}>{t}</option>
          ))}
        </select>
        {isVector && (
          <input
            aria-label="vector dimension"
            className={`${input} w-20`}
            type="number"
            min={1}
            value={dimension}
            onChange={(e) => setDimension(e.target.value)}
          />
        )}
        {needsTarget && (
          <select
            aria-label="target class"
            className={input}
            value={target}
            onChange={(e) => setTarget(e.target.value)}
          >
            {classNames.map((c) => (
              <option key={c}>{c}</option>
            ))}
          </select>
        )}
        {takesOptions && (
          <>
            <label className="flex items-center gap-1">
              <input
                type="checkbox"
                aria-label="column required"
                checked={required}
                onChange={(e) => setRequired(e.target.checked)}
              />
              required
            </label>
            <input
              aria-label="column default"
              className={input}
              value={defaultText}
              onChange={(e) => setDefaultText(e.target.value)}
              placeholder={type === 'String' ? 'default' : 'default (JSON)'}
            />
          </>
        )}
        <button
          type="button"
          className="rounded bg-blue-600 px-2 text-white"
          disabled={!name}
          onClick={() => {
            const added = name;
            const options = takesOptions ? fieldOptions(type, required, defaultText) : {};
            // Once added, clear the name unless the user has already typed the next one.
            run(`Add column ${added}`, () =>
              dataApi.addField(appId, cls, added, type, {
                ...(needsTarget ? { targetClass: target } : isVector ? { dimension: Number(dimension) } : {}),
                ...options,
              }),
            ).then((ok) => ok && setName((current) => (current === added ? '' : current)));
          }}
        >
          Add
        </button>
      </div>
      <div className="flex flex-wrap items-center gap-1">
        <strong>Delete column</strong>
        {own.map((f) => (
          <button
            key={f}
            type="button"
            className="rounded border px-1"
            title={describeOptions(schema.fields[f])}
            onClick={() =>
              window.confirm(`Delete column ${f} of ${cls} and its data in every row?`) &&
              run(`Delete column ${f}`, () => dataApi.deleteField(appId, cls, f))
            }
          >
            {f}
            {schema.fields[f]?.required ? '*' : ''} ✕
          </button>
        ))}
      </div>
      <div className="space-y-1">
        <strong>Indexes</strong>
        <ul>
          {Object.entries(schema.indexes ?? {}).map(([n, keys]) => (
            <li key={n} className="flex items-center gap-2">
              <code>{n}</code> <code className="text-xs">{JSON.stringify(keys)}</code>
              {n !== '_id_' && (
                <button
                  type="button"
                  className="text-xs underline"
                  onClick={() => run(`Drop index ${n}`, () => dataApi.deleteIndex(appId, cls, n))}
                >
                  drop
                </button>
              )}
            </li>
          ))}
        </ul>
        <div className="flex flex-wrap items-center gap-1">
          <input
            aria-label="index name"
            className={input}
            placeholder="index name"
            value={idxName}
            onChange={(e) => setIdxName(e.target.value)}
          />
          <input
            aria-label="index keys"
            className={input}
            placeholder="field:1, other:-1"
            value={idxKeys}
            onChange={(e) => setIdxKeys(e.target.value)}
          />
          <button
            type="button"
            className="rounded bg-blue-600 px-2 text-white"
            disabled={!idxName || !idxKeys}
            onClick={() => {
              const keys: Record<string, 1 | -1> = {};
              for (const part of idxKeys.split(',')) {
                const [f, d] = part.split(':').map((s) => s.trim());
                if (f) keys[f] = d === '-1' ? -1 : 1;
              }
              void run(`Add index ${idxName}`, () => dataApi.addIndex(appId, cls, idxName, keys));
            }}
          >
            Add index
          </button>
        </div>
      </div>
      <div className="flex flex-wrap items-center gap-1">
        <strong className="text-red-700">Drop class</strong>
        <input
          aria-label="confirm class name"
          className={input}
          placeholder={`type ${cls} to confirm`}
          value={confirmDrop}
          onChange={(e) => setConfirmDrop(e.target.value)}
        />
        <button
          type="button"
          className="rounded bg-red-600 px-2 text-white disabled:opacity-50"
          disabled={confirmDrop !== cls}
          onClick={() =>
            run(`Drop class ${cls}`, () => dataApi.dropClass(appId, cls)).then((ok) => ok && onDropped())
          }
        >
          Drop
        </button>
      </div>
    </div>
  );
}
