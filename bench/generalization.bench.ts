/**
 * Does the recommended policy win where it was not tuned? (issue 27, point 3)
 *
 * One simulator grid (src/sim/grid.ts): workload families x fleets x loads, every other policy
 * (Dynamo's `kv`, the peers' routers, the baselines) and each candidate setting of `ttft`. Each
 * cell is judged by the targets:
 *   - load <= 0.85: TTFT p50 and p90 at most 2% above the best other policy's, p99 at most 5%
 *     above kv's, hit rate at least 0.9x the best other policy's;
 *   - load > 1: not the worst of all policies in any of the four metrics.
 * A setting's loss over a set of cells sums how far each target is missed (relative). The
 * setting is then chosen by leave-one-family-out: for each family, the setting with the least
 * loss on the other families, reported on the family left out; and the default, chosen on all.
 *
 *   node build/dist/bench/generalization.bench.js [--jobs 2] [--variants ttft,ttft:evict_weight=0]
 *     [--workloads ...] [--fleets ...] [--loads ...] [--seed 0] [--save grid.json | --from grid.json[,more.json]]
 *     [--baseline others.json] [--expected-output trace|none] [--markdown]
 *
 * `--baseline` takes a saved grid of the other policies (run once with `--save`): only the `ttft`
 * variants run then, at its measured saturations (the other policies' runs do not change); `--save`
 * then writes the variants' runs beside the baseline's other policies, a grid `--from` judges alone.
 * `--from` judges saved grids (`--save`, with every policy's runs) without running anything; several,
 * comma-separated, are judged as one set of cells (a grid of other fleets or of changed knobs).
 * `--workloads` takes `trace=FILE` too (a recorded JSONL trace, src/sim/grid.ts): a family of its own.
 * `--expected-output none`: the simulated clients send no `expected_output_tokens` (the other
 * policies do not read it, so a baseline saved either way serves).
 *
 * `npm run bench -- generalization` runs the whole grid (about an hour on 2 cores).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { runGrid } from '../src/grid-pool.js';
import { gridJson } from '../src/sim/grid-report.js';
import { bestOf, type CellMetrics, type GridResult, type GridSpec } from '../src/sim/grid.js';

const OTHERS = 'kv,llmd,sglang_cache_aware,ray_prefix_affinity,session_affinity,least_loaded,round_robin,random';
const { values } = parseArgs({
  options: {
    jobs: { type: 'string' }, variants: { type: 'string' }, workloads: { type: 'string' }, fleets: { type: 'string' },
    loads: { type: 'string' }, seed: { type: 'string' }, save: { type: 'string' }, from: { type: 'string' }, markdown: { type: 'boolean' },
    baseline: { type: 'string' }, 'expected-output': { type: 'string' }, help: { type: 'boolean', short: 'h' },
  },
});
if (values.help) {
  console.log(`usage: node build/dist/bench/generalization.bench.js [--jobs 2] [--variants ttft,ttft:evict_weight=0]
    [--workloads ...] [--fleets ...] [--loads ...] [--seed 0] [--save grid.json | --from grid.json[,more.json]]
    [--baseline others.json] [--expected-output trace|none] [--markdown]
Judges each ttft setting (--variants) against every other policy over a grid of workload families
(or trace=FILE, a recorded JSONL trace), fleets and loads, and chooses among them by
leave-one-family-out (docs/policies.md).`);
  process.exit(0);
}
const variants = (values.variants ?? 'ttft').split(',');
const list = (v: string | undefined, d: string): string[] => (v ?? d).split(',');

interface Cell { workload: string; fleet: string; load: number; runs: Map<string, CellMetrics> }

const cellsOf = (g: GridResult): Cell[] =>
  g.cells.map((c) => ({ workload: c.workload, fleet: c.fleet, load: c.load, runs: new Map(c.policies.map((m) => [m.policy, m])) }));
const key = (c: { workload: string; fleet: string; load: number }): string => `${c.workload}@${c.fleet}@${c.load}`;

/**
 * The cells: read (`--from`), or run. With `--baseline` (a saved grid of the other policies), only
 * the variants run, at the baseline's saturations, and join its cells.
 */
