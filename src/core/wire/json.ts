/**
 * u64-exact JSON for the HTTP layer.
 *
 * Bodies carry unsigned 64-bit ids and hashes (up to 18446744073709551615) and
 * signed i64 values (-1 in hash arrays). `JSON.parse` rounds those to doubles;
 * `parseJson` returns them as `bigint` instead and `stringifyJson` writes
 * `bigint` back as bare digits. Everything else matches JSON.parse /
 * JSON.stringify. No `node:` imports: this module also runs in browsers.
 *
 * Timings quoted below were measured on Node 20 (2 vCPU container) with
 * bench/json.bench.ts and throwaway micro-benchmarks.
 */

const MAX_SAFE = Number.MAX_SAFE_INTEGER;
/** 2^64 - 1. */
export const U64_MAX = (1n << 64n) - 1n;
const I64_MIN = -(1n << 63n);
const MAX_SAFE_BIG = BigInt(MAX_SAFE);

// ---------------------------------------------------------------------------
// parse

/**
 * Parses JSON text (RFC 8259) like `JSON.parse`, except that an integer literal
 * (no fraction, no exponent) whose magnitude exceeds `Number.MAX_SAFE_INTEGER`
 * becomes an exact `bigint` (negative too). Safe integers and non-integers stay
 * `number`. Invalid JSON throws a `SyntaxError` whose message names the
 * position. Duplicate keys: last wins. A `__proto__` key becomes an own data
 * property, never the prototype.
 *
 * @param text JSON text.
 * @returns The parsed value.
 * @throws {SyntaxError} When `text` is not valid JSON.
 */
export function parseJson(text: string): unknown {
  // Bodies that lead with u64 literals (hash arrays, u64 worker ids) go straight
  // to the exact parser: on 10,000 hashes JSON.parse + precise re-parse ran at
  // 277 ops/s, precise alone at 486 (native 680). The probe only looks at the
  // first SCAN_WINDOW chars, so it costs ~1 us however large the body is.
  if (likelyBigLiteral(text)) return preciseParse(text);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    // Node 20's messages often omit the position; rerun the precise parser to
    // throw a positioned SyntaxError (it always throws on input JSON.parse rejects).
    preciseParse(text);
    throw err;
  }
  // Exactness check on the result rather than a full-text digit scan: every
  // integer literal above 2^53-1 parses to a double above 2^53-1 (rounding is
  // monotonic and 2^53 is representable), so a tree without such doubles is
  // already exact. On a 2,048-token body the walk cost ~5-8 us against ~50 us for
  // JSON.parse, while the best char-skipping full scan cost ~14-25 us (a /\d{16}/
  // regex ~230 us, slower than JSON.parse itself) and false-positives on long
  // fractions and digit strings. Doubles such as 1e20 also trigger the precise
  // path, which then returns the same number.
  return hasUnsafeNumber(value) ? preciseParse(text) : value;
}

const SCAN_WINDOW = 1024;

/**
 * Heuristic routing only (correctness never depends on it): is there a run of
 * 16+ digits in the first SCAN_WINDOW chars that looks like an integer literal
 * (not bordered by '.', 'e', 'E' or '"')? Any such run covers one of the
 * sampled positions 15, 31, 47, ..., so only every 16th char is read.
 */
function likelyBigLiteral(text: string): boolean {
  const n = text.length < SCAN_WINDOW ? text.length : SCAN_WINDOW;
  for (let i = 15; i < n; i += 16) {
    if (!isDigit(text.charCodeAt(i))) continue;
    let a = i;
    while (a > 0 && isDigit(text.charCodeAt(a - 1))) a--;
    let b = i + 1;
    while (isDigit(text.charCodeAt(b))) b++;
    if (b - a < 16) continue;
    const before = text.charCodeAt(a - 1);
    const after = text.charCodeAt(b);
    if (before !== 0x2e && before !== 0x22 && after !== 0x2e && after !== 0x65 && after !== 0x45 && after !== 0x22) return true;
  }
  return false;
}

/**
 * The exact parser alone, without the native `JSON.parse` fast path: same
 * results and errors as {@link parseJson}. Exposed for tests and benchmarks.
 *
 * @param text JSON text.
 * @returns The parsed value.
 * @throws {SyntaxError} When `text` is not valid JSON.
 */
export function parseJsonPrecise(text: string): unknown {
  return preciseParse(text);
}

