/**
 * Injected time and randomness (DESIGN: every TTL, sweep and tie-break reads these), with the
 * default sources.
 *
 * `seededRng` is sfc32 (Chris Doty-Humphrey's small fast counting generator, PractRand-clean)
 * over 32-bit integer arithmetic: a draw costs a few integer operations. The earlier BigInt
 * xorshift and a `crypto.getRandomValues` call per draw cost 7-8% of a `/select` (profile in
 * bench/RESULTS.md, HTTP section): tie-breaking among idle workers draws once per tie.
 * `systemRng` is the same generator seeded once from the platform's crypto source.
 */
/** Milliseconds on a monotonic clock (virtual in tests and simulations). */
export interface Clock { now(): number }

/** Seeded randomness: `next()` uniform in [0, 1), `u64()` a uniform 64-bit value. */
export interface Rng { next(): number; u64(): bigint }

/** Milliseconds per second (clocks read milliseconds; configuration speaks seconds). */
export const MS = 1000;


/** Default clock: performance.now (monotonic, available in Node and browsers). */
export const systemClock: Clock = { now: () => performance.now() };

/** splitmix32: expands a seed into well-mixed 32-bit words. */
function splitmix32(state: number): () => number {
  let s = state >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return (z ^ (z >>> 16)) >>> 0;
  };
}

/** A deterministic generator for a seed: `next()` uniform in [0, 1) (53 bits), `u64()` 64 bits. */
export function seededRng(seed: number | bigint): Rng {
  const big = BigInt.asUintN(64, BigInt(seed));
  const mix = splitmix32(Number(big & 0xffffffffn) ^ Math.imul(Number(big >> 32n), 0x27d4eb2d));
  let a = mix(), b = mix(), c = mix(), d = mix();
  const u32 = (): number => {
    const t = (((a + b) >>> 0) + d) >>> 0;
    d = (d + 1) >>> 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) >>> 0;
    c = ((c << 21) | (c >>> 11)) >>> 0;
    c = (c + t) >>> 0;
    return t;
  };
  for (let i = 0; i < 12; i++) u32();
  return {
    next: () => ((u32() >>> 5) * 67108864 + (u32() >>> 6)) / 9007199254740992,
    u64: () => (BigInt(u32()) << 32n) | BigInt(u32()),
  };
}

/** {@link seededRng} seeded from the platform (crypto.getRandomValues; the time where absent). */
export function systemRng(): Rng {
  const c = (globalThis as { crypto?: { getRandomValues?: (a: Uint32Array) => Uint32Array } }).crypto;
  if (!c?.getRandomValues) return seededRng(Date.now());
  const w = c.getRandomValues(new Uint32Array(2));
  return seededRng((BigInt(w[1]) << 32n) | BigInt(w[0]));
}
