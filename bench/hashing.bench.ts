/**
 * Hashing benchmark: local block hashes (wasm `hashBlocksToScratch`) against hash-wasm's
 * xxhash3 over the same blocks one by one (what a TS user would otherwise pick), and the
 * sequence-hash chain (`chainToScratch`) against hash-wasm over the 16-byte chain buffers.
 * A baseline case measures interop alone (tokens written, no complete block).
 *
 *   node build/dist/bench/hashing.bench.js
 */
import assert from 'node:assert/strict';
import { Bench } from 'tinybench';
import { createXXHash3 } from 'hash-wasm';
import { getWasm } from '../src/core/index/wasm.js';
import { PUBLIC_SEED, hashBlocksToScratch, chainToScratch } from '../src/core/index/hashing.js';

const BS = 16;

interface Case { name: string; units: number; unit: string }

function tokensOf(n: number): Uint32Array {
  const t = new Uint32Array(n);
  let x = 0x9e3779b9;
  for (let i = 0; i < n; i++) { x ^= x << 13; x ^= x >>> 17; x ^= x << 5; t[i] = (x >>> 0) % 150_000; }
  return t;
}

export async function main(): Promise<string> {
  const w = getWasm();
  const hasher = await createXXHash3(Number(PUBLIC_SEED), 0);
  const bench = new Bench({ time: 500 });
  const cases: Case[] = [];
  const add = (c: Case, fn: () => void): void => { cases.push(c); bench.add(c.name, fn); };

  for (const n of [2048, 32768]) {
    const tokens = tokensOf(n), bytes = new Uint8Array(tokens.buffer), blocks = n / BS;
    const out = new BigUint64Array(blocks);
    const viaHashWasm = (): void => {
      for (let i = 0; i < blocks; i++) {
        hasher.init();
        hasher.update(bytes.subarray(i * BS * 4, (i + 1) * BS * 4));
        const d = hasher.digest('binary'); // big-endian u64
        out[i] = new DataView(d.buffer, d.byteOffset, 8).getBigUint64(0);
      }
    };
    // Correctness before timing: both implementations agree on these blocks.
    assert.equal(hashBlocksToScratch(tokens, BS, PUBLIC_SEED), blocks);
    viaHashWasm();
    assert.deepEqual(w.locals().subarray(0, blocks), out);
    // Interop alone: the same token copy, seed write and wasm call, with zero complete blocks.
    const x = w.exports;
    add({ name: `baseline: write tokens + call, 0 blocks n=${n}`, units: n, unit: 'tokens' },
      () => { w.writeTokens(tokens); w.setSeed(PUBLIC_SEED); x.hashBlocks(n, n + 1, 0, 0); });
    add({ name: `wasm hashBlocksToScratch n=${n} bs=${BS}`, units: n, unit: 'tokens' },
      () => { hashBlocksToScratch(tokens, BS, PUBLIC_SEED); });
    add({ name: `hash-wasm xxhash3 per block n=${n} bs=${BS}`, units: n, unit: 'tokens' }, viaHashWasm);
  }

  for (const blocks of [128, 2048]) {
    hashBlocksToScratch(tokensOf(blocks * BS), BS, PUBLIC_SEED);
    const locals = w.locals().slice(0, blocks);
    const seq = new BigUint64Array(blocks), buf = new Uint8Array(16), dv = new DataView(buf.buffer);
    const viaHashWasm = (): void => {
      seq[0] = locals[0];
      for (let i = 1; i < blocks; i++) {
        dv.setBigUint64(0, seq[i - 1], true);
        dv.setBigUint64(8, locals[i], true);
        hasher.init(); hasher.update(buf);
        const d = hasher.digest('binary');
        seq[i] = new DataView(d.buffer, d.byteOffset, 8).getBigUint64(0);
      }
    };
    chainToScratch(blocks, PUBLIC_SEED);
    viaHashWasm();
    assert.deepEqual(w.exts().subarray(0, blocks), seq);
    add({ name: `wasm chainToScratch blocks=${blocks}`, units: blocks, unit: 'blocks' },
      () => { chainToScratch(blocks, PUBLIC_SEED); });
    add({ name: `hash-wasm xxhash3 chain blocks=${blocks}`, units: blocks, unit: 'blocks' }, viaHashWasm);
  }

  await bench.run();
  const rows = ['| case | mean µs | p50 µs | throughput | ns/unit |', '|---|---|---|---|---|'];
  bench.tasks.forEach((t, i) => {
    const c = cases[i];
    const r = t.result as { latency?: { mean: number; p50: number } };
    if (r.latency === undefined) { rows.push(`| ${c.name} | failed | | | |`); return; }
    const mean = r.latency.mean; // ms
    rows.push(`| ${c.name} | ${(mean * 1e3).toFixed(2)} | ${(r.latency.p50 * 1e3).toFixed(2)} | ` +
      `${(c.units / mean / 1e3).toFixed(1)}M ${c.unit}/s | ${(mean * 1e6 / c.units).toFixed(2)} |`);
  });
  const table = rows.join('\n');
  console.log(table);
  return table;
}

if (import.meta.url === `file://${process.argv[1]}`) void main();
