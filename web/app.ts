/**
 * The simulator page: reads the form (trace, fleet, policies, cost knobs, a custom scorer), runs
 * the simulation in a Web Worker started from a blob URL (works from file:// too), and renders
 * the metrics table and the charts. Bundled by scripts/build.mjs into one classic script.
 */
import type { RunRequest, WorkerMessage } from './protocol.js';
import type { SimulationResult } from '../src/sim/simulate.js';
import { REPORT_COLUMNS } from '../src/sim/report.js';
import { EXAMPLE_SCORER } from '../src/sim/custom-scorer.js';
import { DEFAULT_PROFILE, PERF_PROFILES } from '../src/sim/perf-model.js';
import { PALETTE, lineChart } from './charts.js';

const $ = <T extends HTMLElement>(id: string): T => {
  const e = document.getElementById(id);
  if (!e) throw new Error(`page element #${id} is missing`);
  return e as T;
};
const val = (id: string): string => $<HTMLInputElement>(id).value.trim();
const num = (id: string): number | undefined => (val(id) === '' ? undefined : val(id) === 'inf' ? Infinity : Number(val(id)));

let worker: Worker | null = null;

function startWorker(): Worker {
  const url = URL.createObjectURL(new Blob([__WORKER_SOURCE__], { type: 'text/javascript' }));
  return new Worker(url);
}

async function traceText(): Promise<string> {
  const file = $<HTMLInputElement>('trace-file').files?.[0];
  if ($<HTMLInputElement>('use-file').checked) {
    if (!file) throw new Error('choose a trace file, or use the bundled sample');
    return file.text();
  }
  return __SAMPLE_TRACE__;
}

function request(trace: string): RunRequest {
  const kinds = Array.from(document.querySelectorAll<HTMLInputElement>('input[name=policy]:checked'), (e) => e.value);
  const extra = val('extra-policies');
  const policies = [...kinds, ...(extra ? extra.split(',').map((s) => s.trim()) : [])].join(',');
  const useScorer = policies.split(',').some((p) => p.split(':')[0] === 'custom');
  return {
    type: 'run', trace, limit: num('limit'), policies, seed: num('seed') ?? 0, speed: num('speed') ?? 1,
    fleet: {
      workers: num('workers'), dpRanks: num('dp-ranks'), blockSize: num('block-size'), capacityBlocks: num('capacity-blocks'),
      profile: $<HTMLSelectElement>('profile').value, maxConcurrent: num('max-concurrent'),
      maxBatchedTokens: num('max-batched-tokens'),
    },
    queue: num('queue-threshold') === undefined ? undefined : { threshold: num('queue-threshold') as number },
    knobs: { overlapScoreCredit: num('credit'), prefillLoadScale: num('scale'), routerTemperature: num('temperature') },
    scorer: useScorer ? $<HTMLTextAreaElement>('scorer').value : undefined,
  };
}

function status(text: string, state: string): void {
  $('status').textContent = text;
  document.body.dataset.state = state;
}

async function run(): Promise<void> {
  const button = $<HTMLButtonElement>('run');
  button.disabled = true;
  try {
    const req = request(await traceText());
    worker ??= startWorker();
    status('starting…', 'running');
    const w = worker;
    await new Promise<void>((resolve) => {
      w.onmessage = (ev: MessageEvent<WorkerMessage>) => {
        const m = ev.data;
        if (m.type === 'progress') {
          const p = m.progress;
          $<HTMLProgressElement>('progress').value = (p.index + p.done / Math.max(1, p.total)) / p.policies;
          status(`${p.policy} (${p.index + 1}/${p.policies}): ${p.done}/${p.total} requests`, 'running');
          return;
        }
        if (m.type === 'done') {
          $<HTMLProgressElement>('progress').value = 1;
          render(m.result);
          status(`${m.requests} requests × ${m.result.policies.length} policies in ${(m.wallMs / 1000).toFixed(1)} s`, 'done');
        } else status(`error: ${m.message}`, 'error');
        resolve();
      };
      w.onerror = (e) => { status(`error: ${e.message}`, 'error'); worker = null; resolve(); };
      w.postMessage(req);
    });
  } catch (err) {
    status(`error: ${err instanceof Error ? err.message : String(err)}`, 'error');
  } finally {
    button.disabled = false;
  }
}