async function grid(): Promise<Cell[]> {
  // several saved grids (comma-separated) are judged as one: their cells side by side
  if (values.from) return values.from.split(',').flatMap((f) => cellsOf(JSON.parse(readFileSync(f, 'utf8')) as GridResult));
  const base = values.baseline ? JSON.parse(readFileSync(values.baseline, 'utf8')) as GridResult : null;
  const g = await runGrid({
    workloads: list(values.workloads, base ? [...new Set(base.cells.map((c) => c.workload))].join(',') : 'system_prompt,multi_turn,agentic,doc_qa,no_reuse,mixed'),
    fleets: list(values.fleets, base ? [...new Set(base.cells.map((c) => c.fleet))].join(',') : '8x1,16x2,64x1,mixed'),
    loads: list(values.loads, base ? [...new Set(base.cells.map((c) => c.load))].join(',') : '0.3,0.6,0.85,1.1').map(Number),
    policies: base ? variants.join(',') : [...variants, OTHERS].join(','), seed: Number(values.seed ?? 0),
    expectedOutput: values['expected-output'] as GridSpec['expectedOutput'],
    saturations: base ? Object.fromEntries(base.saturations.map((s) => [`${s.workload}@${s.fleet}`, s.saturation])) : undefined,
  }, { jobs: Number(values.jobs ?? 2), onProgress: (p) => process.stderr.write(`\r[${p.done}/${p.total}]`) });
  process.stderr.write('\n');
  const joined = base ? join(base, g) : g;
  // a grid saved with --baseline holds the baseline's other policies too: --from judges it alone
  if (values.save) writeFileSync(values.save, `${JSON.stringify(gridJson(joined))}\n`);
  return cellsOf(joined);
}

/** The variants' cells (`g`) with the baseline's runs of the other policies beside theirs. */
function join(base: GridResult, g: GridResult): GridResult {
  const others = new Map(base.cells.map((c) => [key(c), c]));
  const cells = g.cells.map((c) => {
    const b = others.get(key(c));
    if (!b) throw new Error(`the baseline has no cell ${key(c)}`);
    const policies = b.policies.filter((m) => isOther(m.policy)).concat(c.policies);
    return { ...c, policies, best: bestOf(policies) };
  });
  return { ...g, spec: { ...g.spec, policies: cells[0]?.policies.map((m) => m.policy).join(',') ?? g.spec.policies }, cells };
}

const family = (workload: string): string => workload.split(':')[0];
/**
 * The policies a setting is judged against: every run but the `ttft` settings (a baseline saved
 * with a `ttft` run of its own, or a grid read with `--from` holding settings not listed in
 * `--variants`, would otherwise have one setting judged against another).
 */
const isOther = (policy: string): boolean => !variants.includes(policy) && policy.split(':')[0] !== 'ttft';
const METRICS = [
  { key: 'p50', of: (m: CellMetrics) => m.ttft_ms.p50 }, { key: 'p90', of: (m: CellMetrics) => m.ttft_ms.p90 },
  { key: 'p99', of: (m: CellMetrics) => m.ttft_ms.p99 }, { key: 'hit', of: (m: CellMetrics) => m.hit_rate, higher: true },
] as const;

interface Verdict { ratios: Record<string, number>; missed: string[]; loss: number }

/** How `variant` does in `cell` against the targets (ratios: to the best other, p99 to kv's). */
function judge(cell: Cell, variant: string): Verdict {
  const me = cell.runs.get(variant);
  if (!me) throw new Error(`no run of ${variant} in ${cell.workload} ${cell.fleet} ${cell.load}`);
  const others = [...cell.runs].filter(([k]) => isOther(k)).map(([, m]) => m);
  const ratios: Record<string, number> = {}, missed: string[] = [];
  let loss = 0;
  if (cell.load <= 1) {
    const best = (of: (m: CellMetrics) => number, higher = false): number => (higher ? Math.max : Math.min)(...others.map(of));
    ratios.p50 = me.ttft_ms.p50 / best((m) => m.ttft_ms.p50);
    ratios.p90 = me.ttft_ms.p90 / best((m) => m.ttft_ms.p90);
    const kv = cell.runs.get('kv');
    if (!kv) throw new Error(`no run of kv in ${cell.workload} ${cell.fleet} ${cell.load}: judge a grid with every policy's runs`);
    ratios.p99 = me.ttft_ms.p99 / kv.ttft_ms.p99;
    const bestHit = best((m) => m.hit_rate, true);
    ratios.hit = bestHit > 0 ? me.hit_rate / bestHit : 1; // nothing to hit: met
    const bounds: [string, number, boolean][] = [['p50', 1.02, false], ['p90', 1.02, false], ['p99', 1.05, false], ['hit', 0.9, true]];
    for (const [k, b, floor] of bounds) {
      const over = floor ? b - ratios[k] : ratios[k] - b;
      if (over > 0) { missed.push(k); loss += over; }
    }
  } else {
    for (const g of METRICS) {
      const mine = g.of(me), vals = others.map(g.of);
      const worst = 'higher' in g ? Math.min(...vals) : Math.max(...vals);
      ratios[g.key] = worst > 0 ? mine / worst : 1;
      const over = 'higher' in g ? (worst > 0 ? worst / Math.max(mine, 1e-9) - 1 : 0) : mine / worst - 1;
      if (over > 0) { missed.push(`${g.key} worst`); loss += over; }
    }
  }
  return { ratios, missed, loss };
}

