/**
 * Prefix-index benchmark (foundation issue §6): replay of the Mooncake conversation trace op
 * stream (bench/mooncake-ops.ts) against the wasm index and the plain-TS reference model in the
 * same run, for W = 16, 128, 1024 and 8,000 workers (the reference up to `--reference-max`
 * workers: it needs minutes beyond), plus tinybench micro cases at W = 128.
 *
 * Columns: combined block-ops/s (matched + stored + removed blocks over the time spent in index
 * calls: a shared VM's descheduling between calls is left out; the wall time is printed too), match
 * latency, apply (store + remove) blocks/s, wasm memory growth per (block, worker) holding, and
 * the growth stall: the longest single index call of the replay (the index grows from empty to
 * its working size during it, so this is where table and pool growth shows). The wasm replay runs
 * `--repeat` times (see combine() for how the runs are combined), each time from empty and then
 * again on recycled memory (replayWasm).
 *
 *   node build/dist/bench/index.bench.js [trace.jsonl] [--workers=16,128,1024,8000] [--requests=N]
 *     [--reference-max=1024] [--repeat=3] [--wasm=a.wasm,b.wasm (an A/B of builds, alternating)]
 */
import { readFileSync } from 'node:fs';
import { Bench } from 'tinybench';
import { buildOps, option, readTrace, type OpStream } from './mooncake-ops.js';
import { WasmPrefixIndex } from '../src/core/index/wasm-index.js';
import { Wasm, compileWasm } from '../src/core/index/wasm.js';
import { ReferenceIndex } from '../test/reference/index-model.js';
import type { BlockRef, Tier } from '../src/core/index/index-types.js';

const DEVICE = 0 as Tier;

/**
 * `seconds`: time inside the index calls (the sum over ops; for wasm, of each op's median over
 * the runs), so a shared VM's descheduling between calls does not count; the wall time of the
 * whole replay is printed beside it.
 */
interface Result { name: string; seconds: number; matchNs: number[]; applySeconds: number; bytesPerPair: number | null; maxCallMs: number }

/** One timed replay: wall time of every op (ms), and the wasm memory it grew by per holding. */
interface Run { seconds: number; opMs: Float64Array; bytesPerPair: number; liveBytesPerPair: number }

function pct(sorted: ArrayLike<number>, p: number): number { return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]; }
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1];

let parentWords: Uint32Array = new Uint32Array(0);

/** Every op of the stream through the hot surface, each timed. */
function timeOps(ix: WasmPrefixIndex, ops: OpStream): Run {
  const before = ix.wasm.memoryBytes(), liveBefore = liveBytes(ix);
  const opMs = new Float64Array(ops.count);
  const t0 = performance.now();
  for (let i = 0; i < ops.count; i++) {
    const s = ops.start[i], n = ops.len[i];
    const k = ops.kind[i];
    const ta = performance.now();
    if (k === 0) {
      ix.wasm.writeLocals(ops.locals.subarray(s, s + n));
      ix.matchN(n);
    } else if (k === 1) {
      storeOp(ix, ops, i);
    } else {
      ix.wasm.writeExts(ops.exts.subarray(s, s + n));
      ix.removeN(ops.slot[i], DEVICE, n);
    }
    opMs[i] = performance.now() - ta;
  }
  const seconds = (performance.now() - t0) / 1000;
  const pairs = Math.max(1, ix.holdingCount(DEVICE));
  return { seconds, opMs, bytesPerPair: (ix.wasm.memoryBytes() - before) / pairs, liveBytesPerPair: (liveBytes(ix) - liveBefore) / pairs };
}

/** The allocator's live bytes (NaN for an older module without the export: --wasm A/B runs). */
function liveBytes(ix: WasmPrefixIndex): number {
  const x = ix.wasm.exports as Partial<WasmPrefixIndex['wasm']['exports']>;
  return typeof x.memLiveBytes === 'function' ? x.memLiveBytes() : NaN;
}

/**
 * Two replays on a fresh module (linear memory never shrinks, so growth is measured from a
 * clean start): the index growing from empty, then, after every slot is cleared, the same ops
 * again on recycled memory. The first pays for faulting in new memory (on this VM a first touch
 * costs ~30 us per 4 KiB page, more than the index work itself); the second is the steady state.
 */
