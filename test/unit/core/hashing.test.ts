import { test } from 'node:test';
import assert from 'node:assert/strict';
import { xxhash3 } from 'hash-wasm';
import { getWasm } from '../../../src/core/index/wasm.js';
import { makeRng } from '../../reference/workload.js';
import {
  PUBLIC_SEED, xxh3, publicBlockSeed, blockCount, hashBlocksToScratch, chainToScratch, blockHashes,
  sequenceHashes,
} from '../../../src/core/index/hashing.js';

// The oracle: hash-wasm's xxHash3 (the xxHash C code compiled separately, streaming API).
const M32 = 0xffffffffn;
async function refXxh3(bytes: Uint8Array, seed: bigint): Promise<bigint> {
  const s = BigInt.asUintN(64, seed);
  return BigInt('0x' + await xxhash3(bytes, Number(s & M32), Number(s >> 32n)));
}

/** Plain-TS reference of §1.2/§1.4/§1.5 built on hash-wasm. */
async function refBlocks(tokens: number[], bs: number, seed: bigint, eagle: boolean,
  mm: (bigint[] | null)[] | null): Promise<bigint[]> {
  const out: bigint[] = [];
  const count = bs <= 0 || tokens.length < 1 ? 0 : Math.floor((eagle ? tokens.length - 1 : tokens.length) / bs);
  for (let i = 0; i < count; i++) {
    const win = tokens.slice(i * bs, i * bs + bs + (eagle ? 1 : 0));
    const hs = [...(mm?.[i] ?? [])].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const bytes = new Uint8Array(win.length * 4 + hs.length * 8);
    const dv = new DataView(bytes.buffer);
    win.forEach((t, j) => dv.setUint32(j * 4, t, true));
    hs.forEach((h, j) => dv.setBigUint64(win.length * 4 + j * 8, h, true));
    out.push(await refXxh3(bytes, seed));
  }
  return out;
}

/** u32 per call from the project's seeded PRNG (mulberry32, src/core/reference/workload.ts). */
function rng(seed: number): () => number {
  const f = makeRng(seed);
  return () => Math.floor(f() * 4294967296) >>> 0;
}
const u64 = (r: () => number): bigint => (BigInt(r()) << 32n) | BigInt(r());
const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

test('pinned vectors (algorithms §1.2, §1.3)', () => {
  assert.equal(xxh3(new TextEncoder().encode('test data'), 1337n), 13226331709069118873n);
  assert.deepEqual(blockHashes(range(8), 4), [9143094415614847814n, 12124091508212882195n]);
  assert.deepEqual(sequenceHashes([9143094415614847814n, 12124091508212882195n]),
    [9143094415614847814n, 9510318385840434533n]);
  const lora = publicBlockSeed('adapter-a', null);
  assert.equal(lora, 8842669519798868182n);
  assert.deepEqual(blockHashes(range(8), 4, { seed: lora }), [6665157333201000639n, 11721812545976571723n]);
  assert.deepEqual(blockHashes(range(8), 4, { seed: publicBlockSeed(null, 'tenant-a') }),
    [17009624042690211646n, 10000672136415158886n]);
});

test('publicBlockSeed: empty strings are absent; both parts add with wrapping', async () => {
  assert.equal(publicBlockSeed('', ''), PUBLIC_SEED);
  assert.equal(publicBlockSeed(null, null), PUBLIC_SEED);
  const enc = new TextEncoder();
  const both = BigInt.asUintN(64, 1337n + await refXxh3(enc.encode('lora-é'), 0n) + await refXxh3(enc.encode('ns'), 1n));
  assert.equal(publicBlockSeed('lora-é', 'ns'), both);
  assert.equal(getWasm().seed(), both); // left ready for hashBlocks
});

test('xxh3() restores P_SEED', () => {
  const w = getWasm();
  w.setSeed(42n);
  xxh3(new Uint8Array([1, 2, 3]), 7n);
  assert.equal(w.seed(), 42n);
});

test('EAGLE block counts (§1.5): windows of bs + 1 tokens, stride bs', async () => {
  for (const [n, want] of [[0, 0], [1, 0], [4, 0], [5, 1], [8, 1], [9, 2]] as const) {
    assert.equal(blockCount(n, 4, true), want);
    assert.equal(hashBlocksToScratch(range(n), 4, PUBLIC_SEED, { eagle: true }), want);
  }
  assert.deepEqual(blockHashes(range(9), 4, { eagle: true }), await refBlocks(range(9), 4, PUBLIC_SEED, true, null));
  assert.equal(hashBlocksToScratch(range(8), 0, PUBLIC_SEED), 0); // bs == 0 yields nothing
  assert.equal(hashBlocksToScratch(range(7), 4, PUBLIC_SEED), 1); // partial tail never hashed
});

test('MM block (§1.4): mm hashes [5, 3] are appended sorted as LE u64', async () => {
  const bytes = new Uint8Array(16 + 16);
  const dv = new DataView(bytes.buffer);
  for (let i = 0; i < 4; i++) dv.setUint32(i * 4, i, true);
  dv.setBigUint64(16, 3n, true);
  dv.setBigUint64(24, 5n, true);
  const got = blockHashes(range(8), 4, { mm: [[5n, 3n], null] });
  assert.deepEqual(got, [await refXxh3(bytes, 1337n), 12124091508212882195n]);
  assert.deepEqual(blockHashes(range(8), 4, { mm: [[], []] }), [9143094415614847814n, 12124091508212882195n]);
});

