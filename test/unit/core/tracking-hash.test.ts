import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createXXHash3, type IHasher } from 'hash-wasm';
import { ConfigError } from '../../../src/core/config/config.js';
import {
  KEYED_DOMAIN, PUBLIC_SEED, deriveKeyedSeeds, parseTrackingKey, publicSeed, type TrackingScope,
} from '../../../src/core/index/tracking-hash.js';

// ---- tiny reference XXH3-64 + block hasher over hash-wasm (test oracle only) -------------------

const hashers = new Map<bigint, IHasher>();
/** Pre-creates (async) the XXH3 hashers for `seeds`, so `xxh3` below can be synchronous. */
async function prepare(...seeds: bigint[]): Promise<void> {
  for (const s of seeds) {
    if (!hashers.has(s)) hashers.set(s, await createXXHash3(Number(s & 0xffffffffn), Number(s >> 32n)));
  }
}
function xxh3(bytes: Uint8Array, seed: bigint): bigint {
  const h = hashers.get(seed);
  if (h === undefined) throw new Error(`seed ${seed} not prepared`);
  h.init();
  h.update(bytes);
  return BigInt(`0x${h.digest('hex')}`);
}
const le32 = (xs: number[]): Uint8Array => {
  const out = new Uint8Array(xs.length * 4);
  const v = new DataView(out.buffer);
  xs.forEach((x, i) => v.setUint32(i * 4, x, true));
  return out;
};
const le64 = (xs: bigint[]): Uint8Array => {
  const out = new Uint8Array(xs.length * 8);
  const v = new DataView(out.buffer);
  xs.forEach((x, i) => v.setBigUint64(i * 8, x, true));
  return out;
};
const concat = (a: Uint8Array, b: Uint8Array): Uint8Array => {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
};

/** Block hashes of protocols.rs: complete blocks (eagle: bs+1 windows, stride bs), mm hashes appended. */
function blockHashes(tokens: number[], bs: number, seed: bigint, opts: { eagle?: boolean; mm?: (bigint[] | null)[] } = {}): bigint[] {
  const n = opts.eagle ? Math.floor((tokens.length - 1) / bs) : Math.floor(tokens.length / bs);
  const out: bigint[] = [];
  for (let i = 0; i < n; i++) {
    let bytes = le32(tokens.slice(i * bs, i * bs + bs + (opts.eagle ? 1 : 0)));
    const mm = opts.mm?.[i];
    if (mm) bytes = concat(bytes, le64([...mm].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0))));
    out.push(xxh3(bytes, seed));
  }
  return out;
}
/** Chained sequence hashes: seq[0] = block[0], seq[i] = xxh3(LE(seq[i-1]) ++ LE(block[i]), chainSeed). */
function chain(blocks: bigint[], chainSeed: bigint): bigint[] {
  const out: bigint[] = [];
  for (const [i, b] of blocks.entries()) out.push(i === 0 ? b : xxh3(le64([out[i - 1], b]), chainSeed));
  return out;
}
const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

// ---- tests --------------------------------------------------------------------------------------

test('reference hasher reproduces the pinned public vector and the protocols.rs examples', async () => {
  await prepare(0n, 1n, PUBLIC_SEED);
  assert.equal(xxh3(new TextEncoder().encode('test data'), 1337n), 13226331709069118873n);
  const local = blockHashes(range(8), 4, PUBLIC_SEED);
  assert.deepEqual(local, [9143094415614847814n, 12124091508212882195n]);
  assert.deepEqual(chain(local, PUBLIC_SEED), [9143094415614847814n, 9510318385840434533n]);
  const loraSeed = publicSeed('adapter-a', null, xxh3);
  await prepare(loraSeed, publicSeed(null, 'tenant-a', xxh3));
  assert.deepEqual(blockHashes(range(8), 4, loraSeed), [6665157333201000639n, 11721812545976571723n]);
  assert.deepEqual(blockHashes(range(8), 4, publicSeed(null, 'tenant-a', xxh3)),
    [17009624042690211646n, 10000672136415158886n]);
});

test('public seed: 1337 + xxh3(lora,0) + xxh3(ns,1) wrapping, empty strings absent', async () => {
  await prepare(0n, 1n);
  assert.equal(publicSeed('adapter-a', null, xxh3), 8842669519798868182n);
  assert.equal(publicSeed(null, null, xxh3), 1337n);
  assert.equal(publicSeed('', '', xxh3), 1337n);
  assert.equal(publicSeed('adapter-a', '', xxh3), publicSeed('adapter-a', undefined, xxh3));
  const both = publicSeed('adapter-a', 'tenant-a', xxh3);
  const ns = publicSeed(null, 'tenant-a', xxh3) - 1337n;
  assert.equal(both, (8842669519798868182n + ns) & ((1n << 64n) - 1n));
  assert.equal(publicSeed('a', null, () => (1n << 64n) - 1n), 1336n, 'wraps mod 2^64');
});