/** Iterative walk (no recursion, so nesting depth is unbounded like JSON.parse). */
function hasUnsafeNumber(root: unknown): boolean {
  if (typeof root === 'number') return root > MAX_SAFE || root < -MAX_SAFE;
  if (typeof root !== 'object' || root === null) return false;
  const stack: object[] = [root];
  while (stack.length > 0) {
    const node = stack.pop() as Record<string, unknown> | unknown[];
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const x = node[i];
        if (typeof x === 'number') {
          if (x > MAX_SAFE || x < -MAX_SAFE) return true;
        } else if (typeof x === 'object' && x !== null) stack.push(x);
      }
    } else {
      for (const k in node) {
        const x = node[k];
        if (typeof x === 'number') {
          if (x > MAX_SAFE || x < -MAX_SAFE) return true;
        } else if (typeof x === 'object' && x !== null) stack.push(x);
      }
    }
  }
  return false;
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

/**
 * The exact parser. Its state lives in instance fields: the same code on
 * module-level `let` variables was ~10% slower on 10,000 hashes (best of 5:
 * 1.82 vs 1.64 ms) and no faster on small bodies.
 */
class Parser {
  src = '';
  pos = 0;
  len = 0;

  fail(message: string): never {
    throw new SyntaxError(`${message} in JSON at position ${this.pos}`);
  }

  unexpected(c: number): never {
    if (c !== c || this.pos >= this.len) throw new SyntaxError(`Unexpected end of JSON input at position ${this.pos}`);
    // printable ASCII as is, anything else (whitespace lookalikes, controls) as \uXXXX
    const shown = c > 0x20 && c < 0x7f ? String.fromCharCode(c) : `\\u${c.toString(16).padStart(4, '0')}`;
    this.fail(`Unexpected token ${shown}`);
  }

  /** Skips JSON whitespace; returns the char code at `this.pos` (NaN at end of input). */
  skipWs(): number {
    let c = this.src.charCodeAt(this.pos);
    while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = this.src.charCodeAt(++this.pos);
    return c;
  }

