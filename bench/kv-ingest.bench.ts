/**
 * End-to-end KV-event ingestion (issue 6 benchmark): W engines (a publisher thread, one ZMQ PUB
 * each) send vLLM 0.26 batches built from the Mooncake trace (bench/kv-ingest-workload.ts) as
 * fast as the service takes them, into a running SelectionService (default ZMQ ingress), while
 * an in-process client keeps calling `service.select` (no HTTP: the latency is the service's,
 * measured from the moment the client asks for a turn of the event loop to the response, so it
 * includes waiting behind ingestion). Reported: blocks applied per second, selection p50/p99
 * during ingestion and idle, and where the time goes (decode alone; decode + apply without
 * sockets).
 *
 *   node build/dist/bench/kv-ingest.bench.js [trace.jsonl] [--workers=4] [--requests=3000]
 *     [--warmup=1000] [--batch-blocks=512] [--capacity=4096] [--client=1 (0: no selecting client)]
 *     [--wasm=a.wasm,b.wasm --repeat=3 (the in-process path with each build, alternating)]
 */
import { Worker } from 'node:worker_threads';
import { performance as perf } from 'node:perf_hooks';
import { SelectionServiceBuilder } from '../src/service/service.js';
import { parseRouterConfig } from '../src/core/config/config.js';
import { KvIndex } from '../src/core/index/kv-index.js';
import { WasmPrefixIndex } from '../src/core/index/wasm-index.js';
import { Wasm, compileWasm } from '../src/core/index/wasm.js';
import { KvBatchDecoder } from '../src/service/kv-events/decode.js';
import { BatchApplier } from '../src/service/kv-events/apply.js';
import { newCounters, type IngestCounters } from '../src/service/kv-events/stats.js';
import { readFileSync } from 'node:fs';
import { option, readTrace } from './mooncake-ops.js';
import { buildIngestWorkload, chainTokens, type IngestWorkload } from './kv-ingest-workload.js';

const pct = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? NaN;
const mega = (n: number): string => `${(n / 1e6).toFixed(2)}M`;
const pctOf = (part: number, whole: number): string => `${Math.round((100 * part) / whole)}%`;

function arg(argv: string[], name: string, dflt: number): number {
  const v = option(argv, name);
  return v === undefined ? dflt : Number(v);
}

/**
 * `--wasm=a.wasm,b.wasm`: the in-process path with each build, runs alternating (`--repeat`),
 * medians per build. The end-to-end part always runs the embedded build.
 */
function abRows(wl: IngestWorkload, files: string[], repeat: number): string[] {
  const mods = files.map((f) => compileWasm(readFileSync(f)));
  const runs = files.map(() => [] as ReturnType<typeof inProcess>[]);
  for (let r = 0; r < repeat; r++) mods.forEach((m, k) => runs[k].push(inProcess(wl, m)));
  const med = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  return files.map((f, k) => {
    const phase = (ph: number): string => {
      const rate = med(runs[k].map((x) => x.apply[ph].blocks / x.apply[ph].seconds));
      const share = med(runs[k].map((x) => x.wasmS[ph] / x.apply[ph].seconds));
      return `${mega(rate)} (${Math.round(100 * share)}% in wasm)`;
    };
    return `| ${f} | ${phase(0)} | ${phase(1)} |`;
  });
}

/** Batch i of worker w. */
const payload = (wl: IngestWorkload, w: number, i: number): Uint8Array => wl.data[w].subarray(i === 0 ? 0 : wl.ends[w][i - 1], wl.ends[w][i]);

interface Rates { seconds: number; blocks: number }

/**
 * The event path without sockets, per phase: decode only, then decode + apply into a fresh index
 * (its own wasm instance), with the time spent inside the index's wasm calls measured apart
 * (one clock pair per call: per event or per run of removes, not per block).
 */
