import { useEffect, useRef, useState } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { EventCount } from '../api/analytics.ts';
import { axesText, chartData, INTERVAL_SECONDS, intervalOf, utcText } from '../lib/axes.ts';

const COLORS = ['#4f46e5', '#059669', '#d97706', '#dc2626', '#0891b2', '#7c3aed', '#db2777', '#65a30d'];
/** Counts are whole numbers: the count axis ticks at whole steps only. */
const COUNT_STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 1e6, 1e7, 1e8];

/**
 * Events per name over time: one line per event name (uPlot, loaded with this page only). The
 * axes fit the buckets (time in UTC, as the buckets are) and counts start at 0; the figure's
 * caption says what the axes show.
 */
export function EventsChart({ counts }: { counts: EventCount[] }) {
  const ref = useRef<HTMLDivElement>(null);
  const [caption, setCaption] = useState('');
  useEffect(() => {
    const el = ref.current;
    if (!el || counts.length === 0) return;
    const interval = intervalOf(counts);
    const fitted = chartData(counts, interval);
    const half = INTERVAL_SECONDS[interval] / 2;
    const plot = new uPlot(
      {
        width: Math.max(320, el.clientWidth),
        height: 280,
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
        scales: {
          x: { time: true, range: () => fitted.x },
          y: { range: () => fitted.y },
        },
        series: [
          // The cursor names the bucket, not the middle it is drawn at.
          { label: `${interval} (UTC)`, value: (_u, v) => (v == null ? '' : utcText(v - half)) },
          ...fitted.names.map((name, i) => ({
            label: name,
            stroke: COLORS[i % COLORS.length],
            width: 2,
            points: { show: true },
          })),
        ],
        axes: [{}, { label: 'events', incrs: COUNT_STEPS }],
        // The caption reads the scales as drawn (they are set on the first draw, not at creation).
        hooks: { draw: [(u) => setCaption(axesText(u.scales.x!, u.scales.y!, interval))] },
      },
      fitted.series as uPlot.AlignedData,
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
  return (
    <figure className="w-full">
      <div ref={ref} data-testid="events-chart" className="w-full" />
      <figcaption className="mt-1 text-xs text-slate-500" data-testid="events-chart-axes">
        {caption}
      </figcaption>
    </figure>
  );
}
