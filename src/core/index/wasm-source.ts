/**
 * The index's module as bytes and as an interface, without touching `WebAssembly` (that stays in
 * wasm.ts): the embedded build decoded, its memory declared shared, and the check that a module a
 * host hands over (`useWasmModule`) has the embedded build's imports and exports, read from the
 * embedded bytes (a runtime that refuses to compile them can still read them).
 */
import { wasmDeflated91, wasmSize } from '../../generated/wasm-bytes.js';
import { inflateRaw } from './inflate.js';

/**
 * Text written by scripts/build.mjs's `base91` as bytes: two characters of the 91 printable ASCII
 * ones other than " ' \ ` make 13 bits, least significant first (denser than base64: the
 * embedded module's 11.2 KB deflated take 13.8 K characters instead of 15.0 K). The zero bits
 * padding the last group can make one trailing byte, which inflating ignores.
 */
export function fromBase91(text: string): Uint8Array {
  const digit = (i: number): number => { const c = text.charCodeAt(i); return c - 32 - +(c > 34) - +(c > 39) - +(c > 92) - +(c > 96); };
  const out = new Uint8Array((text.length * 13) >> 4);
  for (let i = 0, o = 0, acc = 0, n = 0; i < text.length; i += 2) {
    acc |= (digit(i) + 91 * digit(i + 1)) << n; n += 13;
    for (; n >= 8 && o < out.length; n -= 8) { out[o++] = acc & 0xff; acc >>>= 8; }
  }
  return out;
}

/** The embedded build's bytes (build/wasm/select.wasm, deflated and written as base-91 text by scripts/build.mjs). */
export function embeddedBytes(): Uint8Array {
  return inflateRaw(fromBase91(wasmDeflated91), wasmSize);
}

/** A reader of a module's bytes: unsigned LEB128 numbers and names at a moving offset. */
class Reader {
  constructor(readonly b: Uint8Array, public i = 8 /* magic + version */) {}
  leb(): number {
    let r = 0, s = 0, x: number;
    do { x = this.b[this.i++]; r += (x & 0x7f) * 2 ** s; s += 7; } while (x & 0x80);
    return r;
  }
  name(): string { const n = this.leb(); this.i += n; return String.fromCharCode(...this.b.subarray(this.i - n, this.i)); }
  /** Calls `visit` with each section's id, the reader at its contents, and its end. */
  sections(visit: (id: number, end: number) => boolean | void): void {
    while (this.i < this.b.length) {
      const id = this.b[this.i++], size = this.leb(), end = this.i + size;
      if (visit(id, end) === true) return;
      this.i = end;
    }
  }
}

/**
 * The module with its memory declared shared (limits flags 0x01 -> 0x03 in the memory section),
 * or null when the memory is not the one (min, max) memory the build declares. Why: growing a
 * non-shared memory makes V8 account the new size as external memory and request a full
 * mark-compact of the JS heap, once it passes a few tens of MiB: 300 growths of 1 MiB beside a
 * 100 MB JS heap took 20 s in all, up to 570 ms each (bench note in bench/RESULTS.md); a shared
 * memory grows in place with no GC (the same 300 growths: 1.2 ms). No atomics are used: the
 * module runs on one thread either way.
 */
export function withSharedMemory(bytes: Uint8Array): Uint8Array | null {
  const r = new Reader(bytes);
  let out: Uint8Array | null = null;
  r.sections((id) => {
    if (id !== 5) return false;
    if (r.leb() === 1 && bytes[r.i] === 0x01) { out = bytes.slice(); out[r.i] = 0x03; }
    return true;
  });
  return out;
}

/** One import or export of a module, as the JS API describes it (`Module.imports`, `Module.exports`). */
export interface InterfaceEntry { readonly module?: string; readonly name: string; readonly kind: string }

const KINDS = ['function', 'table', 'memory', 'global', 'tag'];

/** Sorted lines `import env.abort function`, `export memory memory`, ...: a module's interface. */
export function describeInterface(imports: readonly InterfaceEntry[], exports: readonly InterfaceEntry[]): string[] {
  return [...imports.map((e) => `import ${e.module}.${e.name} ${e.kind}`), ...exports.map((e) => `export ${e.name} ${e.kind}`)].sort();
}

/** The embedded build's interface, read from its bytes (no compile: where the runtime refuses one, this still works). */
function embeddedInterface(): string[] {
  const r = new Reader(embeddedBytes()), imports: InterfaceEntry[] = [], exports: InterfaceEntry[] = [];
  const limits = (): void => { const flags = r.b[r.i++]; r.leb(); if (flags & 1) r.leb(); };
  r.sections((id) => {
    if (id !== 2 && id !== 7) return false;
    for (let n = r.leb(); n > 0; n--) {
      const module = id === 2 ? r.name() : undefined, name = r.name(), kind = r.b[r.i++];
      (id === 2 ? imports : exports).push({ module, name, kind: KINDS[kind] });
      if (id === 7 || kind === 0) r.leb(); // an index, or a function import's type
      else if (kind === 1) { r.i++; limits(); } // table: reference type, limits
      else if (kind === 2) limits();
      else if (kind === 3) r.i += 2; // global: value type, mutability
      else { r.i++; r.leb(); } // tag: attribute, type
    }
    return id === 7;
  });
  return describeInterface(imports, exports);
}

/**
 * What a module described by `describeInterface` lacks and has beyond the embedded build (both
 * empty: it is the index of this version), e.g. `missing export chainExts function`.
 */
export function interfaceDiff(described: readonly string[]): { missing: string[]; unexpected: string[] } {
  const want = new Set(embeddedInterface()), got = new Set(described);
  return { missing: [...want].filter((e) => !got.has(e)), unexpected: [...got].filter((e) => !want.has(e)) };
}
