/**
 * The simulator page: reads the form (a trace or a generated workload, a speed-up or a load,
 * the fleet, policies, cost knobs, a custom scorer, an optional sweep), runs the simulation in a
 * Web Worker started from a blob URL (works from file:// too; Cancel terminates it), and renders
 * the metrics table, the charts (the same SVG the CLI writes with --svg) and a CSV export of the
 * table. Bundled by scripts/bundle-web.mjs into one classic script.
 */
import type { PageProgress, RunRequest, WorkerMessage } from './protocol.js';
import type { SimulationResult } from '../src/sim/simulate.js';
import type { SweepResult } from '../src/sim/sweep.js';
import { REPORT_COLUMNS, loadText, resultsCsv } from '../src/sim/report.js';
import { EXAMPLE_SCORER } from '../src/sim/custom-scorer.js';
import { DEFAULT_PROFILE, PERF_PROFILES } from '../src/sim/perf-model.js';
import { profileText } from '../src/sim/fleet.js';
import { SWEEP_KNOBS, parseSweep } from '../src/sim/sweep.js';
import { initWorkloadForm, namedFleetSettings, workloadSpec } from './workload-form.js';
import { PALETTE } from '../src/sim/plot.js';
import { loadCharts, resultCharts, sweepCharts, type Figure } from '../src/sim/figures.js';

const $ = <T extends HTMLElement>(id: string): T => {
  const e = document.getElementById(id);
  if (!e) throw new Error(`page element #${id} is missing`);
  return e as T;
};
const val = (id: string): string => $<HTMLInputElement>(id).value.trim();
const num = (id: string): number | undefined => (val(id) === '' ? undefined : val(id) === 'inf' ? Infinity : Number(val(id)));

let worker: Worker | null = null;
/** Ends the run in progress (set while one runs). */
let cancelRun: (() => void) | null = null;
/** What the CSV button exports. */
let csv: { text: string; file: string } | null = null;

function startWorker(): Worker {
  const url = URL.createObjectURL(new Blob([__WORKER_SOURCE__], { type: 'text/javascript' }));
  return new Worker(url);
}

async function traceText(): Promise<string> {
  if ($<HTMLInputElement>('use-workload').checked) return '';
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
  const knob = $<HTMLSelectElement>('sweep-knob').value;
  const workload = workloadSpec();
  if (workload !== undefined && num('limit') !== undefined) throw new Error('"first N requests" applies to a trace: give a workload requests=N');
  return {
    type: 'run', trace, limit: num('limit'), policies, seed: num('seed') ?? 0, speed: num('speed') ?? 1, load: num('load'), workload,
    fleet: {
      workers: num('workers'), dpRanks: num('dp-ranks'), blockSize: num('block-size'), capacityBlocks: num('capacity-blocks'),
      profile: $<HTMLSelectElement>('profile').value, maxConcurrent: num('max-concurrent'), maxBatchedTokens: num('max-batched-tokens'),
      ...namedFleetSettings(),
    },
    queue: num('queue-threshold') === undefined ? undefined : { threshold: num('queue-threshold') as number },
    expectedOutput: $<HTMLInputElement>('expected-output').checked ? 'trace' : 'none',
    knobs: { overlapScoreCredit: num('credit'), prefillLoadScale: num('scale'), routerTemperature: num('temperature') },
    scorer: useScorer ? $<HTMLTextAreaElement>('scorer').value : undefined,
    sweep: knob === '' ? undefined : parseSweep(`${knob}=${val('sweep-values')}`),
  };
}

function status(text: string, state: string): void {
  $('status').textContent = text;
  document.body.dataset.state = state;
}

function progressText(p: PageProgress): string {
  const at = p.value === undefined ? '' : `${$<HTMLSelectElement>('sweep-knob').value}=${p.value} (${p.valueIndex + 1}/${p.valueCount}), `;
  return `${at}${p.policy} (${p.index + 1}/${p.policies}): ${p.done}/${p.total} requests`;
}

