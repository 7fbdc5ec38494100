/**
 * A minimal msgpack cursor for the KV-event decoder (`decode.ts`).
 *
 * Why not msgpackr for everything: msgpackr turns every `cf` uint64 block hash into a BigInt
 * and builds a JS object per event before we can look at it. The decoder instead walks the
 * bytes once and writes hashes/tokens straight into typed arrays; this cursor supplies the
 * structural pieces (headers, strings, skipping, generic decode of cold values) with every
 * length checked against the bytes that remain, so hostile input fails fast instead of
 * allocating (an array header claiming 2^32 elements over a 100-byte payload throws at once).
 *
 * Only the msgpack spec subset engines can produce is interpreted; ext values are skipped
 * structurally and rejected by {@link MsgpackCursor.readValue}.
 */

/** Why a batch could not be decoded. The caller counts it and drops the whole batch. */
export class KvDecodeError extends Error {
  /** Machine-readable reason: `truncated`, `invalid_byte`, `bad_length`, `bad_batch`, `trailing_bytes`, `internal`. */
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'KvDecodeError';
    this.code = code;
  }
}

/**
 * Thrown (never escapes `decode.ts`) when one event has the wrong shape: the decoder rewinds to
 * the event start, skips it structurally and counts it as dropped. A preallocated non-Error
 * object, so throwing it captures no stack trace.
 */
export const DROP_EVENT: { readonly drop: true } = Object.freeze({ drop: true });

const utf8 = new TextDecoder('utf-8');
const enc = new TextEncoder();

export type KeyTable = { lit: Uint8Array; id: number }[][];
/** Builds a key table for {@link MsgpackCursor.key}: literals bucketed by UTF-8 length. */
export function keyTable(keys: [string, number][]): KeyTable {
  const t: KeyTable = [];
  for (const [s, id] of keys) { const lit = enc.encode(s); (t[lit.length] ??= []).push({ lit, id }); }
  return t;
}


/**
 * extra_keys of n nils (vLLM sends one nil per block without keys), shared and frozen: one array
 * per event was a fourteenth of the event path's allocations. Up to {@link SHARED_NULLS_MAX} entries.
 */
const SHARED_NULLS_MAX = 4096;
const sharedNulls: (readonly null[])[] = [];
function allNulls(n: number): null[] {
  if (n > SHARED_NULLS_MAX) return new Array<null>(n).fill(null);
  return (sharedNulls[n] ??= Object.freeze(new Array<null>(n).fill(null))) as null[];
}

/** Nesting limit for {@link MsgpackCursor.readValue} (cold extra_keys data is 2–3 levels deep). */
const MAX_VALUE_DEPTH = 32;

/** Cursor over one payload. `buf`/`pos` are public so hot loops in decode.ts can inline reads. */
export class MsgpackCursor {
  buf: Uint8Array = new Uint8Array(0);
  pos = 0;
  end = 0;
  private view: DataView = new DataView(new ArrayBuffer(0));

  /** Point the cursor at a new payload (no copy). */
  reset(buf: Uint8Array): void {
    this.buf = buf;
    this.pos = 0;
    this.end = buf.length;
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  }

  /** Throws `truncated` unless `n` more bytes exist. */
  need(n: number): void {
    if (this.pos + n > this.end) throw new KvDecodeError('truncated', `need ${n} bytes at ${this.pos}, have ${this.end - this.pos}`);
  }

  /** Big-endian u32 at `p` (caller checked bounds). */
  u32(p: number): number {
    const b = this.buf;
    return ((b[p] << 24) | (b[p + 1] << 16) | (b[p + 2] << 8) | b[p + 3]) >>> 0;
  }

  /** Next type byte without consuming it (throws at end of input). */
  peek(): number {
    if (this.pos >= this.end) throw new KvDecodeError('truncated', 'unexpected end of payload');
    return this.buf[this.pos];
  }

  /** Consumes a nil if one is next. */
  nil(): boolean {
    if (this.peek() === 0xc0) { this.pos++; return true; }
    return false;
  }

