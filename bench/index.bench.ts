/**
 * Prefix-index benchmark (foundation issue §6): replay of the Mooncake conversation trace op
 * stream (bench/mooncake-ops.ts) against the wasm index and the plain-TS reference model in the
 * same run, for W = 16, 128, 1024 workers, plus tinybench micro cases at W = 128.
 *
 *   node build/dist/bench/index.bench.js [trace.jsonl] [--workers 16,128,1024] [--requests N]
 */
import { Bench } from 'tinybench';
import { buildOps, readTrace, type OpStream } from './mooncake-ops.js';
import { WasmPrefixIndex } from '../src/core/index/wasm-index.js';
import { Wasm } from '../src/core/index/wasm.js';
import { ReferenceIndex } from '../test/reference/index-model.js';
import type { BlockRef, Tier } from '../src/core/index/index-types.js';

const DEVICE = 0 as Tier;

interface Result { name: string; seconds: number; matchNs: number[]; applySeconds: number; bytesPerPair: number | null }

function pct(sorted: number[], p: number): number { return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]; }

let parentWords: Uint32Array = new Uint32Array(0);

function runWasm(ops: OpStream, workers: number): Result {
  // A fresh module per run: linear memory never shrinks, so growth is measured from a clean start.
  const ix = new WasmPrefixIndex(new Wasm());
  ix.ensureSlots(workers);
  ix.reserveHashes(maxLength(ops));
  parentWords = new Uint32Array(ops.parent.buffer, ops.parent.byteOffset, ops.count * 2);
  const before = ix.wasm.memoryBytes();
  const matchNs: number[] = [];
  let apply = 0;
  const t0 = performance.now();
  for (let i = 0; i < ops.count; i++) {
    const s = ops.start[i], n = ops.len[i];
    const k = ops.kind[i];
    const ta = performance.now();
    if (k === 0) {
      ix.hashA().set(ops.locals.subarray(s, s + n));
      ix.matchN(n);
      matchNs.push((performance.now() - ta) * 1e6);
    } else if (k === 1) {
      storeOp(ix, ops, i);
      apply += performance.now() - ta;
    } else {
      ix.hashB().set(ops.exts.subarray(s, s + n));
      ix.removeN(ops.slot[i], DEVICE, n);
      apply += performance.now() - ta;
    }
  }
  const seconds = (performance.now() - t0) / 1000;
  const pairs = ix.holdingCount(DEVICE);
  const bytesPerPair = (ix.wasm.memoryBytes() - before) / Math.max(1, pairs);
  ix.destroy();
  return { name: 'wasm', seconds, matchNs, applySeconds: apply / 1000, bytesPerPair };
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
  let apply = 0;
  const t0 = performance.now();
  for (let i = 0; i < ops.count; i++) {
    const ta = performance.now();
    const k = ops.kind[i];
    if (k === 0) { ix.match(args[i] as bigint[]); matchNs.push((performance.now() - ta) * 1e6); }
    else if (k === 1) { ix.store(ops.slot[i], DEVICE, ops.hasParent[i] ? ops.parent[i] : null, args[i] as BlockRef[]); apply += performance.now() - ta; }
    else { ix.remove(ops.slot[i], DEVICE, args[i] as bigint[]); apply += performance.now() - ta; }
  }
  return { name: 'reference', seconds: (performance.now() - t0) / 1000, matchNs, applySeconds: apply / 1000, bytesPerPair: null };
}

function report(ops: OpStream, workers: number, r: Result): string {
  const m = [...r.matchNs].sort((a, b) => a - b);
  const total = ops.blocks.matched + ops.blocks.stored + ops.blocks.removed;
  const applied = ops.blocks.stored + ops.blocks.removed;
  return `| ${workers} | ${r.name} | ${(total / r.seconds / 1e6).toFixed(2)}M | ${(pct(m, 0.5) / 1000).toFixed(2)} | ${(pct(m, 0.99) / 1000).toFixed(2)} | ` +
    `${(applied / r.applySeconds / 1e6).toFixed(2)}M | ${r.bytesPerPair === null ? '-' : r.bytesPerPair.toFixed(1)} |`;
}

