/**
 * The charts of a simulation and of a sweep, as SVG text: the page shows them, the CLI writes
 * them to files (`--svg DIR`).
 */
import { PALETTE, lineChartSvg } from './plot.js';
import type { SimulationResult } from './simulate.js';
import type { SweepResult } from './sweep.js';

/** A chart: a file-name stem and its SVG text. */
export interface Figure { name: string; svg: string }

const color = (i: number): string => PALETTE[i % PALETTE.length];
const pct = (v: number): string => `${Math.round(v * 100)}%`;
const kilo = (v: number): string => (v >= 1000 ? `${Math.round(v / 1000)}k` : String(v));
const msText = (v: number): string => (v >= 1000 ? `${Number((v / 1000).toPrecision(3))}s` : `${Number(v.toPrecision(3))}ms`);

/** Hit rate over time and the TTFT distribution, one line per policy. */
export function resultCharts(r: SimulationResult): Figure[] {
  return [
    {
      name: 'hit-rate-over-time',
      svg: lineChartSvg({
        title: 'Prefix-cache hit rate over time', xLabel: 'simulated time (s)', yLabel: 'hit rate', yMin: 0, yMax: 1, yFormat: pct,
        xFormat: (v) => String(Math.round(v)),
        series: r.policies.map((m, i) => ({ label: m.policy, color: color(i), points: m.series.t_s.map((t, k) => [t, m.series.hit_rate[k]] as const) })),
      }),
    },
    {
      name: 'ttft-distribution',
      svg: lineChartSvg({
        title: 'TTFT distribution', xLabel: 'TTFT (log scale)', yLabel: 'share of requests', xLog: true, yMin: 0, yFormat: pct, xFormat: msText,
        series: r.policies.map((m, i) => {
          const h = m.ttft_histogram;
          const total = Math.max(1, h.counts.reduce((a, b) => a + b, 0));
          return { label: m.policy, color: color(i), points: h.edges_ms.map((e, k) => [e, h.counts[k] / total] as const) };
        }),
      }),
    },
  ];
}

/** Active tokens per rank over time, one chart per policy, all on one y scale. */
export function loadCharts(r: SimulationResult): Figure[] {
  let yMax = 1;
  for (const m of r.policies) for (const row of m.series.active_tokens) for (const v of row) yMax = Math.max(yMax, v);
  return r.policies.map((m, p) => ({
    name: `load-${p}`,
    svg: lineChartSvg({
      title: `Active tokens per worker rank: ${m.policy}`, xLabel: 'simulated time (s)', yLabel: 'active tokens', yMin: 0, yMax: yMax * 1.05,
      width: 420, height: 240, yFormat: kilo, xFormat: (v) => String(Math.round(v)), markers: 60,
      series: m.per_rank.map((rk, i) => ({
        label: `w${rk.worker_id}/${rk.dp_rank}`, color: color(i), points: m.series.t_s.map((t, k) => [t, m.series.active_tokens[i][k]] as const),
      })),
    }),
  }));
}

/** TTFT p50, TTFT p90 and hit rate against the swept value, one line per policy. */
export function sweepCharts(s: SweepResult): Figure[] {
  const labels = s.runs[0]?.policies.map((m) => m.policy) ?? [];
  const finite = s.values.every((v) => Number.isFinite(v));
  // a value of inf (unbounded capacity) plots one step past the largest finite value
  const xs = s.values.map((v, k) => (Number.isFinite(v) ? v : Math.max(0, ...s.values.filter(Number.isFinite)) * 2 || k + 1));
  const positive = xs.every((x) => x > 0);
  const spread = positive && Math.max(...xs) / Math.min(...xs) >= 8;
  const line = (name: string, title: string, yLabel: string, get: (m: SimulationResult['policies'][number]) => number, yLog: boolean,
    yFormat: (v: number) => string): Figure => ({
    name: `sweep-${s.knob}-${name}`,
    svg: lineChartSvg({
      title, xLabel: `${s.knob}${finite ? '' : ' (inf plotted at 2x the largest)'}${spread ? ', log scale' : ''}`, yLabel,
      xLog: spread, yLog, yMin: yLog ? undefined : 0, yFormat, xFormat: (v) => String(Number(v.toPrecision(4))), markers: 100,
      series: labels.map((label, i) => ({ label, color: color(i), points: s.runs.map((run, k) => [xs[k], get(run.policies[i])] as const) })),
    }),
  });
  return [
    line('ttft-p50', `TTFT p50 against ${s.knob}`, 'TTFT p50 (log scale)', (m) => m.ttft_ms.p50, true, msText),
    line('ttft-p90', `TTFT p90 against ${s.knob}`, 'TTFT p90 (log scale)', (m) => m.ttft_ms.p90, true, msText),
    line('hit-rate', `Prefix-cache hit rate against ${s.knob}`, 'hit rate', (m) => m.hit_rate, false, pct),
  ];
}