function render(r: SimulationResult): void {
  const table = $<HTMLTableElement>('metrics');
  table.replaceChildren();
  const head = table.createTHead().insertRow();
  for (const [h] of REPORT_COLUMNS) head.append(Object.assign(document.createElement('th'), { textContent: h }));
  const body = table.createTBody();
  r.policies.forEach((m, i) => {
    const row = body.insertRow();
    row.dataset.policy = m.policy;
    row.dataset.hitRate = String(m.hit_rate);
    row.dataset.ttftP50 = String(m.ttft_ms.p50);
    REPORT_COLUMNS.forEach(([, f], c) => {
      const cell = row.insertCell();
      cell.textContent = f(m);
      if (c === 0) cell.style.borderLeft = `4px solid ${PALETTE[i % PALETTE.length]}`;
    });
  });
  const color = (i: number): string => PALETTE[i % PALETTE.length];
  const pct = (v: number): string => `${Math.round(v * 100)}%`;
  $('chart-hit').replaceChildren(lineChart({
    title: 'Prefix-cache hit rate over time', xLabel: 'simulated time (s)', yLabel: 'hit rate', yMin: 0, yMax: 1, yFormat: pct,
    series: r.policies.map((m, i) => ({ label: m.policy, color: color(i), points: m.series.t_s.map((t, k) => [t, m.series.hit_rate[k]] as const) })),
  }));
  $('chart-ttft').replaceChildren(lineChart({
    title: 'TTFT distribution', xLabel: 'TTFT (ms, log scale)', yLabel: 'share of requests', xLog: true, yMin: 0, yFormat: pct,
    xFormat: (v) => (v >= 1000 ? `${v / 1000}s` : `${v}`),
    series: r.policies.map((m, i) => {
      const h = m.ttft_histogram;
      const total = Math.max(1, h.counts.reduce((a, b) => a + b, 0));
      return { label: m.policy, color: color(i), points: h.edges_ms.map((e, k) => [e, h.counts[k] / total] as const) };
    }),
  }));
  const loads = $('chart-load');
  loads.replaceChildren();
  for (const m of r.policies) {
    loads.append(lineChart({
      title: `Active tokens per worker rank: ${m.policy}`, xLabel: 'simulated time (s)', yLabel: 'active tokens', yMin: 0, width: 420, height: 240,
      yFormat: (v) => (v >= 1000 ? `${Math.round(v / 1000)}k` : String(v)),
      series: m.per_rank.map((rk, i) => ({
        label: `w${rk.worker_id}/${rk.dp_rank}`, color: color(i), points: m.series.t_s.map((t, k) => [t, m.series.active_tokens[i][k]] as const),
      })),
    }));
  }
}

function init(): void {
  $<HTMLTextAreaElement>('scorer').value = EXAMPLE_SCORER;
  const profile = $<HTMLSelectElement>('profile');
  for (const p of Object.values(PERF_PROFILES)) {
    profile.append(Object.assign(document.createElement('option'), { value: p.name, textContent: `${p.model} on ${p.gpu}`, title: p.source }));
  }
  profile.value = DEFAULT_PROFILE;
  const lines = __SAMPLE_TRACE__.split('\n').filter((l) => l.trim() !== '').length;
  $('sample-size').textContent = `${lines} requests`;
  $('trace-file').addEventListener('change', () => { $<HTMLInputElement>('use-file').checked = true; });
  $('run').addEventListener('click', () => { void run(); });
  status('ready', 'ready');
}

init();