function inProcess(wl: IngestWorkload, module?: WebAssembly.Module): { decode: Rates[]; apply: Rates[]; wasmS: number[] } {
  const dec = new KvBatchDecoder();
  const ix = new WasmPrefixIndex(new Wasm(module));
  let inWasm = 0;
  const timed = <A extends unknown[]>(f: (...a: A) => number) => (...a: A): number => {
    const t = performance.now();
    const r = f(...a);
    inWasm += performance.now() - t;
    return r;
  };
  ix.storeTokensN = timed(ix.storeTokensN.bind(ix));
  ix.removeN = timed(ix.removeN.bind(ix));
  const index = new KvIndex(16, ix);
  const appliers = wl.split.map((_, w) => new BatchApplier({ index, blockSize: 16, workerId: BigInt(w + 1) }, newCounters()));
  const ranges = [wl.split.map(() => 0), wl.split, wl.ends.map((e) => e.length)];
  const decode: Rates[] = [], apply: Rates[] = [], wasmS: number[] = [];
  for (let ph = 0; ph < 2; ph++) {
    let blocks = 0, t = performance.now();
    for (let w = 0; w < wl.workers; w++) for (let i = ranges[ph][w]; i < ranges[ph + 1][w]; i++) blocks += dec.decode(payload(wl, w, i)).hashCount;
    decode.push({ seconds: (performance.now() - t) / 1000, blocks });
    inWasm = 0;
    t = performance.now();
    for (let w = 0; w < wl.workers; w++) for (let i = ranges[ph][w]; i < ranges[ph + 1][w]; i++) appliers[w].apply(dec.decode(payload(wl, w, i)), 0);
    apply.push({ seconds: (performance.now() - t) / 1000, blocks });
    wasmS.push(inWasm / 1000);
  }
  index.destroy();
  return { decode, apply, wasmS };
}

/**
 * Selections, each timed from asking for a turn of the event loop (like a request arriving) to
 * its response (`total`), and the select call alone (`call`).
 */
async function selectLatencies(select: () => Promise<unknown>, stop: () => boolean, max = Infinity): Promise<{ total: number[]; call: number[] }> {
  const total: number[] = [], call: number[] = [];
  while (!stop() && total.length < max) {
    const t = performance.now();
    await new Promise<void>((r) => setImmediate(r));
    const c = performance.now();
    await select();
    const end = performance.now();
    total.push(end - t);
    call.push(end - c);
  }
  return { total: total.sort((a, b) => a - b), call: call.sort((a, b) => a - b) };
}

const latencyRow = (name: string, l: { total: number[]; call: number[] }): string => {
  const t = l.total, c = l.call;
  return `| ${name} | ${t.length} | ${pct(t, 0.5).toFixed(3)} | ${pct(t, 0.99).toFixed(3)} | ${t[t.length - 1]?.toFixed(3)} | ` +
    `${pct(c, 0.5).toFixed(3)} | ${pct(c, 0.99).toFixed(3)} |`;
};