  /**
   * Recursive-descent grammar, run iteratively with an explicit container stack
   * so that deeply nested input cannot overflow the call stack.
   */
  parse(text: string): unknown {
    this.src = text;
    this.pos = 0;
    this.len = text.length;
    try {
      const stack: (unknown[] | Record<string, unknown>)[] = [];
      const keys: (string | undefined)[] = []; // property name per frame; undefined = array
      let value: unknown;
      let c = this.skipWs();
      for (;;) {
        // -- read one value starting at this.pos (c is its first char)
        if (c === 0x7b) {
          this.pos++;
          c = this.skipWs();
          if (c === 0x7d) {
            this.pos++;
            value = {};
          } else {
            keys.push(this.readKey(c));
            stack.push({});
            c = this.skipWs();
            continue;
          }
        } else if (c === 0x5b) {
          this.pos++;
          c = this.skipWs();
          if (c === 0x5d) {
            this.pos++;
            value = [];
          } else {
            keys.push(undefined);
            stack.push([]);
            continue;
          }
        } else if (c === 0x22) value = this.readString();
        else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) value = this.readNumber();
        else if (c === 0x74) value = this.readLiteral('true', true);
        else if (c === 0x66) value = this.readLiteral('false', false);
        else if (c === 0x6e) value = this.readLiteral('null', null);
        else this.unexpected(c);

        // -- store the value in its container; close containers as they end
        for (;;) {
          const depth = stack.length;
          if (depth === 0) {
            c = this.skipWs();
            if (this.pos < this.len) {
              if (isDigit(c)) this.fail('Unexpected number'); // e.g. a leading zero: 01
              throw new SyntaxError(`Unexpected non-whitespace character after JSON at position ${this.pos}`);
            }
            return value;
          }
          const top = stack[depth - 1];
          const key = keys[depth - 1];
          if (key === undefined) (top as unknown[]).push(value);
          else this.setProp(top as Record<string, unknown>, key, value);
          c = this.skipWs();
          if (c === 0x2c) {
            this.pos++;
            c = this.skipWs();
            if (key !== undefined) {
              keys[depth - 1] = this.readKey(c);
              c = this.skipWs();
            }
            break;
          }
          if (c !== (key === undefined ? 0x5d : 0x7d)) {
            if (this.pos >= this.len) this.unexpected(c);
            this.fail(key === undefined ? "Expected ',' or ']' after array element" : "Expected ',' or '}' after property value");
          }
          this.pos++;
          stack.pop();
          keys.pop();
          value = top;
        }
      }
    } finally {
      this.src = '';
    }
  }

  /** Data property like JSON.parse's CreateDataProperty; `__proto__` must not hit the setter. */
  setProp(obj: Record<string, unknown>, key: string, value: unknown): void {
    if (key === '__proto__') {
      Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
    } else obj[key] = value;
  }

  /** Reads `"name"` then `:`; leaves this.pos after the colon. */
  readKey(c: number): string {
    if (c !== 0x22) {
      if (this.pos >= this.len) this.unexpected(c);
      this.fail('Expected double-quoted property name');
    }
    const key = this.readString();
    if (this.skipWs() !== 0x3a) {
      if (this.pos >= this.len) this.unexpected(NaN);
      this.fail("Expected ':' after property name");
    }
    this.pos++;
    return key;
  }

  readString(): string {
    let start = ++this.pos; // past the opening quote
    let out = '';
    for (;;) {
      const c = this.src.charCodeAt(this.pos);
      if (c === 0x22) {
        const s = start === this.pos ? out : out + this.src.slice(start, this.pos);
        this.pos++;
        return s;
      }
      if (c === 0x5c) {
        out += this.src.slice(start, this.pos);
        this.pos++;
        out += this.readEscape();
        start = this.pos;
      } else if (c < 0x20) this.fail('Bad control character in string literal');
      else if (c !== c) this.fail('Unterminated string');
      else this.pos++;
    }
  }

  readEscape(): string {
    const c = this.src.charCodeAt(this.pos++);
    switch (c) {
      case 0x22: return '"';
      case 0x5c: return '\\';
      case 0x2f: return '/';
      case 0x62: return '\b';
      case 0x66: return '\f';
      case 0x6e: return '\n';
      case 0x72: return '\r';
      case 0x74: return '\t';
      case 0x75: {
        let code = 0;
        for (let i = 0; i < 4; i++) {
          const h = this.src.charCodeAt(this.pos);
          let d: number;
          if (h >= 0x30 && h <= 0x39) d = h - 0x30;
          else if (h >= 0x61 && h <= 0x66) d = h - 0x57;
          else if (h >= 0x41 && h <= 0x46) d = h - 0x37;
          else this.fail(h !== h ? 'Unterminated string' : 'Bad Unicode escape');
          code = code * 16 + d;
          this.pos++;
        }
        return String.fromCharCode(code);
      }
      default:
        this.pos--;
        this.fail(c !== c ? 'Unterminated string' : 'Bad escaped character');
    }
  }

  readNumber(): number | bigint {
    const start = this.pos;
    let c = this.src.charCodeAt(this.pos);
    const neg = c === 0x2d;
    if (neg) c = this.src.charCodeAt(++this.pos);
    const digitsStart = this.pos;
    let n = 0;
    if (c === 0x30) c = this.src.charCodeAt(++this.pos);
    else if (c >= 0x31 && c <= 0x39) {
      do {
        n = n * 10 + (c - 0x30);
        c = this.src.charCodeAt(++this.pos);
      } while (c >= 0x30 && c <= 0x39);
    } else this.fail('No number after minus sign');
    const digits = this.pos - digitsStart;
    let integer = true;
    if (c === 0x2e) {
      integer = false;
      if (!isDigit(this.src.charCodeAt(++this.pos))) this.fail('Unterminated fractional number');
      do c = this.src.charCodeAt(++this.pos);
      while (isDigit(c));
    }
    if (c === 0x65 || c === 0x45) {
      integer = false;
      c = this.src.charCodeAt(++this.pos);
      if (c === 0x2b || c === 0x2d) c = this.src.charCodeAt(++this.pos);
      if (!isDigit(c)) this.fail('Exponent part is missing a number');
      do c = this.src.charCodeAt(++this.pos);
      while (isDigit(c));
    }
    // Number() and JSON.parse share the same correctly rounded conversion.
    if (!integer) return Number(this.src.slice(start, this.pos));
    // Up to 15 digits the accumulated n is exact. At 16 digits 10*prefix is exact
    // (an even integer below 2^54) and the final add rounds monotonically, so
    // n <= MAX_SAFE holds exactly when the literal is safe.
    if (digits < 16 || (digits === 16 && n <= MAX_SAFE)) return neg ? -n : n;
    // BigInt(string) measured ~115 ns per 20-digit value; composing from two
    // Number halves (BigInt(hi) * 10n**16n + BigInt(lo)) was 2.3x slower.
    return BigInt(this.src.slice(start, this.pos));
  }

  readLiteral<T>(word: string, value: T): T {
    for (let i = 0; i < word.length; i++, this.pos++) {
      const c = this.src.charCodeAt(this.pos);
      if (c !== word.charCodeAt(i)) this.unexpected(c);
    }
    return value;
  }
}

