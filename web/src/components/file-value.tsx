import { bffUrl, seg } from '../lib/api.ts';

const IMAGE = /\.(png|jpe?g|gif|webp|avif|bmp|ico)$/i;

/** The console's own address of a stored file (same origin: the session cookie and the CSP allow it). */
export const consoleFileUrl = (appId: string, name: string) =>
  bffUrl(`/apps/${seg(appId)}/files/${seg(name)}`);

/** A File value: a thumbnail for images, a download link for anything else. */
export function FileValue({ appId, name }: { appId: string; name: string }) {
  const href = consoleFileUrl(appId, name);
  const shown = name.replace(/^[0-9a-f]{32}_/, '');
  if (IMAGE.test(name)) {
    return (
      <a
        href={href}
        target="_blank"
        rel="noreferrer"
        title={name}
        className="inline-flex items-center gap-1"
        data-testid="file-value"
      >
        <img src={href} alt={shown} className="h-6 w-6 rounded object-cover" loading="lazy" />
        <span className="text-blue-600 underline dark:text-blue-400">{shown}</span>
      </a>
    );
  }
  return (
    <a
      className="text-blue-600 underline dark:text-blue-400"
      href={href}
      download={shown}
      title={name}
      data-testid="file-value"
    >
      {shown}
    </a>
  );
}
