/**
 * The WebAssembly boundary: the only file that touches `WebAssembly` or `memory.buffer`, and the
 * only one that names a scratch region or parameter cell (assembly/layout.ts).
 *
 * It instantiates the module once (the embedded build, or the compiled `select-service.wasm` a
 * host handed over with `useWasmModule`, for runtimes that refuse to compile bytes), types its
 * exports (`WasmExports`: every export with its signature), and owns every typed-array view over
 * linear memory. Views detach when memory
 * grows, so each accessor checks `memory.buffer !== this.buffer` and rebuilds (the undici habit).
 * Callers never compute an offset: they fill scratch through the typed writers below
 * (`writeLocals`, `writeExtWords`, `writeTokens`, `setSeedWords`, ...) and read results through
 * the named readers (`locals`, `rowSlots`, ...). Hashes cross the boundary as raw u64: hot
 * callers copy `BigUint64Array` / (lo, hi) `Uint32Array` ranges, never a JS number, and create
 * no BigInt per hash.
 *
 * Why not @assemblyscript/loader: our exports take and return only numbers, so its array and
 * string lifting is unused, and its `demangle` wraps every export in a rest-args function that
 * calls `__setArgumentsLength` first — measured 14.7 ns per call on `treeSize` (a near-empty
 * export), paid several times per request. We instantiate directly and provide the one import
 * AssemblyScript needs, `env.abort`, which turns an assertion into a readable JS error.
 */
import { describeInterface, embeddedBytes, interfaceDiff, withSharedMemory } from './wasm-source.js';

/** Every export of build/wasm/select.wasm (assembly/index.ts). Booleans cross as 0 / 1. */
export interface WasmExports {
  readonly memory: WebAssembly.Memory;
  // --- scratch regions (assembly/exports-scratch.ts) ---
  /** Byte pointer of a region. */
  scratchPtr(region: number): number;
  /** Capacity of a region in bytes. */
  scratchCap(region: number): number;
  /** Grow a region to hold `bytes` (contents not kept); returns its new pointer. */
  scratchReserve(region: number, bytes: number): number;
  // --- hashing (assembly/hashing.ts) ---
  /** P_RESULT = xxh3(R_BYTES[0..len), P_SEED). */
  xxh3Bytes(len: number): void;
  /** Public block seed of R_BYTES = lora ++ namespace into P_SEED and P_RESULT. */
  saltSeed(loraLen: number, nsLen: number): void;
  /** Local block hashes of R_TOKENS into R_HASH_A; the block count or -1 (region too small). */
  hashBlocks(nTokens: number, blockSize: number, eagle: number, withMm: number): number;
  /** Sequence hashes of R_HASH_A[0..n) into R_HASH_B (seed P_CHAIN_SEED). */
  chainHashes(n: number): void;
  // --- prefix index (assembly/exports-index.ts) ---
  /** A new index handle, or -1. */
  indexNew(): number;
  indexFree(handle: number): void;
  /** Make slots [0, n) usable; returns the slot capacity (or a status < 0). */
  indexSlots(handle: number, n: number): number;
  /** Stored: R_HASH_B engine hashes, R_HASH_A local hashes, parent P_PARENT; applied or status < 0. */
  storeBlocks(handle: number, slot: number, tier: number, hasParent: number, n: number): number;
  /** Stored with token ids: hashes R_TOKENS (seed P_SEED, mm data) then stores; applied or status < 0. */
  storeTokens(handle: number, slot: number, tier: number, hasParent: number, nExt: number,
    nTokens: number, blockSize: number, eagle: number, withMm: number): number;
  /** Removed: R_HASH_B engine hashes; how many the slot held, or status < 0. */
  removeBlocks(handle: number, slot: number, tier: number, n: number): number;
  /** Cleared: every block of the slot on `tier` (-1: all tiers). */
  clearSlot(handle: number, slot: number, tier: number): number;
  /** Match R_HASH_A[0..n); rows into R_OUT_SLOT/DEV/HOST/DISK/EXTN; the row count. */
  matchQuery(handle: number, n: number): number;
  /** Engine hashes `slot` holds along the device path of R_HASH_A[0..n) into R_HASH_B; the depth. */
  chainExts(handle: number, n: number, slot: number): number;
  /** Cache credit of the first `rows` match rows into R_OUT_F64A/F64B/U32A/U32B. */
  creditRows(rows: number, blockSize: number, isl: number, credit: number, hostW: number, diskW: number): void;
  treeSize(handle: number, slot: number, tier: number): number;
  holdingCount(handle: number, tier: number): number;
  recordCount(handle: number, tier: number): number;
  /** Device holdings whose slot does not hold the node's parent (0: the match's fast walk applies). */
  orphanCount(handle: number): number;
  /** Dump rows of a tier into R_OUT_U32A (slot, hasParent) and R_DUMP_U64 (ext, parent, local). */
  dumpRows(handle: number, tier: number): number;
  // --- allocator (assembly/mem.ts) ---
  /** Bytes of linear memory the index allocator obtained (it grows memory by what it needs, >= 1 MiB at a time). */
  memArenaBytes(): number;
  /** Bytes in the allocator's live blocks. */
  memLiveBytes(): number;
}