const lossOf = (cells: Cell[], v: string): number => cells.reduce((s, c) => s + judge(c, v).loss, 0);
const missesOf = (cells: Cell[], v: string): number => cells.filter((c) => judge(c, v).missed.length > 0).length;
const choose = (cells: Cell[]): string => variants.reduce((a, b) => (lossOf(cells, b) < lossOf(cells, a) ? b : a));

const cells = await grid();
const families = [...new Set(cells.map((c) => family(c.workload)))];
const heldOut = new Map(families.map((f) => [f, choose(cells.filter((c) => family(c.workload) !== f))]));
const all = choose(cells);

const fmt = (v: Verdict, k: string): string => (k === 'hit' ? `${v.ratios[k].toFixed(2)}x` : `${v.ratios[k].toFixed(3)}`);
const rows: string[] = [];
const head = '| family | fleet | load | held out: setting (tuned on the other families) | p50 / best | p90 / best | p99 / kv | hit / best | met | default: p50 / p90 / p99 / hit | met |';
rows.push(head, `|${'---|'.repeat(head.split('|').length - 2)}`);
let missedHeld = 0, missedDefault = 0;
for (const c of cells) {
  const f = family(c.workload), h = judge(c, heldOut.get(f) as string), d = judge(c, all);
  if (h.missed.length) missedHeld++;
  if (d.missed.length) missedDefault++;
  const note = c.load > 1 ? ' (vs worst)' : '';
  rows.push(`| ${c.workload} | ${c.fleet} | ${c.load}${note} | **${heldOut.get(f)}** | ${fmt(h, 'p50')} | ${fmt(h, 'p90')} | ${fmt(h, 'p99')} | ${fmt(h, 'hit')} | `
    + `${h.missed.length ? `no: ${h.missed.join(', ')}` : 'yes'} | ${['p50', 'p90', 'p99', 'hit'].map((k) => fmt(d, k)).join(' / ')} | ${d.missed.length ? `no: ${d.missed.join(', ')}` : 'yes'} |`);
}
/**
 * The default against every other policy in the cells up to saturation: in how many cells each
 * TTFT statistic is the lowest of all (ties count), and its p90, p99 and mean over `kv`'s
 * (geometric means).
 */
function standing(v: string): string {
  const under = cells.filter((c) => c.load <= 1);
  const stats = ['p50', 'p90', 'p99', 'mean'] as const;
  const lowest = Object.fromEntries(stats.map((k) => [k, 0])) as Record<(typeof stats)[number], number>;
  let nearMean = 0;
  const logs = { p90: 0, p99: 0, mean: 0 };
  for (const c of under) {
    const me = c.runs.get(v) as CellMetrics, kv = c.runs.get('kv') as CellMetrics;
    const others = [...c.runs].filter(([k]) => isOther(k)).map(([, m]) => m);
    for (const k of stats) if (me.ttft_ms[k] <= Math.min(...others.map((m) => m.ttft_ms[k]))) lowest[k]++;
    if (me.ttft_ms.mean <= 1.01 * Math.min(...others.map((m) => m.ttft_ms.mean))) nearMean++;
    for (const k of ['p90', 'p99', 'mean'] as const) logs[k] += Math.log(me.ttft_ms[k] / kv.ttft_ms[k]);
  }
  const gm = (k: keyof typeof logs): string => Math.exp(logs[k] / under.length).toFixed(2);
  return `default up to saturation (${under.length} cells): the lowest TTFT p50 of all policies in ${lowest.p50}, p90 in ${lowest.p90}, `
    + `p99 in ${lowest.p99}, mean in ${lowest.mean} (within 1% of the lowest in ${nearMean}); over kv's: p90 ${gm('p90')}x, `
    + `p99 ${gm('p99')}x, mean ${gm('mean')}x (geometric means)`;
}

const out = [
  `default setting (least loss on all families): ${all}`,
  standing(all),
  `held out (each family's setting chosen on the others): ${[...heldOut].map(([f, v]) => `${f}: ${v}`).join('; ')}`,
  `cells missing a target: held out ${missedHeld} of ${cells.length}; default ${missedDefault} of ${cells.length}`,
  `cells missed and loss per setting on all cells: ${variants.map((v) => `${v} ${missesOf(cells, v)}, ${lossOf(cells, v).toFixed(3)}`).join('; ')}`,
  '',
  ...rows,
];
console.log(values.markdown ? out.join('\n') : out.join('\n').replaceAll('**', ''));
