/** Read-only renderers of each wire type in a grid cell. */
import { Link } from 'react-router';
import { FileValue } from '../../../components/file-value.tsx';
import {
  aclSummary,
  dateIso,
  displayText,
  type FieldSpec,
  type FieldType,
  isPlainObject,
} from '../../../lib/wire.ts';

export interface CellProps {
  appId: string;
  className: string;
  objectId: string;
  field: string;
  type: FieldType;
  spec?: FieldSpec;
  value: unknown;
}

export const dataPath = (appId: string, cls: string, params?: Record<string, string>): string => {
  const base = `/apps/${encodeURIComponent(appId)}/data/${encodeURIComponent(cls)}`;
  const q = params ? new URLSearchParams(params).toString() : '';
  return q ? `${base}?${q}` : base;
};

export function CellValue({ appId, className, objectId, field, type, spec, value }: CellProps) {
  if (type === 'Relation') {
    const target = spec?.targetClass ?? (isPlainObject(value) ? String(value.className ?? '') : '');
    const where = { $relatedTo: { object: { __type: 'Pointer', className, objectId }, key: field } };
    return (
      <Link
        className="text-blue-600 underline dark:text-blue-400"
        to={dataPath(appId, target, { where: JSON.stringify(where) })}
        title={`Rows of ${target} related through ${field}`}
      >
        View {target}
      </Link>
    );
  }
  if (value === undefined || value === null)
    return <span className="text-gray-400">{value === null ? 'null' : ''}</span>;
  switch (type) {
    case 'Pointer': {
      if (!isPlainObject(value)) break;
      const target = String(value.className ?? spec?.targetClass ?? '');
      const id = String(value.objectId ?? '');
      return (
        <Link
          className="text-blue-600 underline dark:text-blue-400"
          to={dataPath(appId, target, { where: JSON.stringify({ objectId: id }), row: id })}
          title={`${target} ${id}`}
        >
          {id}
        </Link>
      );
    }
    case 'File': {
      if (!isPlainObject(value)) break;
      return <FileValue appId={appId} name={String(value.name ?? '')} />;
    }
    case 'Date': {
      const iso = dateIso(value);
      return <span title={iso ?? ''}>{displayText('Date', value)}</span>;
    }
    case 'Boolean':
      return (
        <span className={value ? 'text-green-700 dark:text-green-400' : 'text-gray-500'}>
          {value ? 'true' : 'false'}
        </span>
      );
    case 'Number':
      return <span className="tabular-nums">{String(value)}</span>;
    case 'ACL':
      return <span title={JSON.stringify(value)}>{aclSummary(value)}</span>;
    case 'GeoPoint':
      return <span title={JSON.stringify(value)}>{displayText('GeoPoint', value)}</span>;
    case 'Object':
    case 'Array':
    case 'Polygon':
    case 'Bytes': {
      const text = JSON.stringify(value);
      return (
        <span className="font-mono text-xs" title={JSON.stringify(value, null, 2)}>
          {text.length > 200 ? `${text.slice(0, 200)}…` : text}
        </span>
      );
    }
    default:
      break;
  }
  const text = displayText(type, value);
  return <span title={text.length > 40 ? text : undefined}>{text}</span>;
}