const parser = new Parser();

/** Parsing is synchronous and runs no user code, so one parser instance cannot be re-entered. */
function preciseParse(text: string): unknown {
  return parser.parse(text);
}

// ---------------------------------------------------------------------------
// stringify

/**
 * Serializes like `JSON.stringify` (same output whenever `value` holds no
 * bigint), except that `bigint` values are written as bare decimal digits,
 * e.g. `18446744073709551615` or `-1`. Supports `toJSON` and an optional
 * `space` (indentation) argument. Boxed primitives (`new Number(1)`) are only
 * unwrapped when the value holds no bigint.
 *
 * @param value Value to serialize.
 * @param space Indentation, as for JSON.stringify.
 * @returns JSON text.
 * @throws {TypeError} On circular structures, or when `value` itself is not
 *   serializable (undefined, a function, a symbol), where JSON.stringify would
 *   return undefined.
 */
export function stringifyJson(value: unknown, space?: string | number): string {
  let out: string | undefined;
  // A failed native attempt costs ~5-8 us, nearly all of it building the
  // TypeError, which made a 250-byte response with a u64 id 5x slower than
  // native (111k vs 597k ops/s). A bounded probe finds bigints in small or
  // bigint-led values up front for well under 1 us.
  if (probeBigint(value) === FOUND) out = write(value, '', gapOf(space), '', []);
  else {
    try {
      // No replacer: native speed (and byte-identical output) for bigint-free values.
      out = JSON.stringify(value, null, space);
    } catch (err) {
      // "Do not know how to serialize a BigInt" (a cycle is rethrown by write).
      if (!(err instanceof TypeError)) throw err;
      out = write(value, '', gapOf(space), '', []);
    }
  }
  // Hand-written serializer (write) rather than JSON.stringify with a
  // bigint->placeholder replacer plus a regex replace: 10,000 u64 hashes took
  // ~0.8-1.3 ms versus ~7.5-10 ms (native on the lossy doubles: ~2 ms); a small
  // response 4.3 us versus 25-42 us.
  if (out === undefined) throw new TypeError(`Value of type ${typeof value} is not JSON-serializable`);
  return out;
}

const FOUND = 1;
const NONE = 0;
const GAVE_UP = -1;
const PROBE_BUDGET = 64;

/** Looks for a bigint among the first PROBE_BUDGET values (FOUND, NONE or GAVE_UP). */
function probeBigint(root: unknown): number {
  if (typeof root === 'bigint') return FOUND;
  if (typeof root !== 'object' || root === null) return NONE;
  let budget = PROBE_BUDGET;
  const stack: object[] = [root];
  while (stack.length > 0) {
    const node = stack.pop() as Record<string, unknown> | unknown[];
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const x = node[i];
        if (typeof x === 'bigint') return FOUND;
        if (typeof x === 'object' && x !== null) stack.push(x);
        if (--budget === 0) return GAVE_UP;
      }
    } else {
      for (const k in node) {
        const x = node[k];
        if (typeof x === 'bigint') return FOUND;
        if (typeof x === 'object' && x !== null) stack.push(x);
        if (--budget === 0) return GAVE_UP;
      }
    }
  }
  return NONE;
}

function gapOf(space: string | number | undefined): string {
  if (typeof space === 'number') return ' '.repeat(Math.max(0, Math.min(10, Math.floor(space))));
  if (typeof space === 'string') return space.slice(0, 10);
  return '';
}

// Response keys repeat endlessly; a bounded cache of quoted keys beat calling
// JSON.stringify(key) each time (350-byte u64 response: ~2.4 vs ~3.8-7 us).
const keyCache = new Map<string, string>();