test('XXH3 matches hash-wasm for every length 0..2048 with random, 0, 1 and 2^64-1 seeds', async () => {
  const r = rng(0x5eed);
  const buf = new Uint8Array(2048);
  for (let i = 0; i < buf.length; i++) buf[i] = r() & 0xff;
  const fixed = [0n, 1n, (1n << 64n) - 1n];
  for (let len = 0; len <= 2048; len++) {
    const data = buf.subarray(2048 - len); // varying alignment as well as length
    for (const seed of [u64(r), fixed[len % 3], PUBLIC_SEED]) {
      const want = await refXxh3(data, seed);
      const got = xxh3(data, seed);
      if (got !== want) assert.fail(`len ${len} seed ${seed}: got ${got}, want ${want}`);
    }
  }
  for (const seed of fixed) for (const len of [0, 3, 8, 16, 128, 240, 241, 1024, 1025, 2048]) {
    assert.equal(xxh3(buf.subarray(0, len), seed), await refXxh3(buf.subarray(0, len), seed));
  }
});

test('block hashing matches the hash-wasm reference (bs 1..64, eagle, mm incl. heapsort sizes)', async () => {
  const r = rng(0xb10c);
  for (let bs = 1; bs <= 64; bs++) {
    for (const withMm of [false, true]) {
      const eagle = (r() & 1) === 1;
      const n = r() % (bs * 12 + 2);
      const tokens = Array.from({ length: n }, () => (r() & 3) === 0 ? r() : r() % 200_000);
      const seed = (r() & 1) === 1 ? PUBLIC_SEED : u64(r);
      const count = blockCount(n, bs, eagle);
      const mm = withMm ? Array.from({ length: count }, () => {
        const k = r() % 8 === 0 ? 17 + (r() % 30) : r() % 4; // > 16 takes the heapsort path
        return k === 0 && (r() & 1) === 1 ? null : Array.from({ length: k }, () => (r() & 7) === 0 ? 7n : u64(r));
      }) : null;
      const want = await refBlocks(tokens, bs, seed, eagle, mm);
      assert.deepEqual(blockHashes(tokens, bs, { seed, eagle, mm }), want, `bs ${bs} n ${n} eagle ${eagle} mm ${withMm}`);
      const chainSeed = u64(r);
      const seq: bigint[] = [];
      for (let i = 0; i < want.length; i++) {
        if (i === 0) { seq.push(want[0]); continue; }
        const b = new Uint8Array(16), dv = new DataView(b.buffer);
        dv.setBigUint64(0, seq[i - 1], true);
        dv.setBigUint64(8, want[i], true);
        seq.push(await refXxh3(b, chainSeed));
      }
      assert.deepEqual(sequenceHashes(want, chainSeed), seq);
    }
  }
});

test('hashBlocks reports a too-small region instead of reading past it', () => {
  const w = getWasm();
  const tooMany = 1 << 30; // far beyond R_TOKENS
  assert.equal(w.exports.hashBlocks(tooMany, 16, 0, 0), -1);
  assert.throws(() => chainToScratch(w.localsCapacity() + 1, PUBLIC_SEED), RangeError);
});

// STYLE habit 3: hot exports allocate nothing. 100,000 calls each after a warm-up.
test('hashBlocks and chainHashes do not grow wasm memory over 100,000 calls each', () => {
  const w = getWasm();
  const { hashBlocks, chainHashes } = w.exports;
  const r = rng(7);
  const tokens = Array.from({ length: 2048 }, () => r() % 150_000);
  const mm = Array.from({ length: 128 }, (_, i) => (i % 9 === 0 ? [u64(r), u64(r), 5n] : null));
  const plain = blockHashes(tokens, 16);
  const withMm = blockHashes(tokens, 16, { mm });
  chainToScratch(128, PUBLIC_SEED); // reserves R_HASH_B
  hashBlocksToScratch(tokens, 16, PUBLIC_SEED, { mm }); // scratch now holds tokens + mm data
  for (let i = 0; i < 1_000; i++) { hashBlocks(2048, 16, 0, 1); chainHashes(128); }
  const before = w.memoryBytes();
  for (let i = 0; i < 100_000; i++) hashBlocks(2048, 16, 0, i & 1);
  for (let i = 0; i < 100_000; i++) chainHashes(128);
  assert.equal(w.memoryBytes(), before);
  // The work was real: the last calls produced the expected hashes.
  assert.equal(hashBlocks(2048, 16, 0, 1), 128);
  assert.deepEqual(Array.from(w.locals().subarray(0, 128)), withMm);
  assert.equal(hashBlocks(2048, 16, 0, 0), 128);
  assert.deepEqual(Array.from(w.locals().subarray(0, 128)), plain);
  chainHashes(128);
  assert.deepEqual(Array.from(w.exts().subarray(0, 128)), sequenceHashes(plain));
});
