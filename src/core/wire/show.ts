/**
 * Quoting a client's bad value in an error message, safely: the value may be anything the JSON
 * parser returns (bigints, nesting thousands of levels deep, megabytes of text), and the quote
 * must stay short and must never throw. Isomorphic, no imports (the config and the wire schemas
 * both use it).
 */

/** Longest quote of a bad value in an error message, in characters (then `…`). */
const SHOW_MAX_CHARS = 64;
/** Nesting levels a quote descends into (deeper arrays and objects print as `[…]` / `{…}`). */
const SHOW_MAX_DEPTH = 2;

/**
 * A bad input value quoted for an error message: JSON-like, at most {@link SHOW_MAX_CHARS}
 * characters and {@link SHOW_MAX_DEPTH} levels deep, bigints as digits. It never throws (no
 * `JSON.stringify`, which refuses a nested bigint and overflows the stack on deep nesting) and its
 * work is bounded by the length limit, whatever the size of the value.
 */
export function show(v: unknown): string {
  const out: string[] = [];
  let len = 0;
  const put = (s: string): boolean => {
    out.push(s);
    len += s.length;
    return len < SHOW_MAX_CHARS;
  };
  const walk = (x: unknown, depth: number): boolean => {
    if (typeof x === 'string') return put(JSON.stringify(x.length > SHOW_MAX_CHARS ? x.slice(0, SHOW_MAX_CHARS) : x));
    if (typeof x === 'bigint' || typeof x === 'number' || typeof x === 'boolean') return put(String(x));
    if (x === null) return put('null');
    if (Array.isArray(x)) {
      if (depth >= SHOW_MAX_DEPTH) return put(x.length === 0 ? '[]' : '[…]');
      if (!put('[')) return false;
      for (let i = 0; i < x.length; i++) if ((i > 0 && !put(',')) || !walk(x[i], depth + 1)) return false;
      return put(']');
    }
    if (typeof x === 'object') {
      if (depth >= SHOW_MAX_DEPTH) return put('{…}');
      if (!put('{')) return false;
      let first = true;
      for (const k in x) {
        if (!Object.prototype.hasOwnProperty.call(x, k)) continue;
        if ((!first && !put(',')) || !walk(k, depth + 1) || !put(':') || !walk((x as Record<string, unknown>)[k], depth + 1)) return false;
        first = false;
      }
      return put('}');
    }
    return put(typeof x);
  };
  const whole = walk(v, 0);
  const text = out.join('');
  return whole && text.length <= SHOW_MAX_CHARS ? text : `${text.slice(0, SHOW_MAX_CHARS)}…`;
}
