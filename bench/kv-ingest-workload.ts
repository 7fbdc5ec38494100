/**
 * The KV-event ingestion workload (issue 6 benchmark): the Mooncake conversation trace replayed as
 * the vLLM events W engines would publish. Each hash_id stands for 512 tokens and expands,
 * deterministically, into 32 blocks of 16 tokens (token ids below a 151k vocabulary, engine
 * hashes uniform 64-bit). Request r runs on worker r % W, which stores the suffix it does not hold
 * yet (parent = its deepest held block) and evicts least-recently-used hash ids beyond `capacity`
 * with one BlockRemoved per block, deepest first (as vLLM's block pool does). Like an engine with
 * chunked prefill, a step completes at most `batchBlocks` blocks: a long suffix is stored as
 * several chained BlockStored events, and a batch (one engine step) closes once it holds
 * `batchBlocks` blocks. Batches are written as vLLM 0.26 publishes them (`[ts, events, dp_rank]`,
 * map events), encoded here by hand so that building a million-block workload takes seconds.
 */

import { TRACE_BLOCK_TOKENS } from '../src/sim/trace.js';

const BLOCK_SIZE = 16, SUB_BLOCKS = TRACE_BLOCK_TOKENS / BLOCK_SIZE, VOCAB = 151_000;

export interface IngestWorkload {
  workers: number;
  /** Per worker: batches made before request `splitAt` (the warm-up phase); the rest are measured. */
  split: number[];
  /** Per worker: all batch payloads back to back, and the end offset of each. */
  data: Uint8Array[];
  ends: Uint32Array[];
  batches: number;
  storedBlocks: number;
  removedBlocks: number;
  events: number;
  bytes: number;
}

/** 32-bit finaliser (murmur3 fmix32): cheap, deterministic, well mixed. */
function fmix(x: number): number {
  x ^= x >>> 16; x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13; x = Math.imul(x, 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}

/** The 16 token ids of block `g` (g = hash_id * 32 + sub-block). */
export function blockTokens(g: number, out: number[] = []): number[] {
  for (let j = 0; j < BLOCK_SIZE; j++) out.push(fmix(g * BLOCK_SIZE + j + 0x9e3779b9) % VOCAB);
  return out;
}

/** The tokens of a request's whole chain of hash ids (512 per id). */
export function chainTokens(chain: readonly number[]): number[] {
  const out: number[] = [];
  for (const id of chain) for (let k = 0; k < SUB_BLOCKS; k++) blockTokens(id * SUB_BLOCKS + k, out);
  return out;
}

/** A growing msgpack writer for the handful of types a KV-event batch uses. */
class Writer {
  buf = new Uint8Array(1 << 20);
  pos = 0;
  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.pos + n));
    next.set(this.buf.subarray(0, this.pos));
    this.buf = next;
  }
  byte(b: number): void { this.ensure(1); this.buf[this.pos++] = b; }
  u32be(v: number): void { this.ensure(4); const b = this.buf, p = this.pos; b[p] = v >>> 24; b[p + 1] = v >>> 16; b[p + 2] = v >>> 8; b[p + 3] = v; this.pos += 4; }
  header(fix: number, n: number, b16: number, b32: number): void {
    if (n < 16) this.byte(fix | n);
    else if (n < 65536) { this.byte(b16); this.byte(n >>> 8); this.byte(n & 255); } else { this.byte(b32); this.u32be(n); }
  }
  array(n: number): void { this.header(0x90, n, 0xdc, 0xdd); }
  map(n: number): void { this.header(0x80, n, 0xde, 0xdf); }
  str(s: string): void { this.byte(0xa0 | s.length); for (let i = 0; i < s.length; i++) this.byte(s.charCodeAt(i)); } // short ASCII only
  nil(): void { this.byte(0xc0); }
  uint(v: number): void {
    if (v < 128) this.byte(v);
    else if (v < 65536) { this.byte(0xcd); this.byte(v >>> 8); this.byte(v & 255); } else { this.byte(0xce); this.u32be(v); }
  }
  /** uint64 from two words (vLLM's hashes are >= 2^32 with near certainty: always `cf`). */
  u64(hi: number, lo: number): void { this.byte(0xcf); this.u32be(hi); this.u32be(lo); }
  f64(v: number): void { this.ensure(9); this.buf[this.pos++] = 0xcb; new DataView(this.buf.buffer).setFloat64(this.pos, v); this.pos += 8; }
}

const hashHi = (g: number): number => fmix(g ^ 0x5bd1e995) | 0x80000000;
const hashLo = (g: number): number => fmix(g + 0x27d4eb2f);

interface Pending { w: Writer; ends: number[]; events: number; blocks: number; eventsStart: number; seq: number }