export async function main(argv = process.argv.slice(2)): Promise<string> {
  const trace = argv.find((a) => !a.startsWith('--') && a.endsWith('.jsonl')) ?? 'test/fixtures/mooncake/conversation_trace.jsonl';
  const workers = arg(argv, 'workers', 4), requests = arg(argv, 'requests', 3000), warmup = arg(argv, 'warmup', 1000);
  const batchBlocks = arg(argv, 'batch-blocks', 512), capacity = arg(argv, 'capacity', 4096);
  const withClient = arg(argv, 'client', 1) !== 0;
  const chains = readTrace(trace, requests);
  const wl = buildIngestWorkload(chains, { workers, capacity, batchBlocks, splitAt: warmup });
  console.error(`workload: ${wl.batches} batches, ${wl.events} events, ${wl.storedBlocks} stored + ${wl.removedBlocks} removed blocks, ${(wl.bytes / 2 ** 20).toFixed(0)} MiB`);
  const ip = inProcess(wl);
  const wasmFiles = option(argv, 'wasm')?.split(',') ?? [];
  const ab = wasmFiles.length === 0 ? [] : abRows(wl, wasmFiles, Math.max(1, arg(argv, 'repeat', 3)));

  const service = await new SelectionServiceBuilder(parseRouterConfig({})).build();
  const pub = new Worker(new URL('./kv-ingest-publisher.js', import.meta.url), {
    workerData: { data: wl.data, ends: wl.ends, split: wl.split }, transferList: wl.data.map((d) => d.buffer as ArrayBuffer),
  });
  const next = (): Promise<unknown> => new Promise((resolve) => pub.once('message', resolve));
  const { endpoints } = await next() as { endpoints: string[] };
  endpoints.forEach((ep, w) => service.upsertWorker({ worker_id: w + 1, model_name: 'm', endpoint: `http://w${w + 1}:8000`, block_size: 16, kv_events_endpoint: ep }));
  await next(); // every engine has a subscriber
  const prompts = chains.slice(0, 200).map(chainTokens);
  let q = 0;
  const select = () => service.select({ model_name: 'm', token_ids: prompts[q++ % prompts.length] });
  const total = (f: (c: IngestCounters) => number): number => (service.ingressStats() ?? []).reduce((s, w) => s + f(w.counters), 0);
  const targets = [wl.split.reduce((a, b) => a + b, 0), wl.batches];

  const e2e: (Rates & { latencies: { total: number[]; call: number[] }; sendMs: number; busy: number })[] = [];
  for (const target of targets) {
    const before = total((c) => c.blocksStored + c.blocksRemoved);
    const elu0 = perf.eventLoopUtilization();
    let done = false, seconds = 0;
    const t0 = performance.now();
    const sent = next();
    pub.postMessage('go');
    const client = withClient ? selectLatencies(select, () => done) : Promise.resolve({ total: [], call: [] });
    while (!done) {
      await new Promise((r) => setTimeout(r, 1));
      if (total((c) => c.batchesApplied) >= target) { seconds = (performance.now() - t0) / 1000; done = true; }
    }
    const busy = perf.eventLoopUtilization(elu0).utilization;
    e2e.push({ seconds, busy, blocks: total((c) => c.blocksStored + c.blocksRemoved) - before, latencies: await client, sendMs: (await sent as { ms: number }).ms });
  }
  const idle = await selectLatencies(select, () => false, 2000);
  const problems = total((c) => c.gaps + c.batchesLost + c.storesStopped + c.parentNotFound + c.unknownRemoved + c.applyErrors);
  const exited = new Promise((resolve) => pub.once('exit', resolve));
  pub.postMessage('stop'); // the thread closes its sockets and ends (terminate() can abort zeromq's addon)
  await exited;
  await service.shutdown();

  const row = (path: string, r: Rates[]) => `| ${path} | ${r.map((x) => mega(x.blocks / x.seconds)).join(' | ')} |`;
  const out = [
    `### KV-event ingestion, Mooncake trace (${requests} requests, W = ${workers}, steps of <= ${batchBlocks} blocks, capacity ${capacity} hash ids/worker)`,
    '',
    `Workload: ${wl.batches.toLocaleString('en-US')} batches, ${wl.events.toLocaleString('en-US')} events, ${wl.storedBlocks.toLocaleString('en-US')} stored + ` +
      `${wl.removedBlocks.toLocaleString('en-US')} removed blocks (one BlockRemoved per block), ${(wl.bytes / 2 ** 20).toFixed(0)} MiB of msgpack. ` +
      `Warm-up = the first ${warmup} requests (the index grows to its working size); steady state = the rest.`,
    '',
    '| path | warm-up blocks/s | steady-state blocks/s |',
    '|---|---|---|',
    row('decode only (KvBatchDecoder)', ip.decode),
    row('decode + apply, in process, no sockets', ip.apply),
    row(`end to end: ZMQ PUB -> service${withClient ? ', while a client selects' : ' (no selecting client)'}`, e2e),
    '',
    `Where the in-process time goes (warm-up / steady state): index wasm calls ${ip.wasmS.map((w, i) => pctOf(w, ip.apply[i].seconds)).join(' / ')}, ` +
      `decoding ${ip.decode.map((d, i) => pctOf(d.seconds, ip.apply[i].seconds)).join(' / ')}, the rest (JS apply step, GC) ` +
      `${ip.apply.map((a, i) => pctOf(a.seconds - ip.wasmS[i] - ip.decode[i].seconds, a.seconds)).join(' / ')}.`,
    '',
    `Blocks = stored + removed. End-to-end seconds: ${e2e.map((r) => r.seconds.toFixed(2)).join(' / ')}, main thread busy ` +
      `${e2e.map((r) => (100 * r.busy).toFixed(0) + '%').join(' / ')} (event-loop utilization; the publisher thread finished sending after ` +
      `${e2e.map((r) => (r.sendMs / 1000).toFixed(2)).join(' / ')} s). Gaps, lost batches, stopped stores, missing parents, unknown removes, apply errors: ${problems}.`,
    '',
    '| selection (in-process `service.select`, prompts of 1-7k tokens) | n | p50 ms | p99 ms | max ms | call alone p50 ms | call alone p99 ms |',
    '|---|---|---|---|---|---|---|',
    latencyRow('during warm-up ingestion', e2e[0].latencies),
    latencyRow('during steady-state ingestion', e2e[1].latencies),
    latencyRow('idle (after)', idle),
    '',
    ...(ab.length === 0 ? [] : [
      `Decode + apply in process with each wasm build (runs alternating, medians of ${Math.max(1, arg(argv, 'repeat', 3))}):`,
      '',
      '| wasm build | warm-up blocks/s | steady-state blocks/s |',
      '|---|---|---|',
      ...ab,
      '',
    ]),
  ].join('\n');
  console.log(out);
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