/** Region ids and parameter cells, read from the module's globals (declared in assembly/layout.ts). */
const LAYOUT_NAMES = [
  'R_PARAMS', 'R_HASH_A', 'R_HASH_B', 'R_HASH_C', 'R_TOKENS', 'R_MM_COUNTS', 'R_MM_HASHES', 'R_BYTES',
  'R_OUT_SLOT', 'R_OUT_DEV', 'R_OUT_HOST', 'R_OUT_DISK', 'R_OUT_EXTN', 'R_OUT_F64A', 'R_OUT_F64B',
  'R_OUT_U32A', 'R_OUT_U32B', 'R_DUMP_U64', 'R_TMP',
  'P_SEED', 'P_CHAIN_SEED', 'P_RESULT', 'P_PARENT', 'P_AUX',
] as const;
type Layout = Record<(typeof LAYOUT_NAMES)[number], number>;

/** Per-block multimodal hashes: entry i belongs to block i; null or [] = no mm info. */
export type BlockMm = readonly (readonly bigint[] | null)[] | null;

/** Original bytes of modules compiled with a shared memory (the fallback where it cannot be had). */
const plainBytes = new WeakMap<WebAssembly.Module, Uint8Array>();
let embedded: WebAssembly.Module | null = null;
/** The module a host handed over with useWasmModule (used instead of the embedded bytes). */
let hostModule: WebAssembly.Module | null = null;
/** Whether an instance of the default module (host's or embedded) exists: then useWasmModule is too late. */
let started = false;

/**
 * `bytes` (by default the embedded build, compiled once and cached) as a module with a shared
 * memory where the host has SharedArrayBuffer (see withSharedMemory). Give one module to every
 * `Wasm` that should share compiled code: V8 compiles wasm functions lazily, on first call, so a
 * fresh module pays that again (a first match took 0.3-0.4 ms where the next took 3 us).
 * Where the runtime refuses to compile bytes (Cloudflare Workers), the error for the embedded
 * build names the remedy, {@link useWasmModule}.
 */
export function compileWasm(bytes?: Uint8Array): WebAssembly.Module {
  if (bytes === undefined && embedded !== null) return embedded;
  const b = bytes ?? embeddedBytes();
  const shared = typeof SharedArrayBuffer === 'function' ? withSharedMemory(b) : null;
  let m: WebAssembly.Module;
  try {
    m = new WebAssembly.Module((shared ?? b) as BufferSource);
  } catch (err) {
    if (bytes !== undefined) throw err;
    throw new Error(`cannot compile the embedded wasm index (${err instanceof Error ? err.message : String(err)}): this runtime `
      + 'does not let code compile WebAssembly from bytes (Cloudflare Workers do not); import build/browser/select-service.wasm '
      + 'as a module and call useWasmModule(module) before the first use of select-service (docs/edge-runtimes.md)', { cause: err });
  }
  if (shared !== null) plainBytes.set(m, b);
  if (bytes === undefined) embedded = m;
  return m;
}

/**
 * Use `module`, a compiled `select-service.wasm` of this version, instead of compiling the
 * embedded bytes: for runtimes that forbid compiling wasm at run time (Cloudflare Workers:
 * `import wasm from './select-service.wasm'`) or hosts that compile it themselves. Call it once,
 * before the first use of select-service (a core, a simulation, a hash); calling it again with
 * the same module is a no-op. Throws, changing nothing, when `module` is not a compiled module,
 * when its imports or exports are not the index's, or when the wasm is already instantiated.
 */