/** Builds the workload from the trace's hash-id chains. */
export function buildIngestWorkload(chains: readonly number[][],
  o: { workers: number; capacity: number; batchBlocks: number; splitAt: number }): IngestWorkload {
  const per: Pending[] = Array.from({ length: o.workers }, () => ({ w: new Writer(), ends: [], events: 0, blocks: 0, eventsStart: 0, seq: 0 }));
  const held: Map<string, { tick: number; depth: number; id: number }>[] = Array.from({ length: o.workers }, () => new Map());
  const totals = { stored: 0, removed: 0, events: 0, batches: 0 };
  // Batches are written with a 0xdd (u32) event-count header patched at flush time.
  const open = (p: Pending): void => {
    p.w.array(3); p.w.f64(1_700_000_000 + p.seq * 0.01);
    p.w.byte(0xdd); p.eventsStart = p.w.pos; p.w.u32be(0);
  };
  const flush = (p: Pending): void => {
    const b = p.w.buf, at = p.eventsStart;
    b[at] = p.events >>> 24; b[at + 1] = p.events >>> 16; b[at + 2] = p.events >>> 8; b[at + 3] = p.events;
    p.w.uint(0); // data_parallel_rank
    p.ends.push(p.w.pos);
    totals.batches++; totals.events += p.events;
    p.events = 0; p.blocks = 0; p.seq++;
  };
  const event = (p: Pending, blocks: number): void => {
    if (p.events === 0) open(p);
    p.events++; p.blocks += blocks;
  };
  const stored = (p: Pending, gs: number[], parent: number | null): void => {
    event(p, gs.length);
    const w = p.w;
    w.map(11);
    w.str('type'); w.str('BlockStored');
    w.str('block_hashes'); w.array(gs.length); for (const g of gs) w.u64(hashHi(g), hashLo(g));
    w.str('parent_block_hash'); if (parent === null) w.nil(); else w.u64(hashHi(parent), hashLo(parent));
    w.str('token_ids'); w.array(gs.length * BLOCK_SIZE);
    const toks: number[] = [];
    for (const g of gs) blockTokens(g, toks);
    for (const t of toks) w.uint(t);
    w.str('block_size'); w.uint(BLOCK_SIZE);
    w.str('lora_id'); w.nil();
    w.str('medium'); w.str('GPU');
    w.str('lora_name'); w.nil();
    w.str('extra_keys'); w.array(gs.length); for (let i = 0; i < gs.length; i++) w.nil();
    w.str('group_idx'); w.uint(0);
    w.str('kv_cache_spec_kind'); w.str('full_attention');
    totals.stored += gs.length;
  };
  const removed = (p: Pending, g: number): void => {
    event(p, 1);
    const w = p.w;
    w.map(4);
    w.str('type'); w.str('BlockRemoved');
    w.str('block_hashes'); w.array(1); w.u64(hashHi(g), hashLo(g));
    w.str('medium'); w.str('GPU');
    w.str('group_idx'); w.uint(0);
    totals.removed++;
  };
  let tick = 0;
  const split: number[] = [];
  chains.forEach((chain, r) => {
    if (r === o.splitAt) for (const q of per) { if (q.events > 0) flush(q); split.push(q.ends.length); }
    const wi = r % o.workers, p = per[wi], h = held[wi];
    let k = 0;
    while (k < chain.length && h.has(`${k}:${chain[k]}`)) k++;
    tick++;
    chain.forEach((id, d) => {
      const key = `${d}:${id}`, e = h.get(key);
      if (e) e.tick = tick; else h.set(key, { tick, depth: d, id });
    });
    if (k < chain.length) {
      const gs: number[] = [];
      for (let d = k; d < chain.length; d++) for (let s = 0; s < SUB_BLOCKS; s++) gs.push(chain[d] * SUB_BLOCKS + s);
      let parent = k > 0 ? chain[k - 1] * SUB_BLOCKS + SUB_BLOCKS - 1 : null;
      for (let i = 0; i < gs.length;) {
        const part = gs.slice(i, i + o.batchBlocks - p.blocks);
        stored(p, part, parent);
        parent = part[part.length - 1];
        i += part.length;
        if (p.blocks >= o.batchBlocks) flush(p);
      }
    }
    if (h.size > o.capacity) {
      const victims = [...h.entries()].sort((a, b) => a[1].tick - b[1].tick || b[1].depth - a[1].depth).slice(0, h.size - o.capacity);
      for (const [key, v] of victims) {
        h.delete(key);
        for (let s = SUB_BLOCKS - 1; s >= 0; s--) {
          removed(p, v.id * SUB_BLOCKS + s);
          if (p.blocks >= o.batchBlocks) flush(p);
        }
      }
    }
  });
  for (const p of per) if (p.events > 0) flush(p);
  if (split.length === 0) for (const p of per) split.push(p.ends.length);
  const data = per.map((p) => p.w.buf.slice(0, p.w.pos));
  return {
    workers: o.workers, split, data, ends: per.map((p) => Uint32Array.from(p.ends)), batches: totals.batches,
    storedBlocks: totals.stored, removedBlocks: totals.removed, events: totals.events, bytes: data.reduce((s, d) => s + d.length, 0),
  };
}
