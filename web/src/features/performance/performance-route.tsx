import { useState } from 'react';
import { useParams } from 'react-router';
import { QueryState } from '../../components/query-state.tsx';
import { Button } from '../../components/ui/button.tsx';
import { Dialog } from '../../components/ui/dialog.tsx';
import { useCanWrite } from '../../lib/session.ts';
import { toast } from '../../lib/toast.ts';
import {
  type AutoIndexReport,
  type ShapeReport,
  useBuildIndex,
  useDropIndex,
  usePerformance,
} from './api/performance.ts';
import { IndexesTable } from './components/indexes-table.tsx';
import { ShapesTable } from './components/shapes-table.tsx';
import { useClassPerformance } from './hooks/use-class-performance.ts';
import { msText } from './lib/report.ts';

/**
 * /apps/:appId/performance: the shapes of the app's finds per class, with their counts and times
 * and the index serving each, and the indexes the service built itself with their measured
 * effect. Admins build the index of a shape that scans, or drop an automatic one (both audited).
 */
export default function PerformanceRoute() {
  const { appId = '' } = useParams();
  const report = usePerformance(appId);
  const classes = useClassPerformance(report.data);
  const canWrite = useCanWrite();
  const build = useBuildIndex(appId);
  const drop = useDropIndex(appId);
  const [confirm, setConfirm] = useState<AutoIndexReport | null>(null);

  const onBuild = (shape: ShapeReport) =>
    build.mutate(shape, {
      onSuccess: (index) =>
        toast.success(
          `Index ${index.name} built.`,
          index.buildMs === undefined ? undefined : `It took ${msText(index.buildMs)}.`,
        ),
      onError: (err) => toast.error(err, 'Could not build the index'),
    });

  const onDrop = () => {
    const index = confirm!;
    setConfirm(null);
    drop.mutate(index, {
      onSuccess: () => toast.success(`Index ${index.name} dropped.`),
      onError: (err) => toast.error(err, 'Could not drop the index'),
    });
  };

  return (
    <div className="mx-auto max-w-6xl p-6">
      <div className="flex items-start justify-between gap-4">
        <div>
          <h1 className="text-xl font-semibold">Performance</h1>
          <p className="mt-1 mb-4 text-sm text-slate-500 dark:text-slate-400">
            The shapes of the finds on each class since the service started: how often and how long, and the
            index that serves each. A shape no index serves scans every row; the service builds its index
            itself once the shape is frequent on a large class (option <code>autoIndex</code>).
          </p>
        </div>
        <Button onClick={() => void report.refetch()} disabled={report.isFetching}>
          {report.isFetching && !report.isPending ? 'Refreshing…' : 'Refresh'}
        </Button>
      </div>
      <QueryState
        query={report}
        loading="Loading the query report…"
        failed="Could not load the query report"
        isEmpty={(r) => r.results.length === 0 && r.indexes.length === 0}
        empty={
          <p className="text-sm text-slate-500" data-testid="performance-empty">
            No finds recorded yet. Finds by a field (not by objectId) on the app's classes show here.
          </p>
        }
      >
        {() => (
          <div className="space-y-8">
            {classes.map((c) => (
              <section key={c.className} aria-labelledby={`performance-${c.className}`}>
                <h2 id={`performance-${c.className}`} className="mb-2 text-base font-semibold">
                  {c.className}
                </h2>
                {c.shapes.length > 0 && (
                  <ShapesTable
                    className={c.className}
                    shapes={c.shapes}
                    canWrite={canWrite}
                    building={build.isPending ? build.variables?.shape : undefined}
                    onBuild={onBuild}
                  />
                )}
                {c.indexes.length > 0 && (
                  <div className="mt-3">
                    <h3 className="mb-1 text-sm font-medium text-slate-600 dark:text-slate-300">
                      Automatic indexes
                    </h3>
                    <IndexesTable
                      className={c.className}
                      indexes={c.indexes}
                      canWrite={canWrite}
                      onDrop={setConfirm}
                    />
                  </div>
                )}
              </section>
            ))}
          </div>
        )}
      </QueryState>
      <Dialog
        open={confirm !== null}
        title="Drop this index?"
        onClose={() => setConfirm(null)}
        footer={
          <>
            <Button onClick={() => setConfirm(null)}>Cancel</Button>
            <Button variant="danger" onClick={onDrop}>
              Drop index
            </Button>
          </>
        }
      >
        <p className="text-sm">
          <code className="font-mono text-xs">{confirm?.name}</code> on {confirm?.className}. The finds it
          serves scan every row again; the service builds it again only once their shape is frequent anew.
        </p>
      </Dialog>
    </div>
  );
}