export function useWasmModule(module: WebAssembly.Module): void {
  if (module === hostModule) return;
  let imports: WebAssembly.ModuleImportDescriptor[], exports: WebAssembly.ModuleExportDescriptor[];
  try {
    imports = WebAssembly.Module.imports(module);
    exports = WebAssembly.Module.exports(module);
  } catch {
    const got = module === null || typeof module !== 'object' ? String(module) : (module as object).constructor?.name ?? 'an object';
    throw new TypeError(`useWasmModule: expected a compiled WebAssembly.Module (got ${got}); in a Worker import it as a module `
      + "(import wasm from './select-service.wasm'), elsewhere compile the file's bytes with WebAssembly.compile(bytes)");
  }
  const { missing, unexpected } = interfaceDiff(describeInterface(imports, exports));
  if (missing.length > 0 || unexpected.length > 0) {
    const list = (what: string, l: string[]) => (l.length === 0 ? [] : [`${what}: ${l.slice(0, 5).join(', ')}${l.length > 5 ? `, ... (${l.length})` : ''}`]);
    throw new TypeError(`useWasmModule: the module is not this version's wasm index (${[...list('missing', missing), ...list('not expected', unexpected)].join('; ')}); `
      + 'pass build/browser/select-service.wasm of the installed select-service, compiled unchanged');
  }
  if (started) {
    throw new Error('useWasmModule: too late, the wasm index is already instantiated (select-service was used before this call); '
      + 'call useWasmModule(module) once, before the first use, e.g. at the top level of the Worker\'s module');
  }
  hostModule = module;
}

/**
 * Instantiates a module (compiling `src` bytes first; by default the host's module or the
 * embedded build), falling back to a plain memory where a shared one cannot be had.
 */
function instantiate(src: WebAssembly.Module | Uint8Array | undefined, imports: WebAssembly.Imports): WebAssembly.Instance {
  const m = src === undefined ? hostModule ?? compileWasm() : src instanceof Uint8Array ? compileWasm(src) : src;
  let inst: WebAssembly.Instance;
  try {
    inst = new WebAssembly.Instance(m, imports);
  } catch (err) {
    const plain = plainBytes.get(m);
    if (plain === undefined) throw err;
    // A page without cross-origin isolation has no shared memory: use the module as built.
    const p = new WebAssembly.Module(plain as BufferSource);
    if (m === embedded) embedded = p;
    inst = new WebAssembly.Instance(p, imports);
  }
  if (src === undefined) started = true;
  return inst;
}

function constant(exports: WebAssembly.Exports, name: string): number {
  const g = exports[name] as WebAssembly.Global | number | undefined;
  if (g === undefined) throw new Error(`wasm export ${name} is missing`);
  return typeof g === 'number' ? g : Number(g.value);
}

/**
 * One instantiated module plus cached views over its memory. Everything else in the codebase
 * reaches wasm through an instance of this class (`getWasm()`).
 */
export class Wasm {
  readonly exports: WasmExports;
  private readonly L: Layout;
  private buffer: ArrayBuffer | null = null;
  private ptrs: number[] = [];
  /** Lower bounds of the scratch regions' capacities (see `reserve`). */
  private readonly caps = new Float64Array(32);
  /** Views by kind * 32 + region (a typed-array cache: no key string per access). */
  private readonly cache: (ArrayBufferView | undefined)[] = new Array(4 * 32);

  constructor(module?: WebAssembly.Module | Uint8Array) {
    let memory: WebAssembly.Memory | null = null;
    const readString = (ptr: number): string => {
      if (!memory || !ptr) return '';
      const len = new Uint32Array(memory.buffer)[(ptr - 4) >>> 2] >>> 1;
      return String.fromCharCode(...new Uint16Array(memory.buffer, ptr, len));
    };
    const inst = instantiate(module, {
      env: {
        abort(msg: number, file: number, line: number, col: number): never {
          throw new Error(`wasm abort: ${readString(msg)} at ${readString(file)}:${line}:${col}`);
        },
      },
    });
    this.exports = inst.exports as unknown as WasmExports;
    memory = this.exports.memory;
    const l: Partial<Layout> = {};
    for (const n of LAYOUT_NAMES) l[n] = constant(inst.exports, n);
    this.L = Object.freeze(l as Layout);
    // Set up the scratch regions now: doing it lazily inside the first view access would grow
    // memory (and detach the buffer) between reading memory.buffer and building the view.
    this.exports.scratchCap(0);
  }

  /** Current byte length of linear memory (tests assert it stays flat on hot paths). */
  memoryBytes(): number { return this.exports.memory.buffer.byteLength; }
  /** Whether linear memory is shared (grows without a JS GC; see withSharedMemory). */
  memoryShared(): boolean { return typeof SharedArrayBuffer === 'function' && this.exports.memory.buffer instanceof SharedArrayBuffer; }

  private refresh(): void {
    const buf = this.exports.memory.buffer as ArrayBuffer;
    if (buf === this.buffer) return;
    this.buffer = buf;
    this.cache.fill(undefined);
    this.ptrs = [];
    for (let r = 0; r < 32; r++) this.ptrs.push(r <= this.L.R_HASH_C ? this.exports.scratchPtr(r) >>> 0 : 0);
  }