  /**
   * Reads an array header; returns its element count, or -1 (nothing consumed) when the next
   * value is not an array. Each element takes at least one byte, so a count larger than the
   * remaining bytes is rejected here.
   */
  arrayHeader(): number {
    const t = this.peek();
    let n: number;
    if (t >= 0x90 && t <= 0x9f) { n = t & 0x0f; this.pos += 1; }
    else if (t === 0xdc) { this.need(3); n = (this.buf[this.pos + 1] << 8) | this.buf[this.pos + 2]; this.pos += 3; }
    else if (t === 0xdd) { this.need(5); n = this.u32(this.pos + 1); this.pos += 5; }
    else return -1;
    if (n > this.end - this.pos) throw new KvDecodeError('bad_length', `array of ${n} over ${this.end - this.pos} bytes`);
    return n;
  }

  /** Like {@link arrayHeader} for maps (a pair takes at least two bytes). */
  mapHeader(): number {
    const t = this.peek();
    let n: number;
    if (t >= 0x80 && t <= 0x8f) { n = t & 0x0f; this.pos += 1; }
    else if (t === 0xde) { this.need(3); n = (this.buf[this.pos + 1] << 8) | this.buf[this.pos + 2]; this.pos += 3; }
    else if (t === 0xdf) { this.need(5); n = this.u32(this.pos + 1); this.pos += 5; }
    else return -1;
    if (n * 2 > this.end - this.pos) throw new KvDecodeError('bad_length', `map of ${n} over ${this.end - this.pos} bytes`);
    return n;
  }

  /** Reads a str header; returns the byte length (bytes follow at `pos`), or -1 if not a str. */
  strHeader(): number {
    const t = this.peek();
    let n: number;
    if (t >= 0xa0 && t <= 0xbf) { n = t & 0x1f; this.pos += 1; }
    else if (t === 0xd9) { this.need(2); n = this.buf[this.pos + 1]; this.pos += 2; }
    else if (t === 0xda) { this.need(3); n = (this.buf[this.pos + 1] << 8) | this.buf[this.pos + 2]; this.pos += 3; }
    else if (t === 0xdb) { this.need(5); n = this.u32(this.pos + 1); this.pos += 5; }
    else return -1;
    this.need(n);
    return n;
  }

  /** Reads a bin header; returns the byte length (bytes follow at `pos`), or -1 if not bin. */
  binHeader(): number {
    const t = this.peek();
    let n: number;
    if (t === 0xc4) { this.need(2); n = this.buf[this.pos + 1]; this.pos += 2; }
    else if (t === 0xc5) { this.need(3); n = (this.buf[this.pos + 1] << 8) | this.buf[this.pos + 2]; this.pos += 3; }
    else if (t === 0xc6) { this.need(5); n = this.u32(this.pos + 1); this.pos += 5; }
    else return -1;
    this.need(n);
    return n;
  }

  /** Decodes `n` string bytes at `pos` and consumes them (short ASCII avoids TextDecoder). */
  strBody(n: number): string {
    const b = this.buf;
    const p = this.pos;
    this.pos = p + n;
    if (n <= 24) {
      let s = '';
      for (let i = p; i < p + n; i++) {
        const c = b[i];
        if (c >= 0x80) return utf8.decode(b.subarray(p, p + n));
        s += String.fromCharCode(c);
      }
      return s;
    }
    return utf8.decode(b.subarray(p, p + n));
  }

  /** Reads a str value, or returns undefined (nothing consumed) if the next value is not a str. */
  str(): string | undefined {
    const n = this.strHeader();
    return n < 0 ? undefined : this.strBody(n);
  }

  /** True (and consumes the bytes) if the next value is a str equal to the ASCII bytes `lit`. */
  strEquals(lit: Uint8Array): boolean {
    const save = this.pos;
    const n = this.strHeader();
    if (n !== lit.length) { this.pos = save; return false; }
    const b = this.buf;
    const p = this.pos;
    for (let i = 0; i < n; i++) if (b[p + i] !== lit[i]) { this.pos = save; return false; }
    this.pos = p + n;
    return true;
  }