async function micro(chains: number[][]): Promise<string> {
  const ops = buildOps(chains, 128, 16384);
  const ix = new WasmPrefixIndex(new Wasm());
  ix.ensureSlots(128);
  runWasmInto(ix, ops);
  // A long shared query: the first request's chain, matched repeatedly.
  const q = ops.locals.subarray(ops.start[0], ops.start[0] + ops.len[0]);
  ix.reserveHashes(q.length);
  const bench = new Bench({ time: 500 });
  bench.add(`baseline: write query only blocks=${q.length}`, () => { ix.hashA().set(q); });
  bench.add(`match blocks=${q.length} workers=128`, () => { ix.hashA().set(q); ix.matchN(q.length); });
  const ref = new ReferenceIndex();
  const qa = Array.from(q);
  for (let i = 0; i < ops.count; i++) if (ops.kind[i] === 1) ref.store(ops.slot[i], DEVICE, ops.hasParent[i] ? ops.parent[i] : null, Array.from({ length: ops.len[i] }, (_, j) => ({ ext: ops.exts[ops.start[i] + j], local: ops.locals[ops.start[i] + j] })));
  bench.add(`reference match blocks=${q.length} workers=128`, () => { ref.match(qa); });
  await bench.run();
  return bench.tasks.map((t) => `| ${t.name} | ${(t.result as { latency?: { p50?: number } })?.latency?.p50 !== undefined ? (((t.result as { latency: { p50: number } }).latency.p50) * 1e6).toFixed(0) + ' ns' : '-'} | ${Math.round((t.result as { throughput?: { mean?: number } })?.throughput?.mean ?? 0).toLocaleString()} ops/s |`).join('\n');
}

function maxLength(ops: OpStream): number {
  let m = 0;
  for (let i = 0; i < ops.count; i++) m = Math.max(m, ops.len[i]);
  return m;
}

function runWasmInto(ix: WasmPrefixIndex, ops: OpStream): void {
  ix.reserveHashes(maxLength(ops));
  parentWords = new Uint32Array(ops.parent.buffer, ops.parent.byteOffset, ops.count * 2);
  for (let i = 0; i < ops.count; i++) if (ops.kind[i] === 1) storeOp(ix, ops, i);
}

/** Apply store op i through the hot surface (hashes copied into scratch, parent as u32 words). */
function storeOp(ix: WasmPrefixIndex, ops: OpStream, i: number): void {
  const s = ops.start[i], n = ops.len[i];
  ix.hashA().set(ops.locals.subarray(s, s + n));
  ix.hashB().set(ops.exts.subarray(s, s + n));
  if (ops.hasParent[i]) ix.setParentWords(parentWords[2 * i], parentWords[2 * i + 1]);
  ix.storeN(ops.slot[i], DEVICE, ops.hasParent[i] === 1, n);
}

export async function main(argv = process.argv.slice(2)): Promise<string> {
  const trace = argv.find((a) => !a.startsWith('--') && a.endsWith('.jsonl')) ?? 'test/fixtures/mooncake/conversation_trace.jsonl';
  const wi = argv.indexOf('--workers');
  const workerList = wi >= 0 ? argv[wi + 1].split(',').map(Number) : [16, 128, 1024];
  const ri = argv.indexOf('--requests');
  const chains = readTrace(trace, ri >= 0 ? Number(argv[ri + 1]) : Infinity);
  const lines = ['| W | impl | combined block-ops/s | match p50 µs | match p99 µs | apply blocks/s | bytes/(block,worker) |', '|---|---|---|---|---|---|---|'];
  for (const w of workerList) {
    const ops = buildOps(chains, w, 16384);
    const a = runWasm(ops, w);
    const b = runReference(ops);
    lines.push(report(ops, w, a), report(ops, w, b));
    const ma = [...a.matchNs].sort((x, y) => x - y), mb = [...b.matchNs].sort((x, y) => x - y);
    lines.push(`| ${w} | ratio ref/wasm | ${(b.seconds / a.seconds).toFixed(1)}x | ${(pct(mb, 0.5) / pct(ma, 0.5)).toFixed(1)}x | | ${(b.applySeconds / a.applySeconds).toFixed(1)}x | |`);
    console.error(`W=${w}: ${ops.count} ops, ${ops.blocks.matched} matched, ${ops.blocks.stored} stored, ${ops.blocks.removed} removed blocks`);
  }
  const out = `### Mooncake conversation trace replay (${chains.length} requests, 1 block per hash_id, capacity 16,384 blocks/worker)\n\n` +
    lines.join('\n') + '\n\n### Micro (tinybench, W = 128)\n\n| case | p50 | throughput |\n|---|---|---|\n' + (await micro(chains)) + '\n';
  console.log(out);
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) void main();
