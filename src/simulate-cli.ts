/**
 * `select-service simulate`: replay a Mooncake trace or a generated workload through the
 * selection core under several routing policies and print their metrics (a table, or JSON with
 * `--json`), run the grid of workloads x fleets x loads x policies (`--grid`,
 * simulate-grid-cli.ts), or serve the simulator page (`--serve`). `src/cli.ts` dispatches
 * `select-service simulate ...` here; the file also runs on its own:
 * `node build/dist/src/simulate-cli.js --trace FILE`.
 */
import { mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { parseTrace, traceJsonl, type Trace } from './sim/trace.js';
import { generateWorkload, WORKLOAD_NAMES } from './sim/workload/spec.js';
import { simulate, DEFAULT_POLICIES, expectedOutputOf, type ExpectedOutput, type SimulationOptions } from './sim/simulate.js';
import { compileScorer } from './sim/custom-scorer.js';
import { POLICY_KINDS } from './sim/policies.js';
import { formatReport, reportJson } from './sim/report.js';
import { DEFAULT_FLEET, fleetRanks, namedFleet, type FleetConfig } from './sim/fleet.js';
import { DEFAULT_PROFILE, PERF_PROFILES } from './sim/perf-model.js';
import { serveStatic } from './simulate-serve.js';
import { SWEEP_KNOBS, formatSweep, parseSweep, sweep } from './sim/sweep.js';
import { loadCharts, resultCharts, sweepCharts, type Figure } from './sim/figures.js';
import { wrapText } from './cli-text.js';
import { GRID_USAGE, GRID_OPTIONS, gridMain } from './simulate-grid-cli.js';
import { UsageError, number } from './simulate-args.js';

/** Where output goes (tests pass their own). */
export interface CliIo {
  stdout: { write(s: string): unknown };
  stderr: { write(s: string): unknown; isTTY?: boolean };
}

const USAGE = `usage: select-service simulate (--trace FILE | --workload SPEC) [options]
       select-service simulate --grid [grid options]
       select-service simulate --serve [--port P]

  --trace FILE              Mooncake JSONL trace (timestamp, input_length, output_length, hash_ids;
                            optional session_id and tenant)
  --limit N                 only the first N requests (after --offset)
  --offset N                drop the first N requests; the rest start at time 0
${wrapText(`a generated workload, NAME[:key=value...]; names: ${WORKLOAD_NAMES.join(', ')} (knobs and defaults: `
  + 'docs/policies.md, "Workloads"); its requests and rate scale with the fleet\'s ranks / 8; deterministic for --seed',
'  --workload SPEC           ')}
  --write-trace FILE        write the trace (--workload's, or --trace's) as JSONL to FILE and exit;
                            --trace FILE replays it identically
${wrapText(`comma-separated, default ${DEFAULT_POLICIES}; kinds: ${POLICY_KINDS.join(', ')}; `
  + 'parameters as kind:key=value, e.g. kv:overlap_score_credit=0.5:router_temperature=0.1 or ttft:evict_weight=0.25',
'  --policies LIST           ')}
  --fleet NAME              WxR (W workers of R ranks: 8x1, 16x2, 64x1, ...) or mixed (4 workers
                            llama3.1-8b-h100 + 4 llama3.1-8b-a100); flags below override it
  --workers N               workers (default 8)          --dp-ranks N       ranks per worker (1)
  --block-size N            tokens per block, divides 512 (default 512)
  --capacity-blocks N|inf   KV blocks per rank (default 524,288 tokens' worth)
${wrapText(`step-time profile of every rank, default ${DEFAULT_PROFILE}; one of ${Object.keys(PERF_PROFILES).join(', ')}`,
    '  --profile NAME            ')}
  --max-concurrent N        running requests per rank, max_num_seqs (64)
  --max-batched-tokens N    token budget of an engine step, max_num_batched_tokens (16384)
  --queue-threshold X       router_queue_threshold: queue in the core while every rank has more
                            than X x max_num_batched_tokens of active prefill (default: no queue)
  --queue-policy P          fcfs (default), wspt or lcfs
  --overlap-score-credit X  --prefill-load-scale X  --temperature X   cost knobs of kv policies
  --scorer FILE             body of the custom policy's scorer function (ctx, cands, out)
  --expected-output W       what the clients send as expected_output_tokens: trace (each
                            request's output length, the default) or none (nothing, as most
                            clients: ttft uses the output length the service has learned)
  --seed S                  RNG seed (default 0)         --speed X          arrival speed-up (1)
  --load F                  arrival rate = F x the fleet's saturation throughput for this trace,
                            measured with kv and printed (0.85 = 85%); instead of --speed
${wrapText(`run every policy at every value of one knob and print one table; knobs: ${Object.keys(SWEEP_KNOBS).join(', ')} `
  + '(e.g. --sweep speed=1,2,4,8; inf is a value for capacity-blocks)', '  --sweep KNOB=V1,V2,...    ')}
  --svg DIR                 write the charts as standalone SVG files into DIR: with --sweep, TTFT
                            p50, TTFT p90 and hit rate against the swept value; otherwise hit rate
                            over time, the TTFT distribution and per-rank load
  --json                    print JSON instead of the table
  --serve [--port P]        serve the simulator page (default port 8093)

${GRID_USAGE}`;

const OPTIONS = {
  trace: { type: 'string' }, limit: { type: 'string' }, offset: { type: 'string' }, policies: { type: 'string' }, workers: { type: 'string' },
  'dp-ranks': { type: 'string' }, 'block-size': { type: 'string' }, 'capacity-blocks': { type: 'string' },
  profile: { type: 'string' }, 'max-concurrent': { type: 'string' },
  'max-batched-tokens': { type: 'string' }, 'queue-threshold': { type: 'string' }, 'queue-policy': { type: 'string' },
  'overlap-score-credit': { type: 'string' }, 'prefill-load-scale': { type: 'string' }, temperature: { type: 'string' },
  scorer: { type: 'string' }, 'expected-output': { type: 'string' }, seed: { type: 'string' }, speed: { type: 'string' }, json: { type: 'boolean' },
  sweep: { type: 'string' }, svg: { type: 'string' },
  serve: { type: 'boolean' }, port: { type: 'string' }, host: { type: 'string' }, help: { type: 'boolean', short: 'h' },
  workload: { type: 'string' }, 'write-trace': { type: 'string' }, fleet: { type: 'string' }, load: { type: 'string' },
  ...GRID_OPTIONS,
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; args: string[] }>>['values'];

/** The static page's folder in a build (`build/web`). */
export function webRoot(): string {
  return join(dirname(fileURLToPath(import.meta.url)), '../../web');
}

/** Runs the command; resolves to the exit code (0 ok, 1 failure, 2 usage). */
export async function main(argv: string[], io: CliIo = process): Promise<number> {
  let values: Values;
  try {
    values = parseArgs({ args: argv, options: OPTIONS, allowPositionals: false }).values;
  } catch (err) {
    io.stderr.write(`${err instanceof Error ? err.message : String(err)}\n${USAGE}`);
    return 2;
  }
  if (values.help) { io.stdout.write(USAGE); return 0; }
  try {
    if (values.serve) return await serve(io, number(values.port, 'port') ?? 8093, values.host ?? '127.0.0.1');
    const fleet = fleetOf(values);
    const knobs = {
      overlapScoreCredit: number(values['overlap-score-credit'], 'overlap-score-credit'),
      prefillLoadScale: number(values['prefill-load-scale'], 'prefill-load-scale'),
      routerTemperature: number(values.temperature, 'temperature'),
    };
    const queue = queueOption(number(values['queue-threshold'], 'queue-threshold'), values['queue-policy']);
    const seed = number(values.seed, 'seed') ?? 0;
    const expectedOutput = expectedOutputOption(values['expected-output']);
    if (values.grid) {
      return await gridMain(values, io, { fleet, knobs, queue, expectedOutput, seed, scorer: values.scorer ? readFileSync(values.scorer, 'utf8') : undefined });
    }
    const trace = loadTrace(values, fleet, seed);
    if (values['write-trace'] !== undefined) {
      writeFileSync(values['write-trace'], traceJsonl(trace));
      io.stderr.write(`wrote ${trace.length} requests to ${values['write-trace']}\n`);
      return 0;
    }
    if (values.load !== undefined && values.speed !== undefined) throw new UsageError('--load and --speed both set the arrival speed: give one');
    const opts: SimulationOptions = {
      fleet, knobs, policies: values.policies ?? DEFAULT_POLICIES, seed,
      speed: number(values.speed, 'speed') ?? 1, load: number(values.load, 'load'),
      scorer: values.scorer ? compileScorer(readFileSync(values.scorer, 'utf8')) : undefined,
      onProgress: progress(io), queue, expectedOutput,
    };
    let swept: ReturnType<typeof parseSweep> | undefined;
    if (values.sweep !== undefined) {
      try { swept = parseSweep(values.sweep); } catch (err) { throw new UsageError((err as Error).message); }
      if ((swept.knob === 'speed' || swept.knob === 'load') && (values.speed !== undefined || values.load !== undefined)) {
        throw new UsageError(`--sweep ${swept.knob} sets the arrival speed: drop --speed and --load`);
      }
    }
    if (swept) {
      const result = await sweep(trace, { ...opts, onProgress: undefined }, swept.knob, swept.values, (p) => {
        opts.onProgress?.({ ...p, policy: `${swept.knob}=${p.value} ${p.policy}`, index: p.valueIndex * p.policies + p.index, policies: p.valueCount * p.policies });
      });
      if (io.stderr.isTTY) io.stderr.write('\r\x1b[K');
      io.stdout.write(values.json ? `${JSON.stringify({ knob: result.knob, values: result.values, runs: result.runs.map(reportJson) }, null, 2)}\n` : formatSweep(result));
      if (values.svg) writeFigures(io, values.svg, sweepCharts(result));
      return 0;
    }
    const result = await simulate(trace, opts);
    if (io.stderr.isTTY) io.stderr.write('\r\x1b[K');
    io.stdout.write(values.json ? `${JSON.stringify(reportJson(result), null, 2)}\n` : formatReport(result));
    if (values.svg) writeFigures(io, values.svg, [...resultCharts(result), ...loadCharts(result)]);
    return 0;
  } catch (err) {
    io.stderr.write(`simulate: ${err instanceof Error ? err.message : String(err)}\n`);
    if (err instanceof UsageError) { io.stderr.write(USAGE); return 2; }
    return 1;
  }
}

/** The fleet of the flags: `--fleet NAME`, then any fleet flag over it. */
function fleetOf(values: Values): Partial<FleetConfig> {
  let named: Partial<FleetConfig> = {};
  if (values.fleet !== undefined) {
    try { named = namedFleet(values.fleet); } catch (err) { throw new UsageError((err as Error).message); }
  }
  const flags: Partial<FleetConfig> = {
    workers: number(values.workers, 'workers'), dpRanks: number(values['dp-ranks'], 'dp-ranks'),
    blockSize: number(values['block-size'], 'block-size'), capacityBlocks: number(values['capacity-blocks'], 'capacity-blocks'),
    profile: values.profile,
    maxConcurrent: number(values['max-concurrent'], 'max-concurrent'), maxBatchedTokens: number(values['max-batched-tokens'], 'max-batched-tokens'),
  };
  for (const [k, v] of Object.entries(flags)) if (v !== undefined) (named as Record<string, unknown>)[k] = v;
  return named;
}

/** The trace of `--trace FILE` or `--workload SPEC` (generated for the fleet's ranks). */
function loadTrace(values: Values, fleet: Partial<FleetConfig>, seed: number): Trace {
  if ((values.trace === undefined) === (values.workload === undefined)) throw new UsageError('give one of --trace FILE and --workload SPEC');
  if (values.trace !== undefined) {
    return parseTrace(readFileSync(values.trace, 'utf8'), { limit: number(values.limit, 'limit'), offset: number(values.offset, 'offset') });
  }
  if (values.limit !== undefined || values.offset !== undefined) throw new UsageError('--limit and --offset apply to --trace (set requests=N in the workload)');
  const ranks = fleetRanks({ workers: fleet.workers ?? DEFAULT_FLEET.workers, dpRanks: fleet.dpRanks ?? DEFAULT_FLEET.dpRanks });
  try {
    return generateWorkload(values.workload as string, { seed, scale: ranks / 8 });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/** Write each figure as DIR/<name>.svg (the folder is created), listing them on stderr. */
function writeFigures(io: CliIo, dir: string, figures: readonly Figure[]): void {
  mkdirSync(dir, { recursive: true });
  for (const f of figures) {
    const path = join(dir, `${f.name}.svg`);
    writeFileSync(path, `${f.svg}\n`);
    io.stderr.write(`wrote ${path}\n`);
  }
}

function expectedOutputOption(v: string | undefined): ExpectedOutput | undefined {
  try { return expectedOutputOf(v, '--expected-output'); } catch (err) { throw new UsageError((err as Error).message); }
}

function queueOption(threshold: number | undefined, policy: string | undefined): SimulationOptions['queue'] {
  if (policy !== undefined && !['fcfs', 'wspt', 'lcfs'].includes(policy)) throw new UsageError(`--queue-policy: fcfs, wspt or lcfs (got ${policy})`);
  if (threshold === undefined) {
    if (policy !== undefined) throw new UsageError('--queue-policy needs --queue-threshold');
    return undefined;
  }
  return { threshold, policy: policy as 'fcfs' | 'wspt' | 'lcfs' | undefined };
}

/** Progress on stderr: a rewritten line on a terminal, a line per finished policy otherwise. */
function progress(io: CliIo): SimulationOptions['onProgress'] {
  return (p) => {
    const what = `[${p.index + 1}/${p.policies}] ${p.policy}: ${p.done}/${p.total} requests`;
    if (io.stderr.isTTY) io.stderr.write(`\r\x1b[K${what}`);
    else if (p.done === p.total) io.stderr.write(`${what}\n`);
  };
}

async function serve(io: CliIo, port: number, host: string): Promise<number> {
  const server = await serveStatic(webRoot(), port, host);
  const addr = server.address();
  const url = typeof addr === 'object' && addr ? `http://${host}:${addr.port}/` : '';
  io.stdout.write(`simulator page: ${url}  (Ctrl-C stops)\n`);
  await new Promise<void>((resolve) => {
    const stop = (): void => { server.close(() => resolve()); };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  return 0;
}

// run when executed directly (`node build/dist/src/simulate-cli.js ...`)
if (process.argv[1] && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url))) {
  main(process.argv.slice(2)).then((code) => { process.exitCode = code; });
}
