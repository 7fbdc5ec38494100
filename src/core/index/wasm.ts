/**
 * The WebAssembly boundary: the only file that touches `WebAssembly` or `memory.buffer`.
 *
 * It instantiates the embedded module once, types its exports, and owns every typed-array view
 * over linear memory. Views detach when memory grows, so each accessor checks
 * `memory.buffer !== this.buffer` and rebuilds (the undici habit). Hashes cross the boundary as
 * raw u64 in these views: hot callers write and read `BigUint64Array`/`Uint32Array` elements,
 * never a JS number, and create no BigInt per hash (use the `u32` pair view for lo/hi words).
 *
 * Why not @assemblyscript/loader: our exports take and return only numbers, so its array and
 * string lifting is unused, and its `demangle` wraps every export in a rest-args function that
 * calls `__setArgumentsLength` first — measured 14.7 ns per call on `treeSize` (a near-empty
 * export), paid several times per request. We instantiate directly and provide the one import
 * AssemblyScript needs, `env.abort`, which turns an assertion into a readable JS error.
 */
import { wasmBase64 } from '../../generated/wasm-bytes.js';

/** Raw exports of build/wasm/select.wasm (see assembly/index.ts). */
export interface WasmExports {
  memory: WebAssembly.Memory;
  [name: string]: unknown;
}

type Fn = (...args: number[]) => number;

