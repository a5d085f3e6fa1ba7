import { isImageFileName, isIssuedFileName, uploadNameOf } from '@bds/client/protocol';
import { useState } from 'react';
import { bffUrl, seg } from '../lib/api.ts';
import { Dialog } from './ui/dialog.tsx';

/** The console's own address of a stored file (same origin: the session cookie and the CSP allow it). */
export const consoleFileUrl = (appId: string, name: string) =>
  bffUrl(`/apps/${seg(appId)}/files/${seg(name)}`);

export const FOREIGN_FILE_TITLE =
  'Not a file stored by this service (written before file names were checked): shown as text, never opened.';

const LINK = 'text-blue-600 underline dark:text-blue-400';

/**
 * A File value. Only names the service issued are ever linked: an image is a thumbnail that opens
 * a preview inside the console, anything else a download. A name it never issued (a url stored
 * before names were checked) is plain text: the console neither links nor loads it.
 */
export function FileValue({ appId, name }: { appId: string; name: string }) {
  const [previewing, setPreviewing] = useState(false);
  if (!isIssuedFileName(name)) {
    return (
      <span
        className="font-mono text-xs text-amber-700 dark:text-amber-400"
        title={FOREIGN_FILE_TITLE}
        data-testid="file-value-foreign"
      >
        {name}
      </span>
    );
  }
  const href = consoleFileUrl(appId, name);
  const shown = uploadNameOf(name);
  if (!isImageFileName(name)) {
    return (
      <a className={LINK} href={href} download={shown} title={name} data-testid="file-value">
        {shown}
      </a>
    );
  }
  return (
    <span className="inline-flex items-center gap-1" title={name} data-testid="file-value">
      <button
        type="button"
        className="shrink-0 rounded"
        aria-label={`Preview ${shown}`}
        onClick={() => setPreviewing(true)}
      >
        <img src={href} alt={shown} className="h-6 w-6 rounded object-cover" loading="lazy" />
      </button>
      <a className={LINK} href={href} download={shown}>
        {shown}
      </a>
      <Dialog open={previewing} title={shown} onClose={() => setPreviewing(false)} wide>
        <img src={href} alt={shown} className="mx-auto max-h-[60vh] max-w-full object-contain" />
        <p className="mt-2 text-right text-sm">
          <a className={LINK} href={href} download={shown}>
            Download
          </a>
        </p>
      </Dialog>
    </span>
  );
}