async function run(): Promise<void> {
  const button = $<HTMLButtonElement>('run'), cancel = $<HTMLButtonElement>('cancel');
  button.disabled = true;
  try {
    const req = request(await traceText());
    worker ??= startWorker();
    status('starting…', 'running');
    cancel.disabled = false;
    const w = worker;
    await new Promise<void>((resolve) => {
      cancelRun = () => {
        w.terminate();
        worker = null;
        $<HTMLProgressElement>('progress').value = 0;
        status('cancelled', 'cancelled');
        resolve();
      };
      w.onmessage = (ev: MessageEvent<WorkerMessage>) => {
        const m = ev.data;
        if (m.type === 'progress') {
          const p = m.progress;
          $<HTMLProgressElement>('progress').value = (p.valueIndex + (p.index + p.done / Math.max(1, p.total)) / p.policies) / p.valueCount;
          status(progressText(p), 'running');
          return;
        }
        $<HTMLProgressElement>('progress').value = m.type === 'error' ? 0 : 1;
        if (m.type === 'done') {
          render(m.result);
          const f = m.result.fleet, load = m.result.saturation ? `, ${loadText(m.result)}` : '';
          status(`${m.requests} requests × ${m.result.policies.length} policies in ${(m.wallMs / 1000).toFixed(1)} s `
            + `(${f.workers} x ${f.dpRanks} rank(s), ${profileText(f)}${load})`, 'done');
        } else if (m.type === 'swept') {
          renderSweep(m.sweep);
          const runs = m.sweep.runs.length * (m.sweep.runs[0]?.policies.length ?? 0);
          status(`${m.requests} requests × ${runs} runs (${m.sweep.knob} sweep) in ${(m.wallMs / 1000).toFixed(1)} s`, 'done');
        } else status(`error: ${m.message}`, 'error');
        resolve();
      };
      w.onerror = (e) => { status(`error: ${e.message}`, 'error'); worker = null; resolve(); };
      w.postMessage(req);
    });
  } catch (err) {
    status(`error: ${err instanceof Error ? err.message : String(err)}`, 'error');
  } finally {
    cancelRun = null;
    cancel.disabled = true;
    button.disabled = false;
  }
}

/** The metrics table: one row per policy (per swept value and policy for a sweep). */
function fillTable(rows: readonly { value?: number; result: SimulationResult }[], knob?: string): void {
  const table = $<HTMLTableElement>('metrics');
  table.replaceChildren();
  const head = table.createTHead().insertRow();
  for (const h of [...(knob ? [knob] : []), ...REPORT_COLUMNS.map(([c]) => c)]) head.append(Object.assign(document.createElement('th'), { textContent: h }));
  const body = table.createTBody();
  for (const { value, result } of rows) {
    result.policies.forEach((m, i) => {
      const row = body.insertRow();
      row.dataset.policy = m.policy;
      row.dataset.hitRate = String(m.hit_rate);
      row.dataset.ttftP50 = String(m.ttft_ms.p50);
      if (knob) { row.dataset.value = String(value); row.insertCell().textContent = String(value); }
      REPORT_COLUMNS.forEach(([, f], c) => {
        const cell = row.insertCell();
        cell.textContent = f(m);
        if (c === 0) cell.style.borderLeft = `4px solid ${PALETTE[i % PALETTE.length]}`;
      });
    });
  }
  csv = { text: resultsCsv(rows, knob), file: knob ? `sweep-${knob}.csv` : 'simulation.csv' };
  $<HTMLButtonElement>('csv').disabled = false;
}

function show(id: string, figures: readonly Figure[]): void {
  const box = $(id);
  box.innerHTML = figures.map((f) => `<div class="figure" data-figure="${f.name}">${f.svg}</div>`).join('');
}

function render(r: SimulationResult): void {
  fillTable([{ result: r }]);
  const [hit, ttft] = resultCharts(r);
  show('chart-hit', [hit]);
  show('chart-ttft', [ttft]);
  show('chart-sweep', []);
  show('chart-load', loadCharts(r));
  $('load-section').hidden = false;
}

function renderSweep(s: SweepResult): void {
  fillTable(s.runs.map((result, k) => ({ value: s.values[k], result })), s.knob);
  show('chart-hit', []);
  show('chart-ttft', []);
  show('chart-sweep', sweepCharts(s));
  show('chart-load', []);
  $('load-section').hidden = true;
}

function exportCsv(): void {
  if (!csv) return;
  const a = Object.assign(document.createElement('a'), {
    href: URL.createObjectURL(new Blob([csv.text], { type: 'text/csv' })), download: csv.file,
  });
  document.body.append(a);
  a.click();
  a.remove();
}

function init(): void {
  $<HTMLTextAreaElement>('scorer').value = EXAMPLE_SCORER;
  const profile = $<HTMLSelectElement>('profile');
  for (const p of Object.values(PERF_PROFILES)) {
    profile.append(Object.assign(document.createElement('option'), { value: p.name, textContent: `${p.model} on ${p.gpu}`, title: p.source }));
  }
  profile.value = DEFAULT_PROFILE;
  const knob = $<HTMLSelectElement>('sweep-knob');
  for (const k of Object.keys(SWEEP_KNOBS)) knob.append(Object.assign(document.createElement('option'), { value: k, textContent: k }));
  const lines = __SAMPLE_TRACE__.split('\n').filter((l) => l.trim() !== '').length;
  $('sample-size').textContent = `${lines} requests`;
  $('trace-file').addEventListener('change', () => { $<HTMLInputElement>('use-file').checked = true; });
  initWorkloadForm();
  $('run').addEventListener('click', () => { void run(); });
  $('cancel').addEventListener('click', () => cancelRun?.());
  $('csv').addEventListener('click', exportCsv);
  status('ready', 'ready');
}

init();