  /**
   * Reads a non-negative integer <= 2^32-1 (any int encoding); returns -1 (value consumed when it
   * was an int) for anything else. Used for block_size, group_idx, ranks and token ids.
   */
  u32Value(): number {
    const b = this.buf;
    const t = this.peek();
    const p = this.pos;
    if (t <= 0x7f) { this.pos = p + 1; return t; }
    switch (t) {
      case 0xcc: this.need(2); this.pos = p + 2; return b[p + 1];
      case 0xcd: this.need(3); this.pos = p + 3; return (b[p + 1] << 8) | b[p + 2];
      case 0xce: this.need(5); this.pos = p + 5; return this.u32(p + 1);
      case 0xcf: this.need(9); this.pos = p + 9; return this.u32(p + 1) === 0 ? this.u32(p + 5) : -1;
      case 0xd0: this.need(2); this.pos = p + 2; return (b[p + 1] << 24) >> 24 < 0 ? -1 : b[p + 1];
      case 0xd1: { this.need(3); this.pos = p + 3; const v = ((b[p + 1] << 24) >> 16) | b[p + 2]; return v < 0 ? -1 : v; }
      case 0xd2: { this.need(5); this.pos = p + 5; const v = this.u32(p + 1); return v > 0x7fffffff ? -1 : v; }
      case 0xd3: this.need(9); this.pos = p + 9; return this.u32(p + 1) === 0 ? this.u32(p + 5) : -1;
      default: return -1;
    }
  }

  /** Reads any int or float as a JS number (ints beyond 2^53 lose precision); NaN, nothing consumed, otherwise. */
  number(): number {
    const t = this.peek();
    const p = this.pos;
    if (t === 0xcb) { this.need(9); this.pos = p + 9; return this.view.getFloat64(p + 1); }
    if (t === 0xca) { this.need(5); this.pos = p + 5; return this.view.getFloat32(p + 1); }
    if (t <= 0x7f || t >= 0xe0 || (t >= 0xcc && t <= 0xd3)) {
      const v = this.readValue(0);
      return typeof v === 'bigint' ? Number(v) : (v as number);
    }
    return NaN;
  }

  /**
   * Skips `count` complete values without recursion: `pending` counts values still to skip,
   * containers add their children. Every pending value needs >= 1 byte, so `pending` is bounded
   * by the remaining payload and deep nesting cannot blow the stack.
   */
  skip(count: number): void {
    const b = this.buf;
    let pending = count;
    while (pending > 0) {
      if (pending > this.end - this.pos) throw new KvDecodeError('bad_length', `${pending} values over ${this.end - this.pos} bytes`);
      pending--;
      const t = b[this.pos];
      if (t <= 0x7f || t >= 0xe0 || t === 0xc0 || t === 0xc2 || t === 0xc3) { this.pos++; continue; }
      if (t >= 0x80 && t <= 0x8f) { pending += (t & 0x0f) * 2; this.pos++; continue; }
      if (t >= 0x90 && t <= 0x9f) { pending += t & 0x0f; this.pos++; continue; }
      let n = -1;
      switch (t) {
        case 0xdc: case 0xdd: pending += this.arrayHeader(); continue;
        case 0xde: case 0xdf: pending += 2 * this.mapHeader(); continue;
        case 0xcc: case 0xd0: n = 2; break;
        case 0xcd: case 0xd1: n = 3; break;
        case 0xce: case 0xd2: case 0xca: n = 5; break;
        case 0xcf: case 0xd3: case 0xcb: n = 9; break;
        case 0xd4: n = 3; break; case 0xd5: n = 4; break; case 0xd6: n = 6; break;
        case 0xd7: n = 10; break; case 0xd8: n = 18; break;
        case 0xc7: this.need(3); n = 3 + b[this.pos + 1]; break;
        case 0xc8: this.need(4); n = 4 + ((b[this.pos + 1] << 8) | b[this.pos + 2]); break;
        case 0xc9: this.need(6); n = 6 + this.u32(this.pos + 1); break;
        default:
          // (header first: `this.pos += this.strHeader()` would read pos before the header moved it)
          if ((t >= 0xa0 && t <= 0xbf) || (t >= 0xd9 && t <= 0xdb)) { const len = this.strHeader(); this.pos += len; continue; }
          if (t >= 0xc4 && t <= 0xc6) { const len = this.binHeader(); this.pos += len; continue; }
          throw new KvDecodeError('invalid_byte', `invalid msgpack type byte 0xc1 at ${this.pos}`);
      }
      this.need(n);
      this.pos += n;
    }
  }

