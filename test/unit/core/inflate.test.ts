/**
 * How the embedded wasm module is unpacked: the base-91 text decoder against the build's encoder
 * (scripts/base91.mjs), the raw-DEFLATE decoder against zlib's encoder (every block type, long
 * matches and far distances, input cut short or the wrong size), and the embedded module itself.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { constants, deflateRawSync } from 'node:zlib';
import { inflateRaw } from '../../../src/core/index/inflate.js';
import { embeddedBytes, fromBase91 } from '../../../src/core/index/wasm-source.js';
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

test('fromBase91 reads what the build writes: every length, at most one trailing zero byte of padding', async () => {
  const { base91 } = await import(pathToFileURL(join(root, 'scripts/base91.mjs')).href) as { base91(b: Uint8Array): string };
  const rng = seededRng(5), bytes = new Uint8Array(300);
  for (let i = 0; i < bytes.length; i++) bytes[i] = i < 8 ? 0xff : Math.floor(rng.next() * 256);
  for (let n = 0; n <= bytes.length; n++) {
    const text = base91(bytes.subarray(0, n)), back = fromBase91(text);
    assert.match(text, /^[ !#-&(-[\]-_a-~]*$/, 'printable ASCII, no quote, backslash or backquote');
    assert.equal(text.length, 2 * Math.ceil((8 * n) / 13));
    assert.deepEqual(back.subarray(0, n), bytes.subarray(0, n));
    assert.ok(back.length === n || (back.length === n + 1 && back[n] === 0), `${n} bytes came back as ${back.length}`);
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