  /**
   * Ensure region r holds `bytes` bytes (may grow memory and move the region; its contents are
   * not kept). Regions only ever grow, so a capacity once seen stays a lower bound: the common
   * call (every event, every selection) returns here without a wasm call.
   */
  private reserve(r: number, bytes: number): void {
    if (this.caps[r] >= bytes) return;
    if (this.capacity(r) >= bytes) return;
    this.exports.scratchReserve(r, bytes);
    this.buffer = null; // region pointers moved
    this.capacity(r);
  }

  /** Capacity of region r in bytes (also refreshes the lower bound `reserve` uses). */
  private capacity(r: number): number {
    const cap = this.exports.scratchCap(r) >>> 0;
    this.caps[r] = cap;
    return cap;
  }

  private view<T extends ArrayBufferView>(kind: number, r: number, make: (b: ArrayBuffer, p: number, n: number) => T, size: number): T {
    this.refresh();
    const key = kind * 32 + r;
    let v = this.cache[key] as T | undefined;
    if (v === undefined) {
      const cap = this.capacity(r);
      v = make(this.buffer as ArrayBuffer, this.ptrs[r], Math.floor(cap / size));
      this.cache[key] = v;
    }
    return v;
  }

  private u64(r: number): BigUint64Array { return this.view(0, r, (b, p, n) => new BigUint64Array(b, p, n), 8); }
  /** For u64 regions, element 2i is the low word of value i. */
  private u32(r: number): Uint32Array { return this.view(1, r, (b, p, n) => new Uint32Array(b, p, n), 4); }
  private f64(r: number): Float64Array { return this.view(2, r, (b, p, n) => new Float64Array(b, p, n), 8); }
  private u8(r: number): Uint8Array { return this.view(3, r, (b, p, n) => new Uint8Array(b, p, n), 1); }

  // ---- sizing (cold; each may grow memory, so take views after them) ----

  /** Capacity of R_HASH_A (local hashes) in values. */
  localsCapacity(): number { return this.capacity(this.L.R_HASH_A) / 8; }
  /** Make R_HASH_A hold n values (the output of hashBlocks / storeTokens). */
  reserveLocals(n: number): void { this.reserve(this.L.R_HASH_A, n * 8); }
  /** Make R_HASH_B hold n values (the output of chainHashes / chainExts). */
  reserveExts(n: number): void { this.reserve(this.L.R_HASH_B, n * 8); }
  /** Size the match and credit output regions for `slots` rows. */
  reserveRows(slots: number): void {
    const L = this.L;
    for (const r of [L.R_OUT_SLOT, L.R_OUT_DEV, L.R_OUT_HOST, L.R_OUT_DISK, L.R_OUT_EXTN, L.R_OUT_U32A, L.R_OUT_U32B]) this.reserve(r, slots * 4);
    for (const r of [L.R_OUT_F64A, L.R_OUT_F64B]) this.reserve(r, slots * 8);
  }
  /** Size the dump regions for `rows` holdings. */
  reserveDump(rows: number): void { this.reserve(this.L.R_OUT_U32A, rows * 8); this.reserve(this.L.R_DUMP_U64, rows * 24); }

  // ---- typed writers: the only code that writes scratch ----

  /** R_HASH_A[0..n) = local block hashes (a match query, or stored blocks' tokens hashes). */
  writeLocals(src: ArrayLike<bigint>): void {
    this.reserve(this.L.R_HASH_A, src.length * 8);
    this.u64(this.L.R_HASH_A).set(src);
  }
  /** R_HASH_B[0..n) = engine block hashes (stored or removed blocks). */
  writeExts(src: ArrayLike<bigint>): void {
    this.reserve(this.L.R_HASH_B, src.length * 8);
    this.u64(this.L.R_HASH_B).set(src);
  }
  /** R_HASH_B[0..n) = engine block hashes given as (lo, hi) u32 words (2n words, no BigInt). */
  writeExtWords(words: Uint32Array): void {
    this.reserve(this.L.R_HASH_B, words.length * 4);
    this.u32(this.L.R_HASH_B).set(words);
  }
  /** R_TOKENS[0..n) = token ids. */
  writeTokens(tokens: ArrayLike<number>): void {
    this.reserve(this.L.R_TOKENS, tokens.length * 4);
    this.u32(this.L.R_TOKENS).set(tokens);
  }
  /** R_BYTES = a ++ b (xxh3 input, or lora ++ namespace for the public seed). */
  writeBytes(a: Uint8Array, b?: Uint8Array): void {
    this.reserve(this.L.R_BYTES, a.length + (b?.length ?? 0));
    const v = this.u8(this.L.R_BYTES);
    v.set(a, 0);
    if (b) v.set(b, a.length);
  }
  /**
   * The multimodal hashes of the first `count` blocks into R_MM_COUNTS / R_MM_HASHES; returns how
   * many hashes there are, 0 (nothing written) when no block has any.
   */
  writeMm(mm: BlockMm, count: number): number {
    if (mm === null) return 0;
    let total = 0;
    for (let i = 0; i < count && i < mm.length; i++) total += mm[i]?.length ?? 0;
    if (total === 0) return 0;
    const L = this.L;
    this.reserve(L.R_MM_COUNTS, count * 4);
    this.reserve(L.R_MM_HASHES, total * 8);
    const counts = this.u32(L.R_MM_COUNTS), hashes = this.u64(L.R_MM_HASHES);
    let j = 0;
    for (let i = 0; i < count; i++) {
      const m = mm[i] ?? null;
      counts[i] = m === null ? 0 : m.length;
      if (m !== null) for (const h of m) hashes[j++] = BigInt.asUintN(64, h);
    }
    return total;
  }