function decodeBase64(b64: string): Uint8Array {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function constant(exports: WasmExports, name: string): number {
  const g = exports[name] as WebAssembly.Global | number | undefined;
  if (g === undefined) throw new Error(`wasm export ${name} is missing`);
  return typeof g === 'number' ? g : Number(g.value);
}

/** Region ids and parameter slots, read from the module (declared once in assembly/layout.ts). */
export interface Layout {
  R_PARAMS: number; R_HASH_A: number; R_HASH_B: number; R_HASH_C: number; R_TOKENS: number;
  R_MM_COUNTS: number; R_MM_HASHES: number; R_BYTES: number; R_OUT_SLOT: number; R_OUT_DEV: number;
  R_OUT_HOST: number; R_OUT_DISK: number; R_OUT_EXTN: number; R_OUT_F64A: number; R_OUT_F64B: number;
  R_OUT_U32A: number; R_OUT_U32B: number; R_DUMP_U64: number; R_TMP: number;
  P_SEED: number; P_CHAIN_SEED: number; P_RESULT: number; P_PARENT: number; P_AUX: number;
}
const LAYOUT_NAMES: (keyof Layout)[] = [
  'R_PARAMS', 'R_HASH_A', 'R_HASH_B', 'R_HASH_C', 'R_TOKENS', 'R_MM_COUNTS', 'R_MM_HASHES', 'R_BYTES',
  'R_OUT_SLOT', 'R_OUT_DEV', 'R_OUT_HOST', 'R_OUT_DISK', 'R_OUT_EXTN', 'R_OUT_F64A', 'R_OUT_F64B',
  'R_OUT_U32A', 'R_OUT_U32B', 'R_DUMP_U64', 'R_TMP',
  'P_SEED', 'P_CHAIN_SEED', 'P_RESULT', 'P_PARENT', 'P_AUX',
];

/**
 * One instantiated module plus cached views over its memory. Everything else in the codebase
 * reaches wasm through an instance of this class (`getWasm()`).
 */
export class Wasm {
  readonly exports: WasmExports;
  readonly layout: Layout;
  private buffer: ArrayBuffer | null = null;
  private ptrs: number[] = [];
  /** Lower bounds of the scratch regions' capacities (see `reserve`). */
  private readonly caps = new Float64Array(32);
  private readonly cache = new Map<string, ArrayBufferView>();

  constructor(module?: WebAssembly.Module | Uint8Array) {
    const src = module ?? decodeBase64(wasmBase64);
    const mod = src instanceof WebAssembly.Module ? src : new WebAssembly.Module(src as BufferSource);
    let memory: WebAssembly.Memory | null = null;
    const readString = (ptr: number): string => {
      if (!memory || !ptr) return '';
      const len = new Uint32Array(memory.buffer)[(ptr - 4) >>> 2] >>> 1;
      return String.fromCharCode(...new Uint16Array(memory.buffer, ptr, len));
    };
    const inst = new WebAssembly.Instance(mod, {
      env: {
        abort(msg: number, file: number, line: number, col: number): never {
          throw new Error(`wasm abort: ${readString(msg)} at ${readString(file)}:${line}:${col}`);
        },
      },
    });
    this.exports = inst.exports as unknown as WasmExports;
    memory = this.exports.memory;
    const l: Partial<Layout> = {};
    for (const n of LAYOUT_NAMES) l[n] = constant(this.exports, n);
    this.layout = Object.freeze(l as Layout);
    // Set up the scratch regions now: doing it lazily inside the first view access would grow
    // memory (and detach the buffer) between reading memory.buffer and building the view.
    this.fn('scratchCap')(0);
  }

  /** A typed export function. */
  fn(name: string): Fn {
    const f = this.exports[name];
    if (typeof f !== 'function') throw new Error(`wasm export ${name} is missing`);
    return f as Fn;
  }

  /** Current byte length of linear memory (tests assert it stays flat on hot paths). */
  memoryBytes(): number { return this.exports.memory.buffer.byteLength; }

  private refresh(): void {
    const buf = this.exports.memory.buffer as ArrayBuffer;
    if (buf === this.buffer) return;
    this.buffer = buf;
    this.cache.clear();
    const ptr = this.fn('scratchPtr');
    this.ptrs = [];
    for (let r = 0; r < 32; r++) this.ptrs.push(r <= this.layout.R_HASH_C ? ptr(r) >>> 0 : 0);
  }

  /** Drop cached region pointers (after a reserve moved a region). */
  private invalidate(): void { this.buffer = null; }

  /**
   * Ensure region r holds `bytes` bytes (may grow memory and move the region). Regions only
   * ever grow, so a capacity once seen stays a lower bound: the common call (every event, every
   * selection) returns here without a wasm call.
   */
  reserve(r: number, bytes: number): void {
    if (this.caps[r] >= bytes) return;
    if (this.capacity(r) >= bytes) return;
    this.fn('scratchReserve')(r, bytes);
    this.invalidate();
    this.capacity(r);
  }

  /** Capacity of region r in bytes (also refreshes the lower bound `reserve` uses). */
  capacity(r: number): number {
    const cap = this.fn('scratchCap')(r) >>> 0;
    this.caps[r] = cap;
    return cap;
  }

  private view<T extends ArrayBufferView>(kind: string, r: number, make: (b: ArrayBuffer, p: number, n: number) => T, size: number): T {
    this.refresh();
    const key = kind + r;
    let v = this.cache.get(key) as T | undefined;
    if (v === undefined) {
      const cap = this.capacity(r);
      v = make(this.buffer as ArrayBuffer, this.ptrs[r], Math.floor(cap / size));
      this.cache.set(key, v);
    }
    return v;
  }

  /** u64 view of region r (whole capacity). */
  u64(r: number): BigUint64Array { return this.view('q', r, (b, p, n) => new BigUint64Array(b, p, n), 8); }
  /** u32 view of region r; for u64 regions, element 2i is the low word of value i. */
  u32(r: number): Uint32Array { return this.view('u', r, (b, p, n) => new Uint32Array(b, p, n), 4); }
  /** f64 view of region r. */
  f64(r: number): Float64Array { return this.view('d', r, (b, p, n) => new Float64Array(b, p, n), 8); }
  /** byte view of region r. */
  u8(r: number): Uint8Array { return this.view('b', r, (b, p, n) => new Uint8Array(b, p, n), 1); }

  /** Set a u64 parameter cell (cold edge: one BigInt per call, not per hash). */
  setParam(slot: number, v: bigint): void { this.u64(this.layout.R_PARAMS)[slot] = BigInt.asUintN(64, v); }
  /** Read a u64 parameter cell. */
  param(slot: number): bigint { return this.u64(this.layout.R_PARAMS)[slot]; }
}

let shared: Wasm | null = null;

/** The process-wide (or page-wide) module instance, created on first use. */
export function getWasm(): Wasm {
  if (shared === null) shared = new Wasm();
  return shared;
}