  /**
   * Reads one hash at `r.pos` into dst[o] (lo), dst[o+1] (hi). uint any width; negative ints
   * bit-cast to u64 (two's complement); bin: last 8 bytes big-endian (vLLM's
   * `int.from_bytes(d, "big") & (2**64-1)`), shorter bins: big-endian value of all bytes.
   */
  hash(dst: Uint32Array, o: number): void {
    const r = this, b = r.buf;
    const t = r.peek(), p = r.pos;
    let lo: number, hi = 0, len = 1;
    if (t <= 0x7f) lo = t;
    else if (t >= 0xe0) { lo = (t - 256) >>> 0; hi = 0xffffffff; }
    else switch (t) {
      case 0xcc: len = 2; r.need(2); lo = b[p + 1]; break;
      case 0xcd: len = 3; r.need(3); lo = (b[p + 1] << 8) | b[p + 2]; break;
      case 0xce: len = 5; r.need(5); lo = r.u32(p + 1); break;
      case 0xcf: case 0xd3: len = 9; r.need(9); hi = r.u32(p + 1); lo = r.u32(p + 5); break;
      case 0xd0: len = 2; r.need(2); lo = ((b[p + 1] << 24) >> 24) >>> 0; hi = b[p + 1] & 0x80 ? 0xffffffff : 0; break;
      case 0xd1: len = 3; r.need(3); lo = (((b[p + 1] << 24) >> 16) | b[p + 2]) >>> 0; hi = b[p + 1] & 0x80 ? 0xffffffff : 0; break;
      case 0xd2: len = 5; r.need(5); lo = r.u32(p + 1); hi = b[p + 1] & 0x80 ? 0xffffffff : 0; break;
      default: {
        const n = r.binHeader();
        if (n < 0) throw DROP_EVENT;
        const q = r.pos;
        lo = 0;
        if (n >= 8) { hi = r.u32(q + n - 8); lo = r.u32(q + n - 4); }
        else for (let i = 0; i < n; i++) { hi = ((hi << 8) | (lo >>> 24)) >>> 0; lo = ((lo << 8) | b[q + i]) >>> 0; }
        dst[o] = lo; dst[o + 1] = hi;
        r.pos = q + n;
        return;
      }
    }
    dst[o] = lo; dst[o + 1] = hi;
    r.pos = p + len;
  }

  /** Optional uint (group_idx): value, null for nil; `strict` -> DROP on other types, else null. */
  optU32(strict: boolean): number | null {
    const r = this;
    if (r.nil()) return null;
    const save = r.pos;
    const v = r.u32Value();
    if (v >= 0) return v;
    if (strict) throw DROP_EVENT;
    r.pos = save; r.skip(1);
    return null;
  }

  /** Optional string: value, null for nil; `strict` -> DROP on other types, else skipped -> null. */
  optStr(strict: boolean): string | null {
    const r = this;
    if (r.nil()) return null;
    const s = r.str();
    if (s !== undefined) return s;
    if (strict) throw DROP_EVENT;
    r.skip(1);
    return null;
  }