function quoteKey(k: string): string {
  let q = keyCache.get(k);
  if (q === undefined) {
    q = JSON.stringify(k);
    if (keyCache.size < 1024 && k.length <= 64) keyCache.set(k, q);
  }
  return q;
}

/** Returns undefined for values JSON.stringify omits (undefined, functions, symbols). */
function write(v: unknown, key: string | number, gap: string, indent: string, seen: object[]): string | undefined {
  if (typeof v === 'object' && v !== null && typeof (v as { toJSON?: unknown }).toJSON === 'function') {
    v = (v as { toJSON(k: string): unknown }).toJSON(String(key)); // array index as string only when needed
  }
  switch (typeof v) {
    case 'string':
      return JSON.stringify(v); // native quoting/escaping
    case 'number':
      return Number.isFinite(v) ? '' + v : 'null';
    case 'bigint':
      return '' + v;
    case 'boolean':
      return v ? 'true' : 'false';
    case 'object': {
      if (v === null) return 'null';
      if (seen.includes(v)) throw new TypeError('Converting circular structure to JSON');
      seen.push(v);
      const inner = indent + gap;
      const sep = gap ? ',\n' + inner : ',';
      let s: string;
      if (Array.isArray(v)) {
        if (v.length === 0) s = '[]';
        else {
          s = gap ? '[\n' + inner : '[';
          for (let i = 0; i < v.length; i++) {
            if (i > 0) s += sep;
            s += write(v[i], i, gap, inner, seen) ?? 'null';
          }
          s += gap ? '\n' + indent + ']' : ']';
        }
      } else {
        const obj = v as Record<string, unknown>;
        s = '';
        for (const k of Object.keys(obj)) {
          const x = write(obj[k], k, gap, inner, seen);
          if (x === undefined) continue;
          s += (s ? sep : '') + quoteKey(k) + (gap ? ': ' : ':') + x;
        }
        s = s ? (gap ? '{\n' + inner + s + '\n' + indent + '}' : '{' + s + '}') : '{}';
      }
      seen.pop();
      return s;
    }
    default:
      return undefined;
  }
}

// ---------------------------------------------------------------------------
// schema helpers

/**
 * Accepts a non-negative safe-integer `number` or a `bigint` in [0, 2^64-1].
 *
 * @param v Candidate value (typically straight from `parseJson`).
 * @returns The value as a bigint, or undefined if it is not a u64.
 */
export function toU64(v: unknown): bigint | undefined {
  if (typeof v === 'number') return Number.isSafeInteger(v) && v >= 0 ? BigInt(v) : undefined;
  if (typeof v === 'bigint') return v >= 0n && v <= U64_MAX ? v : undefined;
  return undefined;
}

/**
 * Accepts an integer (`number` or `bigint`) in [-2^63, 2^64-1]; negative values
 * are bit-cast to u64 (`-1` becomes 18446744073709551615n).
 *
 * @param v Candidate value (typically straight from `parseJson`).
 * @returns The u64 bit pattern, or undefined if out of range or not an integer.
 */
export function toI64AsU64(v: unknown): bigint | undefined {
  let b: bigint;
  // Any integral double is accepted at its exact value (parseJson only yields
  // unsafe integral doubles for literals such as 1e18, never for digit runs).
  if (typeof v === 'number') {
    if (!Number.isInteger(v)) return undefined;
    b = BigInt(v);
  } else if (typeof v === 'bigint') b = v;
  else return undefined;
  return b >= I64_MIN && b <= U64_MAX ? BigInt.asUintN(64, b) : undefined;
}

/**
 * Reinterprets a u64 bit pattern as i64 (`BigInt.asIntN(64, v)`); responses
 * write sequence hashes as i64.
 *
 * @param v u64 value.
 * @returns The signed 64-bit value.
 */
export function u64ToI64(v: bigint): bigint {
  return BigInt.asIntN(64, v);
}

/**
 * Picks the JSON representation of a u64: a `number` when `v <= 2^53-1` (so
 * small values serialize identically either way and stay on the native
 * stringify path), otherwise the bigint.
 *
 * @param v u64 value.
 * @returns `number` if exactly representable as a safe integer, else `v`.
 */
export function jsonU64(v: bigint): number | bigint {
  return v <= MAX_SAFE_BIG && v >= -MAX_SAFE_BIG ? Number(v) : v;
}