test('keyed domain separator is the tracking_hash.rs string with its trailing NUL', () => {
  assert.equal(KEYED_DOMAIN.length, 42);
  assert.equal(KEYED_DOMAIN[KEYED_DOMAIN.length - 1], 0);
  assert.equal(new TextDecoder().decode(KEYED_DOMAIN.subarray(0, -1)), 'dynamo.router.tracking-hash/keyed-xxh3-v1');
});

test('tracking key must be exactly 32 raw bytes', () => {
  for (const n of [0, 31, 33]) {
    assert.throws(() => parseTrackingKey(new Uint8Array(n)), (err: unknown) =>
      err instanceof ConfigError && err.problems[0].includes('exactly 32 raw bytes') && err.problems[0].includes(`found ${n}`));
  }
  const raw = new Uint8Array(32).fill(7);
  const key = parseTrackingKey(raw);
  raw.fill(0);
  assert.equal(key[0], 7, 'returns a copy');
});

const scopeA: TrackingScope = {
  modelName: 'model-a', routingGroup: 'tenant-a', blockSize: 4, cacheNamespace: 'cache-a', loraName: 'adapter-a', isEagle: false,
};

test('keyed vector 1 (key 0x5a, scope model-a/tenant-a, ns + lora, tokens 0..11): chained hashes match', async () => {
  const { blockSeed, chainSeed } = deriveKeyedSeeds(new Uint8Array(32).fill(0x5a), '2026-01', scopeA);
  await prepare(blockSeed, chainSeed);
  const blocks = blockHashes(range(12), 4, blockSeed);
  const want = [4363769719052127296n, 14998523962162619427n, 13920914207884994756n];
  assert.deepEqual(chain(blocks, chainSeed), want, 'pinned values are the SEQUENCE (chained) hashes');
  assert.equal(blocks[0], want[0], 'seq[0] = block[0]');
  assert.notDeepEqual(blocks, want, 'later entries are not the raw block hashes');
});

test('keyed vector 2 (key 0x41, model/default, tokens 0..9): multimodal and eagle', async () => {
  const scope: TrackingScope = { modelName: 'model', routingGroup: 'default', blockSize: 4, cacheNamespace: null, loraName: null, isEagle: false };
  const key = new Uint8Array(32).fill(0x41);
  const plain = deriveKeyedSeeds(key, '2026-01', scope);
  await prepare(plain.blockSeed, plain.chainSeed);
  const withMm = chain(blockHashes(range(10), 4, plain.blockSeed, { mm: [[42n], null] }), plain.chainSeed);
  assert.deepEqual(withMm, [13077030603177067515n, 12131634976806651614n]);
  assert.notDeepEqual(chain(blockHashes(range(10), 4, plain.blockSeed), plain.chainSeed), withMm);

  const eagle = deriveKeyedSeeds(key, '2026-01', { ...scope, isEagle: true });
  await prepare(eagle.blockSeed, eagle.chainSeed);
  const eagleBlocks = blockHashes(range(10), 4, eagle.blockSeed, { eagle: true });
  assert.equal(eagleBlocks.length, 2, 'floor((10-1)/4) windows of 5 tokens');
  assert.deepEqual(chain(eagleBlocks, eagle.chainSeed), [18351479723295049348n, 8577555336206814019n]);
});

test('keyed seeds are deterministic and sensitive to every scope field', () => {
  const key = new Uint8Array(32).fill(0x23);
  const base = deriveKeyedSeeds(key, '2026-01', scopeA);
  assert.deepEqual(deriveKeyedSeeds(key, '2026-01', scopeA), base);
  const variants: [string, ReturnType<typeof deriveKeyedSeeds>][] = [
    ['key id', deriveKeyedSeeds(key, '2026-02', scopeA)],
    ['key', deriveKeyedSeeds(new Uint8Array(32).fill(0x24), '2026-01', scopeA)],
    ['model', deriveKeyedSeeds(key, '2026-01', { ...scopeA, modelName: 'model-b' })],
    ['group', deriveKeyedSeeds(key, '2026-01', { ...scopeA, routingGroup: 'tenant-b' })],
    ['block size', deriveKeyedSeeds(key, '2026-01', { ...scopeA, blockSize: 3 })],
    ['namespace', deriveKeyedSeeds(key, '2026-01', { ...scopeA, cacheNamespace: null })],
    ['lora', deriveKeyedSeeds(key, '2026-01', { ...scopeA, loraName: null })],
    ['eagle', deriveKeyedSeeds(key, '2026-01', { ...scopeA, isEagle: true })],
  ];
  for (const [what, v] of variants) {
    assert.notEqual(v.blockSeed, base.blockSeed, what);
    assert.notEqual(v.chainSeed, base.chainSeed, what);
  }
  assert.deepEqual(deriveKeyedSeeds(key, 'k', { ...scopeA, cacheNamespace: '' }),
    deriveKeyedSeeds(key, 'k', { ...scopeA, cacheNamespace: null }), 'empty namespace = absent');
  assert.throws(() => deriveKeyedSeeds(new Uint8Array(16), 'k', scopeA), RangeError);
  assert.throws(() => deriveKeyedSeeds(key, 'k', { ...scopeA, blockSize: 2 ** 32 }), RangeError);
});