function replayWasm(ops: OpStream, workers: number, module: WebAssembly.Module): [Run, Run] {
  const ix = new WasmPrefixIndex(new Wasm(module));
  ix.ensureSlots(workers);
  parentWords = new Uint32Array(ops.parent.buffer, ops.parent.byteOffset, ops.count * 2);
  const cold = timeOps(ix, ops);
  for (let s = 0; s < workers; s++) ix.clear(s, -1);
  const warm = timeOps(ix, ops);
  ix.destroy();
  return [cold, warm];
}

/**
 * `repeat` runs. Throughput is the median run's; an op's latency is its median over the runs
 * (p50 / p99 over ops), and the growth stall is the longest op by its *fastest* run: a call that
 * is slow in every run is slow by itself, while a descheduled process (a shared VM) makes a
 * random call slow in one run only.
 */
function combine(name: string, ops: OpStream, workers: number, runs: Run[]): Result {
  const repeat = runs.length;
  const matchNs: number[] = [];
  let apply = 0, inCalls = 0, stall = 0, wallMax = 0, stallOp = -1;
  const per = new Float64Array(repeat);
  for (let i = 0; i < ops.count; i++) {
    for (let r = 0; r < repeat; r++) { per[r] = runs[r].opMs[i]; wallMax = Math.max(wallMax, per[r]); }
    per.sort();
    const med = per[repeat >> 1];
    inCalls += med;
    if (ops.kind[i] === 0) matchNs.push(med * 1e6); else apply += med;
    if (per[0] > stall) { stall = per[0]; stallOp = i; }
  }
  const m = runs.map((r) => r.seconds);
  console.error(`W=${workers} ${name}: wall time of the runs ${m.map((x) => x.toFixed(3)).join(' / ')} s (in calls ${(inCalls / 1000).toFixed(3)} s); longest single call in any run ${wallMax.toFixed(2)} ms; ` +
    `live allocator bytes per holding ${runs[0].liveBytesPerPair.toFixed(1)}; longest op by its fastest run: op ${stallOp} ` +
    `(${['match', 'store', 'remove'][ops.kind[stallOp]]} of ${ops.len[stallOp]} blocks: ${runs.map((r) => r.opMs[stallOp].toFixed(2)).join(' / ')} ms)`);
  return { name, seconds: inCalls / 1000, matchNs, applySeconds: apply / 1000, bytesPerPair: runs[0].bytesPerPair, maxCallMs: stall };
}

/**
 * The wasm rows: the embedded module, or each module of `modules` (an A/B of builds: their runs
 * alternate, so load on a shared machine hits them alike). Returns (from empty, recycled) per module.
 */
function runWasm(ops: OpStream, workers: number, repeat: number, modules: { name: string; module: WebAssembly.Module }[]): [Result, Result][] {
  const runs: [Run, Run][][] = modules.map(() => []);
  for (let r = 0; r < repeat; r++) modules.forEach((m, k) => runs[k].push(replayWasm(ops, workers, m.module)));
  return modules.map((m, k) => [combine(m.name, ops, workers, runs[k].map((x) => x[0])),
    combine(`${m.name}, memory recycled`, ops, workers, runs[k].map((x) => x[1]))]);
}

function runReference(ops: OpStream): Result {
  const ix = new ReferenceIndex();
  // Inputs in the reference model's natural shape, built before timing.
  const args: (bigint[] | BlockRef[])[] = [];
  for (let i = 0; i < ops.count; i++) {
    const s = ops.start[i], n = ops.len[i];
    if (ops.kind[i] === 0) args.push(Array.from(ops.locals.subarray(s, s + n)));
    else if (ops.kind[i] === 1) args.push(Array.from({ length: n }, (_, j) => ({ ext: ops.exts[s + j], local: ops.locals[s + j] })));
    else args.push(Array.from(ops.exts.subarray(s, s + n)));
  }
  const matchNs: number[] = [];
  let apply = 0, maxCall = 0, inCalls = 0;
  const t0 = performance.now();
  for (let i = 0; i < ops.count; i++) {
    const ta = performance.now();
    const k = ops.kind[i];
    if (k === 0) ix.match(args[i] as bigint[]);
    else if (k === 1) ix.store(ops.slot[i], DEVICE, ops.hasParent[i] ? ops.parent[i] : null, args[i] as BlockRef[]);
    else ix.remove(ops.slot[i], DEVICE, args[i] as bigint[]);
    const dt = performance.now() - ta;
    if (k === 0) matchNs.push(dt * 1e6); else apply += dt;
    if (dt > maxCall) maxCall = dt;
    inCalls += dt;
  }
  console.error(`reference: wall time ${((performance.now() - t0) / 1000).toFixed(3)} s (in calls ${(inCalls / 1000).toFixed(3)} s)`);
  return { name: 'reference', seconds: inCalls / 1000, matchNs, applySeconds: apply / 1000, bytesPerPair: null, maxCallMs: maxCall };
}

