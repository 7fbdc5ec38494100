/**
 * Raw DEFLATE (RFC 1951) decoding, synchronous and small: the embedded wasm module is stored
 * deflated (scripts/build.mjs, zlib level 9), which more than halves what every bundle carries
 * for it (25.8 KB of wasm: 34.4 KB as base64; deflated, 11.2 KB, written as 13.8 K characters of
 * base-91 text). Why not the platform's `DecompressionStream`: it is asynchronous, and the core
 * compiles its module synchronously on first use. Decoding follows zlib's puff.c: canonical Huffman codes read one bit at a time,
 * slower per byte than table lookups but with no tables beyond the code lengths: the module
 * inflates in 4-10 ms in a fresh Node process (atob of the plain base64 took 1-3 ms), once per
 * process, since the compiled module is cached (wasm.ts).
 */

/** A canonical Huffman code: how many codes of each length (1..15), and the symbols in code order. */
interface Huffman { readonly counts: Uint16Array; readonly symbols: Uint16Array }

function huffman(lengths: ArrayLike<number>): Huffman {
  const counts = new Uint16Array(16), offsets = new Uint16Array(16), symbols = new Uint16Array(lengths.length);
  for (let s = 0; s < lengths.length; s++) counts[lengths[s]]++;
  for (let len = 1; len < 15; len++) offsets[len + 1] = offsets[len] + counts[len];
  for (let s = 0; s < lengths.length; s++) if (lengths[s]) symbols[offsets[lengths[s]]++] = s;
  return { counts, symbols };
}

// base and extra bits of the length symbols 257..285 and of the distance symbols 0..29
const LENGTH_BASE: number[] = [], LENGTH_EXTRA: number[] = [], DIST_BASE: number[] = [], DIST_EXTRA: number[] = [];
for (let i = 0, base = 3; i < 29; i++) { LENGTH_EXTRA[i] = i < 8 ? 0 : (i >> 2) - 1; LENGTH_BASE[i] = base; base += 1 << LENGTH_EXTRA[i]; }
LENGTH_BASE[28] = 258; LENGTH_EXTRA[28] = 0;
for (let i = 0, base = 1; i < 30; i++) { DIST_EXTRA[i] = i < 4 ? 0 : (i >> 1) - 1; DIST_BASE[i] = base; base += 1 << DIST_EXTRA[i]; }
/** The order in which a dynamic block lists the code lengths of its code-length code. */
const CODE_LENGTH_ORDER = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];

/** `src` (raw DEFLATE, no zlib or gzip header) inflated; `size` is the exact inflated length. */
export function inflateRaw(src: Uint8Array, size: number): Uint8Array {
  const out = new Uint8Array(size);
  let pos = 0, bitBuf = 0, bitCount = 0, o = 0;
  const fail = (why: string): never => { throw new Error(`inflate: ${why}`); };
  const bits = (n: number): number => {
    while (bitCount < n) {
      if (pos >= src.length) fail('input ends early');
      bitBuf |= src[pos++] << bitCount; bitCount += 8;
    }
    const v = bitBuf & ((1 << n) - 1);
    bitBuf >>>= n; bitCount -= n;
    return v;
  };
  const decode = (h: Huffman): number => {
    for (let len = 1, code = 0, first = 0, index = 0; len < 16; len++) {
      if (bitCount === 0) { // bits(1), inlined: a code is read one bit at a time
        if (pos >= src.length) fail('input ends early');
        bitBuf = src[pos++]; bitCount = 8;
      }
      code |= bitBuf & 1; bitBuf >>>= 1; bitCount--;
      const count = h.counts[len];
      if (code - first < count) return h.symbols[index + code - first];
      index += count; first = (first + count) << 1; code <<= 1;
    }
    return fail('bad code');
  };
  let last: number;
  do {
    last = bits(1);
    const type = bits(2);
    let lit: Huffman, dist: Huffman;
    if (type === 0) { // stored: byte-aligned LEN, NLEN, then LEN bytes
      bitBuf = bitCount = 0;
      const len = src[pos] | (src[pos + 1] << 8);
      pos += 4;
      if (pos + len > src.length || o + len > size) fail('stored block overruns');
      out.set(src.subarray(pos, pos + len), o);
      pos += len; o += len;
      continue;
    } else if (type === 1) { // fixed codes
      const lengths = new Uint8Array(288).fill(8, 0, 144).fill(9, 144, 256).fill(7, 256, 280).fill(8, 280);
      lit = huffman(lengths); dist = huffman(new Uint8Array(30).fill(5));
    } else if (type === 2) { // dynamic codes: their lengths, themselves Huffman-coded
      const nlen = bits(5) + 257, ndist = bits(5) + 1, ncode = bits(4) + 4;
      const codeLengths = new Uint8Array(19);
      for (let i = 0; i < ncode; i++) codeLengths[CODE_LENGTH_ORDER[i]] = bits(3);
      const lengthCode = huffman(codeLengths), lengths = new Uint8Array(nlen + ndist);
      for (let i = 0; i < nlen + ndist;) {
        const sym = decode(lengthCode);
        if (sym < 16) { lengths[i++] = sym; continue; }
        if (sym === 16 && i === 0) fail('repeat with no previous length');
        const repeat = sym === 16 ? 3 + bits(2) : sym === 17 ? 3 + bits(3) : 11 + bits(7);
        if (i + repeat > lengths.length) fail('too many lengths');
        lengths.fill(sym === 16 ? lengths[i - 1] : 0, i, i + repeat);
        i += repeat;
      }
      lit = huffman(lengths.subarray(0, nlen)); dist = huffman(lengths.subarray(nlen));
    } else return fail('bad block type');
    for (let sym = decode(lit); sym !== 256; sym = decode(lit)) {
      if (sym < 256) { out[o++] = sym; continue; }
      sym -= 257;
      if (sym >= 29) fail('bad length symbol');
      const len = LENGTH_BASE[sym] + bits(LENGTH_EXTRA[sym]), d = decode(dist);
      if (d >= 30) fail('bad distance symbol');
      const back = DIST_BASE[d] + bits(DIST_EXTRA[d]);
      if (back > o || o + len > size) fail('copy out of range');
      for (let k = 0; k < len; k++, o++) out[o] = out[o - back];
    }
  } while (!last);
  if (o !== size) fail(`inflated ${o} bytes, expected ${size}`);
  return out;
}
