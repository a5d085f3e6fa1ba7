import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { EventCount } from '../api/analytics.ts';

const COLORS = ['#4f46e5', '#059669', '#d97706', '#dc2626', '#0891b2', '#7c3aed', '#db2777', '#65a30d'];

/** Seconds since the epoch of a bucket (`YYYY-MM-DDTHH` or `YYYY-MM-DD`, UTC). */
const bucketTime = (bucket: string) =>
  Date.parse(bucket.length === 13 ? `${bucket}:00:00Z` : `${bucket}T00:00:00Z`) / 1000;

/** Events per name over time: one line per event name (uPlot, loaded with this page only). */
export function EventsChart({ counts }: { counts: EventCount[] }) {
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = ref.current;
    if (!el || counts.length === 0) return;
    const buckets = [...new Set(counts.map((c) => c.bucket))].sort();
    const names = [...new Set(counts.map((c) => c.name))].sort();
    const index = new Map(counts.map((c) => [`${c.name}\u0000${c.bucket}`, c.count]));
    const data: uPlot.AlignedData = [
      buckets.map(bucketTime),
      ...names.map((n) => buckets.map((b) => index.get(`${n}\u0000${b}`) ?? 0)),
    ];
    const plot = new uPlot(
      {
        width: Math.max(320, el.clientWidth),
        height: 280,
        scales: { x: { time: true } },
        series: [
          {},
          ...names.map((name, i) => ({
            label: name,
            stroke: COLORS[i % COLORS.length],
            width: 2,
            points: { show: true },
          })),
        ],
        axes: [{}, { label: 'events' }],
      },
      data,
      el,
    );
    const resize = new ResizeObserver(() =>
      plot.setSize({ width: Math.max(320, el.clientWidth), height: 280 }),
    );
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [counts]);
  return <div ref={ref} data-testid="events-chart" className="w-full" />;
}