function report(ops: OpStream, workers: number, r: Result): string {
  const m = [...r.matchNs].sort((a, b) => a - b);
  const total = ops.blocks.matched + ops.blocks.stored + ops.blocks.removed;
  const applied = ops.blocks.stored + ops.blocks.removed;
  return `| ${workers} | ${r.name} | ${(total / r.seconds / 1e6).toFixed(2)}M | ${(pct(m, 0.5) / 1000).toFixed(2)} | ${(pct(m, 0.99) / 1000).toFixed(2)} | ` +
    `${(applied / r.applySeconds / 1e6).toFixed(2)}M | ${r.bytesPerPair === null ? '-' : r.bytesPerPair.toFixed(1)} | ${r.maxCallMs.toFixed(2)} |`;
}

async function micro(chains: number[][]): Promise<string> {
  const ops = buildOps(chains, 128, 16384);
  const ix = new WasmPrefixIndex(new Wasm());
  ix.ensureSlots(128);
  runWasmInto(ix, ops);
  // A long shared query: the first request's chain, matched repeatedly.
  const q = ops.locals.subarray(ops.start[0], ops.start[0] + ops.len[0]);
  const bench = new Bench({ time: 500 });
  bench.add(`baseline: write query only blocks=${q.length}`, () => { ix.wasm.writeLocals(q); });
  bench.add(`match blocks=${q.length} workers=128`, () => { ix.wasm.writeLocals(q); ix.matchN(q.length); });
  const ref = new ReferenceIndex();
  const qa = Array.from(q);
  for (let i = 0; i < ops.count; i++) if (ops.kind[i] === 1) ref.store(ops.slot[i], DEVICE, ops.hasParent[i] ? ops.parent[i] : null, Array.from({ length: ops.len[i] }, (_, j) => ({ ext: ops.exts[ops.start[i] + j], local: ops.locals[ops.start[i] + j] })));
  bench.add(`reference match blocks=${q.length} workers=128`, () => { ref.match(qa); });
  await bench.run();
  return bench.tasks.map((t) => `| ${t.name} | ${(t.result as { latency?: { p50?: number } })?.latency?.p50 !== undefined ? (((t.result as { latency: { p50: number } }).latency.p50) * 1e6).toFixed(0) + ' ns' : '-'} | ${Math.round((t.result as { throughput?: { mean?: number } })?.throughput?.mean ?? 0).toLocaleString()} ops/s |`).join('\n');
}

/**
 * What the machine charges for memory the index grows into, measured here because it bounds the
 * "from empty" rows: (1) the first touch of fresh pages (a 64 MiB ArrayBuffer, one write per
 * 4 KiB page); (2) memory.grow of a non-shared and a shared WebAssembly.Memory beside a JS heap of
 * ~60 MB (V8 accounts a non-shared growth as external memory and may run a full GC for it).
 */
function machineProbes(): string {
  const u8 = new Uint8Array(64 << 20);
  let t = performance.now();
  for (let off = 0; off < u8.length; off += 4096) u8[off] = 1;
  const touchUs = ((performance.now() - t) * 1000) / (u8.length / 4096);
  const heap: { a: number; b: number[] }[] = [];
  for (let i = 0; i < 600_000; i++) heap.push({ a: i, b: [i] });
  const grow = (shared: boolean): string => {
    const m = new WebAssembly.Memory({ initial: 16, maximum: 65536, shared });
    let worst = 0;
    t = performance.now();
    for (let i = 0; i < 200; i++) {
      const g = performance.now();
      m.grow(16);
      worst = Math.max(worst, performance.now() - g);
    }
    return `${(performance.now() - t).toFixed(1)} ms in all, worst ${worst.toFixed(1)} ms`;
  };
  const objects = heap.length.toLocaleString('en-US');
  return [
    `| first touch of fresh memory, per 4 KiB page | ${touchUs.toFixed(2)} µs |`,
    `| 200 x memory.grow(1 MiB), non-shared memory, beside a JS heap of ${objects} small objects (~60 MB) | ${grow(false)} |`,
    `| 200 x memory.grow(1 MiB), shared memory, same heap | ${grow(true)} |`,
  ].join('\n');
}

