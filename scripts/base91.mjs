// The text form of the embedded wasm module (scripts/build.mjs); a module of its own so that
// test/unit/core/inflate.test.ts can check the decoder against it.
/**
 * Bytes as text of the 91 printable ASCII characters that need no escape in any JS string literal
 * (all but " ' \ `): 13 bits, least significant first, per two characters (v % 91, v / 91), the
 * last group padded with zero bits. 16 characters per 13 bytes where base64 spends 17.3; decoded
 * by fromBase91 in src/core/index/wasm-source.ts.
 */
export function base91(bytes) {
  const digits = [...Array(95).keys()].map((i) => String.fromCharCode(32 + i)).filter((c) => !'"\'\\`'.includes(c));
  let out = '', acc = 0, n = 0;
  for (let i = 0; i < bytes.length || n > 0;) {
    while (n < 13 && i < bytes.length) { acc |= bytes[i++] << n; n += 8; }
    const v = acc & 0x1fff;
    acc >>>= 13; n = Math.max(0, n - 13);
    out += digits[v % 91] + digits[Math.floor(v / 91)];
  }
  return out;
}