  /** Reads a map key against `table`; returns its id or -1 (key consumed either way). */
  key(table: KeyTable): number {
    const r = this;
    const n = r.strHeader();
    if (n < 0) { r.skip(1); return -1; }
    const b = r.buf, p = r.pos;
    r.pos = p + n;
    const bucket = table[n];
    if (bucket) {
      outer: for (const { lit, id } of bucket) {
        for (let i = 0; i < n; i++) if (b[p + i] !== lit[i]) continue outer;
        return id;
      }
    }
    return -1;
  }

  /** extra_keys: nil, or an array whose entries are nil or arrays (anything else drops the event). */
  extraKeys(): (unknown[] | null)[] | null {
    const r = this;
    if (r.nil()) return null;
    const n = r.arrayHeader();
    if (n < 0) throw DROP_EVENT;
    let i = 0;
    while (i < n && r.nil()) i++; // the common case: no per-block keys, no decode
    if (i === n) return allNulls(n);
    const out: (unknown[] | null)[] = new Array(n).fill(null);
    for (; i < n; i++) {
      if (r.nil()) continue;
      const v = r.readValue(0);
      if (!Array.isArray(v)) throw DROP_EVENT;
      out[i] = v;
    }
    return out;
  }

  /**
   * Generic decode of one value, for cold data (extra_keys content, metadata maps): nil -> null,
   * ints -> number (BigInt beyond 2^53), str -> string, bin -> Uint8Array copy, arrays, maps ->
   * plain objects (keys via String(), defined as own properties so `__proto__` stays inert).
   * Ext values and nesting beyond 32 levels are not event data: they throw {@link DROP_EVENT}.
   */
  readValue(depth: number): unknown {
    if (depth > MAX_VALUE_DEPTH) throw DROP_EVENT;
    const b = this.buf;
    const t = this.peek();
    const p = this.pos;
    if (t <= 0x7f) { this.pos++; return t; }
    if (t >= 0xe0) { this.pos++; return t - 256; }
    let n = this.arrayHeader();
    if (n >= 0) {
      const out: unknown[] = new Array(n);
      for (let i = 0; i < n; i++) out[i] = this.readValue(depth + 1);
      return out;
    }
    n = this.mapHeader();
    if (n >= 0) {
      const out: Record<string, unknown> = {};
      for (let i = 0; i < n; i++) {
        const k = String(this.readValue(depth + 1));
        Object.defineProperty(out, k, { value: this.readValue(depth + 1), enumerable: true, writable: true, configurable: true });
      }
      return out;
    }
    n = this.strHeader();
    if (n >= 0) return this.strBody(n);
    n = this.binHeader();
    if (n >= 0) { this.pos += n; return b.slice(this.pos - n, this.pos); }
    const v = this.view;
    switch (t) {
      case 0xc0: this.pos++; return null;
      case 0xc2: this.pos++; return false;
      case 0xc3: this.pos++; return true;
      case 0xcc: this.need(2); this.pos += 2; return b[p + 1];
      case 0xcd: this.need(3); this.pos += 3; return v.getUint16(p + 1);
      case 0xce: this.need(5); this.pos += 5; return v.getUint32(p + 1);
      case 0xd0: this.need(2); this.pos += 2; return v.getInt8(p + 1);
      case 0xd1: this.need(3); this.pos += 3; return v.getInt16(p + 1);
      case 0xd2: this.need(5); this.pos += 5; return v.getInt32(p + 1);
      case 0xca: this.need(5); this.pos += 5; return v.getFloat32(p + 1);
      case 0xcb: this.need(9); this.pos += 9; return v.getFloat64(p + 1);
      case 0xcf: case 0xd3: {
        this.need(9); this.pos += 9;
        const big = t === 0xcf ? v.getBigUint64(p + 1) : v.getBigInt64(p + 1);
        return big <= BigInt(Number.MAX_SAFE_INTEGER) && big >= -BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big;
      }
      case 0xc1: throw new KvDecodeError('invalid_byte', `invalid msgpack type byte 0xc1 at ${p}`);
      default: this.skip(1); throw DROP_EVENT; // ext types: structurally valid, not event data
    }
  }
}