function runWasmInto(ix: WasmPrefixIndex, ops: OpStream): void {
  parentWords = new Uint32Array(ops.parent.buffer, ops.parent.byteOffset, ops.count * 2);
  for (let i = 0; i < ops.count; i++) if (ops.kind[i] === 1) storeOp(ix, ops, i);
}

/** Apply store op i through the hot surface (hashes copied into scratch, parent as u32 words). */
function storeOp(ix: WasmPrefixIndex, ops: OpStream, i: number): void {
  const s = ops.start[i], n = ops.len[i];
  ix.wasm.writeLocals(ops.locals.subarray(s, s + n));
  ix.wasm.writeExts(ops.exts.subarray(s, s + n));
  if (ops.hasParent[i]) ix.wasm.setParentWords(parentWords[2 * i], parentWords[2 * i + 1]);
  ix.storeN(ops.slot[i], DEVICE, ops.hasParent[i] === 1, n);
}

export async function main(argv = process.argv.slice(2)): Promise<string> {
  const trace = argv.find((a) => !a.startsWith('--') && a.endsWith('.jsonl')) ?? 'test/fixtures/mooncake/conversation_trace.jsonl';
  const workerList = (option(argv, 'workers') ?? '16,128,1024,8000').split(',').map(Number);
  const referenceMax = Number(option(argv, 'reference-max') ?? 1024);
  const repeat = Math.max(1, Number(option(argv, 'repeat') ?? 3));
  const wasmFiles = option(argv, 'wasm')?.split(',') ?? [];
  // One compiled module per build, shared by its runs (V8 compiles functions on first call).
  const modules = wasmFiles.length === 0 ? [{ name: 'wasm', module: compileWasm() }]
    : wasmFiles.map((f) => ({ name: `wasm ${f}`, module: compileWasm(readFileSync(f)) }));
  const chains = readTrace(trace, Number(option(argv, 'requests') ?? Infinity));
  const lines = ['| W | impl | combined block-ops/s | match p50 µs | match p99 µs | apply blocks/s | bytes/(block,worker) | growth stall ms |',
    '|---|---|---|---|---|---|---|---|'];
  for (const w of workerList) {
    const ops = buildOps(chains, w, 16384);
    const wasm = runWasm(ops, w, repeat, modules);
    for (const [cold, warm] of wasm) lines.push(report(ops, w, cold), report(ops, w, warm));
    const a = wasm[wasm.length - 1][0];
    if (w <= referenceMax) {
      const b = runReference(ops);
      lines.push(report(ops, w, b));
      const ma = [...a.matchNs].sort((x, y) => x - y), mb = [...b.matchNs].sort((x, y) => x - y);
      lines.push(`| ${w} | ratio ref/wasm | ${(b.seconds / a.seconds).toFixed(1)}x | ${(pct(mb, 0.5) / pct(ma, 0.5)).toFixed(1)}x | | ${(b.applySeconds / a.applySeconds).toFixed(1)}x | | |`);
    }
    console.error(`W=${w}: ${ops.count} ops, ${ops.blocks.matched} matched, ${ops.blocks.stored} stored, ${ops.blocks.removed} removed blocks`);
  }
  const out = `### Mooncake conversation trace replay (${chains.length} requests, 1 block per hash_id, capacity 16,384 blocks/worker)\n\n` +
    lines.join('\n') + '\n\n### Micro (tinybench, W = 128)\n\n| case | p50 | throughput |\n|---|---|---|\n' + (await micro(chains)) +
    '\n\n### Machine probes\n\n| probe | cost |\n|---|---|\n' + machineProbes() + '\n';
  console.log(out);
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) void main();
