/**
 * The raw-DEFLATE decoder that unpacks the embedded wasm module, against zlib's encoder: every
 * block type (stored, fixed, dynamic), long matches and far distances, the embedded module
 * itself, and input that is cut short or names the wrong size.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { constants, deflateRawSync } from 'node:zlib';
import { inflateRaw } from '../../../src/core/index/inflate.js';
import { embeddedBytes } from '../../../src/core/index/wasm-source.js';
import { seededRng } from '../../../src/core/random.js';

// compiled to build/dist/test/unit/core/: five levels up is the project root
const root = join(dirname(fileURLToPath(import.meta.url)), '../../../../..');

function roundTrip(data: Uint8Array, options: Parameters<typeof deflateRawSync>[1] = {}): void {
  const deflated = deflateRawSync(data, options);
  assert.deepEqual(inflateRaw(new Uint8Array(deflated), data.length), data);
}

/** `n` bytes from a small alphabet with repeats copied from up to `reach` bytes back: matches of every length and distance. */
function textLike(n: number, reach: number, seed: number): Uint8Array {
  const rng = seededRng(seed), next = (): number => rng.next(), out = new Uint8Array(n);
  for (let i = 0; i < n;) {
    if (i > 3 && next() < 0.5) {
      const back = 1 + Math.floor(next() * Math.min(i, reach)), len = Math.min(n - i, 3 + Math.floor(next() * 300));
      for (let k = 0; k < len; k++, i++) out[i] = out[i - back];
    } else out[i++] = 97 + Math.floor(next() * 20);
  }
  return out;
}

test('inflateRaw decodes what zlib deflates: dynamic, fixed and stored blocks', () => {
  const random = new Uint8Array(70_000);
  const rng = seededRng(1);
  for (let i = 0; i < random.length; i++) random[i] = Math.floor(rng.next() * 256);
  for (const data of [new Uint8Array(0), new Uint8Array([7]), new Uint8Array(100_000).fill(42), random,
    textLike(200_000, 40_000, 2), textLike(5_000, 8, 3)]) {
    roundTrip(data, { level: 9 });
    roundTrip(data, { level: 1 });
    roundTrip(data, { level: 0 }); // stored blocks only (at most 65,535 bytes each)
    roundTrip(data, { strategy: constants.Z_FIXED }); // fixed codes only
    roundTrip(data, { strategy: constants.Z_HUFFMAN_ONLY }); // literals only
    roundTrip(data, { strategy: constants.Z_RLE }); // distance 1 only
  }
});

test('the embedded module inflates to build/wasm/select.wasm', () => {
  assert.deepEqual(embeddedBytes(), new Uint8Array(readFileSync(join(root, 'build/wasm/select.wasm'))));
});

test('inflateRaw rejects input cut short and a size that is not the inflated one', () => {
  const data = textLike(10_000, 1_000, 4), deflated = new Uint8Array(deflateRawSync(data, { level: 9 }));
  assert.throws(() => inflateRaw(deflated.subarray(0, deflated.length >> 1), data.length), /inflate: /);
  assert.throws(() => inflateRaw(deflated, data.length - 1), /inflate: /);
  assert.throws(() => inflateRaw(deflated, data.length + 1), /inflate: inflated 10000 bytes, expected 10001/);
  assert.throws(() => inflateRaw(new Uint8Array([0xff, 0xff]), 10), /inflate: bad block type/);
});
