/**
 * The grid as text: the measured saturations, one table of every (workload, fleet, load,
 * policy) with the best value of each metric in its cell marked `*`, and how often each policy
 * was best. Isomorphic, like report.ts.
 */
import { GRID_METRICS, type GridResult } from './grid.js';
import { jsonReady } from './report.js';

const ms = (x: number): string => (x >= 10_000 ? `${(x / 1000).toFixed(1)}s` : `${x.toFixed(0)}ms`);
const pct = (x: number): string => `${(x * 100).toFixed(1)}%`;

/** Aligned columns: text left-aligned in the first `left` columns, right-aligned after. */
function table(rows: readonly string[][], left: number): string[] {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  const line = (r: readonly string[]): string => r.map((cell, c) => (c < left ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  ').trimEnd();
  return [line(rows[0]), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)];
}

/** The grid as text (see the file comment). */
export function formatGrid(g: GridResult): string {
  const out: string[] = [];
  const s = g.spec;
  out.push(`grid: ${s.workloads.length} workload(s) x ${s.fleets.length} fleet(s) x ${s.loads.length} load(s) x `
    + `${g.cells[0]?.policies.length ?? 0} policies, seed ${s.seed ?? 0}; load = arrival rate / saturation throughput (kv)`, '');
  out.push(...table([
    ['workload', 'fleet', 'requests', 'saturation req/s', 'passes'],
    ...g.saturations.map((x) => [x.workload, x.fleet, String(x.requests),
      `${x.saturation.requests_per_s.toFixed(2)}${x.saturation.saturated ? '' : ' (not reached: lower bound)'}`, String(x.saturation.passes.length)]),
  ], 2), '');
  const head = ['workload', 'fleet', 'load', 'policy', ...GRID_METRICS.map((m) => m.head)];
  const rows = g.cells.flatMap((c) => c.policies.map((m) => [c.workload, c.fleet, String(c.load), m.policy,
    ...GRID_METRICS.map((k) => `${k.higher ? pct(k.of(m)) : ms(k.of(m))}${c.best[k.key].includes(m.policy) ? '*' : ' '}`)]));
  out.push(...table([head, ...rows], 4), '', '* best in its cell (lowest TTFT, highest hit rate; ties all marked)', '');
  const policies = g.cells[0]?.policies.map((m) => m.policy) ?? [];
  out.push(...table([
    [`best in cells (of ${g.cells.length})`, ...GRID_METRICS.map((m) => m.head)],
    ...policies.map((p) => [p, ...GRID_METRICS.map((m) => String(g.cells.filter((c) => c.best[m.key].includes(p)).length))]),
  ], 1));
  return `${out.join('\n')}\n`;
}

/** The grid as JSON-ready data (Infinity capacities as null). */
export function gridJson(g: GridResult): unknown {
  return jsonReady(g);
}