  private setParam(cell: number, v: bigint): void { this.u64(this.L.R_PARAMS)[cell] = BigInt.asUintN(64, v); }
  private setParamWords(cell: number, lo: number, hi: number): void {
    const w = this.u32(this.L.R_PARAMS);
    w[2 * cell] = lo; w[2 * cell + 1] = hi;
  }
  private param(cell: number): bigint { return this.u64(this.L.R_PARAMS)[cell]; }

  /** P_SEED: the block-hash seed of the next hashing / token-store call. */
  setSeed(v: bigint): void { this.setParam(this.L.P_SEED, v); }
  setSeedWords(lo: number, hi: number): void { this.setParamWords(this.L.P_SEED, lo, hi); }
  seed(): bigint { return this.param(this.L.P_SEED); }
  /** P_CHAIN_SEED: the sequence-hash chain seed of the next chainHashes call. */
  setChainSeed(v: bigint): void { this.setParam(this.L.P_CHAIN_SEED, v); }
  /** P_PARENT: the parent engine hash of the next store (ignored without hasParent). */
  setParent(v: bigint): void { this.setParam(this.L.P_PARENT, v); }
  setParentWords(lo: number, hi: number): void { this.setParamWords(this.L.P_PARENT, lo, hi); }
  /** P_RESULT: the single u64 result of xxh3Bytes / saltSeed. */
  result(): bigint { return this.param(this.L.P_RESULT); }

  // ---- readers: views valid until the next call that may grow memory ----

  /** R_HASH_A: local block hashes (hashBlocks output, match query). */
  locals(): BigUint64Array { return this.u64(this.L.R_HASH_A); }
  /** R_HASH_B: engine or sequence hashes (chainHashes / chainExts output). */
  exts(): BigUint64Array { return this.u64(this.L.R_HASH_B); }
  /** {@link exts} as (lo, hi) u32 words: word 2i is the low word of hash i (no BigInt per hash). */
  extWords(): Uint32Array { return this.u32(this.L.R_HASH_B); }
  rowSlots(): Uint32Array { return this.u32(this.L.R_OUT_SLOT); }
  rowDevice(): Uint32Array { return this.u32(this.L.R_OUT_DEV); }
  rowHost(): Uint32Array { return this.u32(this.L.R_OUT_HOST); }
  rowDisk(): Uint32Array { return this.u32(this.L.R_OUT_DISK); }
  rowExternal(): Uint32Array { return this.u32(this.L.R_OUT_EXTN); }
  rowEffectiveBlocks(): Float64Array { return this.f64(this.L.R_OUT_F64A); }
  rowCreditBlocks(): Float64Array { return this.f64(this.L.R_OUT_F64B); }
  rowCachedTokens(): Uint32Array { return this.u32(this.L.R_OUT_U32A); }
  rowEffectivePrefill(): Uint32Array { return this.u32(this.L.R_OUT_U32B); }
  /** Dump rows: (slot, hasParent) u32 pairs. */
  dumpPairs(): Uint32Array { return this.u32(this.L.R_OUT_U32A); }
  /** Dump rows: (ext, parentExt, local) u64 triples. */
  dumpHashes(): BigUint64Array { return this.u64(this.L.R_DUMP_U64); }
}

let shared: Wasm | null = null;

/** The process-wide (or page-wide) module instance, created on first use. */
export function getWasm(): Wasm {
  if (shared === null) shared = new Wasm();
  return shared;
}
