import { SECTIONS } from '../sections.ts';

export function ComingSoon({ slug }: { slug: string }) {
  const section = SECTIONS.find((s) => s.slug === slug);
  return (
    <div className="p-8">
      <h1 className="text-xl font-semibold">{section?.label ?? slug}</h1>
      <p className="mt-2 text-sm text-slate-500 dark:text-slate-400">{section?.blurb}</p>
      <p className="mt-6 inline-block rounded-md bg-slate-100 px-3 py-2 text-sm text-slate-600 dark:bg-slate-800 dark:text-slate-300">
        Coming in a later release.
      </p>
    </div>
  );
}
