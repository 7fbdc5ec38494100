import { seededRng } from '../../../src/core/random.js';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  jsonU64,
  parseJson,
  parseJsonPrecise,
  stringifyJson,
  toI64AsU64,
  toU64,
  u64ToI64,
} from '../../../src/core/wire/json.js';

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const BOUNDARIES: bigint[] = [
  0n, 1n, MAX_SAFE, MAX_SAFE + 1n, MAX_SAFE + 2n,
  (1n << 63n) - 1n, 1n << 63n, (1n << 64n) - 1n, -1n, -(1n << 63n),
];

/** What parseJson returns for an integer literal of value b. */
function expected(b: bigint): number | bigint {
  return b <= MAX_SAFE && b >= -MAX_SAFE ? Number(b) : b;
}

/** Deep copy mapping every bigint through `expected`. */
function normalize(v: unknown): unknown {
  if (typeof v === 'bigint') return expected(v);
  if (Array.isArray(v)) return v.map(normalize);
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      if (x === undefined) continue;
      Object.defineProperty(out, k, { value: normalize(x), writable: true, enumerable: true, configurable: true });
    }
    return out;
  }
  return v;
}

/** Independent reference for stringifyJson: placeholder replacer + unquote. */
function referenceStringify(v: unknown, space?: number | string): string | undefined {
  const marker = 'BIGINT~8d0f3a~';
  const out = JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? marker + x.toString() : x), space);
  return out?.replace(new RegExp(`"${marker}(-?\\d+)"`, 'g'), '$1');
}

/** The project's seeded PRNG, so bodies are identical run to run. */
const seededFloats = (seed: number): (() => number) => seededRng(seed).next;

const STRING_CHARS = ['a', 'Z', '0', '9', ' ', '"', '\\', '/', '\n', '\t', '\u0000', '\u001f', '\u007f', 'é', '€', '\u2028', '😀', '\ud800', '\udfff', '{', '}', '[', ',', ':'];

function randomString(r: () => number): string {
  const kind = r();
  if (kind < 0.15) return String(Math.floor(r() * 1e6)) + '12345678901234567890'.slice(0, Math.floor(r() * 21));
  const n = Math.floor(r() * 12);
  let s = '';
  for (let i = 0; i < n; i++) s += STRING_CHARS[Math.floor(r() * STRING_CHARS.length)];
  return s;
}

function randomNumber(r: () => number): number {
  const k = r();
  if (k < 0.4) return Math.floor(r() * 200_000) - 1000;
  if (k < 0.5) return (r() < 0.5 ? 1 : -1) * Math.floor(r() * Number.MAX_SAFE_INTEGER);
  if (k < 0.55) return r() < 0.5 ? Number.MAX_SAFE_INTEGER : -Number.MAX_SAFE_INTEGER;
  if (k < 0.8) return (r() - 0.5) * 10 ** Math.floor(r() * 10);
  // wide exponent range; integral doubles in [2^53, 1e21) print as plain digit
  // runs (which parseJson rightly turns into bigint), so keep them out here
  const x = (r() - 0.5) * 10 ** Math.floor(r() * 600 - 300);
  return Number.isInteger(x) && Math.abs(x) > Number.MAX_SAFE_INTEGER && Math.abs(x) < 1e21 ? 0.5 : x;
}

function randomBigint(r: () => number): bigint {
  const k = r();
  if (k < 0.3) return BOUNDARIES[Math.floor(r() * BOUNDARIES.length)];
  const u = (BigInt(Math.floor(r() * 2 ** 32)) << 32n) | BigInt(Math.floor(r() * 2 ** 32));
  return k < 0.7 ? u : BigInt.asIntN(64, u);
}

function randomValue(r: () => number, depth: number, bigints: boolean): unknown {
  const k = r();
  if (depth > 4 || k < 0.45) {
    const p = r();
    if (p < 0.3) return randomString(r);
    if (p < 0.6) return bigints && r() < 0.5 ? randomBigint(r) : randomNumber(r);
    if (p < 0.7) return true;
    if (p < 0.8) return false;
    if (p < 0.9) return null;
    return bigints ? randomBigint(r) : randomNumber(r);
  }
  if (k < 0.72) {
    const n = Math.floor(r() * 6);
    return Array.from({ length: n }, () => randomValue(r, depth + 1, bigints));
  }
  const obj: Record<string, unknown> = {};
  const n = Math.floor(r() * 6);
  for (let i = 0; i < n; i++) {
    const key = r() < 0.05 ? '__proto__' : r() < 0.1 ? String(Math.floor(r() * 10)) : randomString(r);
    Object.defineProperty(obj, key, { value: randomValue(r, depth + 1, bigints), writable: true, enumerable: true, configurable: true });
  }
  return obj;
}

describe('parseJson: u64/i64 exactness', () => {
  it('keeps every boundary value exact in objects and arrays', () => {
    for (const b of BOUNDARIES) {
      const e = expected(b);
      assert.deepEqual(parseJson(`{"v":${b}}`), { v: e });
      assert.deepEqual(parseJson(`[${b}]`), [e]);
      assert.deepEqual(parseJson(`${b}`), e);
      assert.deepEqual(parseJson(`{"a":[1,{"b":[${b},${b}]}],"c":"${b}"}`), { a: [1, { b: [e, e] }], c: String(b) });
      assert.equal(stringifyJson({ v: b, a: [b] }), `{"v":${b},"a":[${b}]}`);
      assert.deepEqual(parseJson(stringifyJson({ v: b, a: [b, [b]] })), { v: e, a: [e, [e]] });
    }
  });

  it('switches to bigint exactly above MAX_SAFE_INTEGER', () => {
    assert.equal(parseJson('9007199254740991'), 9007199254740991);
    assert.equal(parseJson('-9007199254740991'), -9007199254740991);
    assert.equal(parseJson('9007199254740992'), 9007199254740992n);
    assert.equal(parseJson('-9007199254740992'), -9007199254740992n);
    assert.equal(parseJson('9999999999999999'), 9999999999999999n);
    assert.equal(parseJson('1000000000000000'), 1000000000000000);
    assert.equal(parseJson('-9223372036854775808'), -9223372036854775808n);
    assert.equal(parseJson('18446744073709551616'), 18446744073709551616n);
    assert.equal(parseJson('123456789012345678901234567890'), 123456789012345678901234567890n);
    assert.equal(typeof parseJson('[9007199254740993, 1]'), 'object');
    assert.deepEqual(parseJson('[9007199254740993, 1, 2.5]'), [9007199254740993n, 1, 2.5]);
  });

  it('leaves fractions and exponents as numbers', () => {
    const cases = ['1e20', '1E+20', '-1e-7', '1.0', '12345678901234567890.5', '0.12345678901234567890',
      '18446744073709551615e0', '1.8446744073709552e19', '-0', '-0.0', '0e0', '1e400', '5e-324', '123.456e-2'];
    for (const t of cases) {
      for (const doc of [t, `[${t}, 18446744073709551615]`]) {
        const got = parseJson(doc);
        const want = JSON.parse(doc.replace('18446744073709551615]', '0]')) as unknown;
        if (Array.isArray(want)) want[1] = 18446744073709551615n;
        assert.deepEqual(got, want, doc);
      }
    }
    assert.ok(Object.is(parseJson('-0'), -0));
    assert.ok(Object.is((parseJson('[-0, 18446744073709551615]') as unknown[])[0], -0));
  });

  it('keeps digit-run strings as strings', () => {
    const doc = '{"id":"12345678901234567890","k":18446744073709551615,"12345678901234567890":"-9223372036854775808"}';
    assert.deepEqual(parseJson(doc), { id: '12345678901234567890', k: 18446744073709551615n, '12345678901234567890': '-9223372036854775808' });
    assert.deepEqual(parseJson('"12345678901234567890"'), '12345678901234567890');
  });

  it('handles escapes and unicode on both paths', () => {
    const strs = ['"\\u00e9\\n\\t\\"\\\\\\/\\b\\f\\r"', '"\\ud83d\\ude00 😀 é €"', '"\\ud800"', '"\\uDFFF\\uABCD\\uabcd"', '"\u2028\u2029"', '""', '"\\u0000"'];
    for (const s of strs) {
      assert.equal(parseJson(s), JSON.parse(s));
      assert.equal(parseJsonPrecise(s), JSON.parse(s));
      assert.deepEqual(parseJson(`{${s}:[${s},18446744073709551615]}`), { [JSON.parse(s) as string]: [JSON.parse(s), 18446744073709551615n] });
    }
  });

  it('accepts all JSON whitespace and nothing else', () => {
    const doc = ' \t\n\r{ "a" :\t[ 1 ,\n2 , 18446744073709551615 ] ,"b":{ } , "c" : [ ] }\r\n ';
    assert.deepEqual(parseJson(doc), { a: [1, 2, 18446744073709551615n], b: {}, c: [] });
    for (const ws of ['\u00a0', '\ufeff', '\u2028', '\v', '\f']) {
      assert.throws(() => JSON.parse(`${ws}1`));
      assert.throws(() => parseJsonPrecise(`${ws}1`), SyntaxError);
      assert.throws(() => parseJson(`[1,${ws}18446744073709551615]`), SyntaxError);
    }
  });

  it('stores __proto__ as an own property, never the prototype', () => {
    for (const doc of ['{"__proto__":{"polluted":1},"a":1}', '{"__proto__":{"polluted":1},"a":18446744073709551615}']) {
      for (const parse of [parseJson, parseJsonPrecise]) {
        const v = parse(doc) as Record<string, unknown>;
        assert.equal(Object.getPrototypeOf(v), Object.prototype);
        assert.ok(Object.hasOwn(v, '__proto__'));
        assert.deepEqual(Object.keys(v), ['__proto__', 'a']);
        assert.equal((v as { polluted?: unknown }).polluted, undefined);
        assert.equal(({} as { polluted?: unknown }).polluted, undefined);
      }
    }
    const nested = parseJsonPrecise('[{"__proto__":[],"__proto__":{"x":9007199254740993}}]') as Record<string, unknown>[];
    assert.deepEqual(Object.getOwnPropertyDescriptor(nested[0], '__proto__')?.value, { x: 9007199254740993n });
    assert.equal(Object.getPrototypeOf(nested[0]), Object.prototype);
    const shadow = parseJsonPrecise('{"constructor":1,"toString":2,"hasOwnProperty":3}') as Record<string, unknown>;
    assert.deepEqual(shadow, JSON.parse('{"constructor":1,"toString":2,"hasOwnProperty":3}'));
  });

  it('duplicate keys: last wins, key order like JSON.parse', () => {
    const doc = '{"b":1,"a":2,"b":18446744073709551615,"2":0,"1":1}';
    const v = parseJson(doc) as Record<string, unknown>;
    assert.deepEqual(Object.keys(v), Object.keys(JSON.parse(doc) as object));
    assert.equal(v.b, 18446744073709551615n);
  });

  it('parses deep nesting without recursion', () => {
    const depth = 100_000;
    const doc = '['.repeat(depth) + '18446744073709551615' + ']'.repeat(depth);
    let v = parseJson(doc);
    for (let i = 0; i < depth; i++) v = (v as unknown[])[0];
    assert.equal(v, 18446744073709551615n);
    const objDoc = '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
    assert.ok(parseJsonPrecise(objDoc));
  });

  it('parses a large hash body exactly', () => {
    const r = seededFloats(7);
    const hashes = Array.from({ length: 20_000 }, () => randomBigint(r));
    const text = stringifyJson({ block_hashes: hashes });
    assert.deepEqual(parseJson(text), { block_hashes: hashes.map(expected) });
  });
});

const INVALID = [
  '', ' ', '{', '}', '[', ']', '[1,]', '[,1]', '[1 2]', '{"a":1,}', '{,}', '{"a"}', '{"a":}', '{"a" 1}', '{a:1}',
  "{'a':1}", "'a'", '"abc', '"\\x"', '"\\u12"', '"\\u12g4"', '"\\', '"a\u0001b"', '"\n"', '"\t"', '01', '-01', '00',
  '1.', '.1', '-', '-a', '+1', '1e', '1e+', '1.e5', '0x10', 'NaN', 'Infinity', '-Infinity', 'tru', 'true1', 'nul', 'nulL',
  'False', 'undefined', '[1] x', '1 2', '{}{}', '[]]', '/*c*/1', '1//c', '[1,,2]', '{"a":1 "b":2}', '"\\U0041"',
  '18446744073709551615 18446744073709551615', '[18446744073709551615,]', '{"a":18446744073709551615,}', '018446744073709551615',
  '-18446744073709551615.', '[18446744073709551615', '\u00a01',
];

describe('parseJson: invalid input', () => {
  it(`rejects the same ${INVALID.length} inputs as JSON.parse, with a position`, () => {
    for (const t of INVALID) {
      assert.throws(() => JSON.parse(t), SyntaxError, `JSON.parse accepted ${JSON.stringify(t)}`);
      for (const parse of [parseJson, parseJsonPrecise]) {
        assert.throws(() => parse(t), (err: unknown) => {
          assert.ok(err instanceof SyntaxError, JSON.stringify(t));
          assert.match(err.message, /at position \d+$/, JSON.stringify(t));
          return true;
        });
      }
    }
  });

  it('reports the same position as JSON.parse when V8 names one', () => {
    for (const t of INVALID) {
      let native = '';
      try {
        JSON.parse(t);
      } catch (err) {
        native = (err as Error).message;
      }
      const m = /at position (\d+)/.exec(native);
      if (!m) continue;
      assert.throws(() => parseJsonPrecise(t), { message: new RegExp(`at position ${m[1]}$`) }, `${JSON.stringify(t)}: ${native}`);
    }
  });

  it('names the offending token', () => {
    assert.throws(() => parseJson('{"a":1,"b":2 }}'), { name: 'SyntaxError', message: 'Unexpected non-whitespace character after JSON at position 14' });
    assert.throws(() => parseJson('[1,2,}'), { message: 'Unexpected token } in JSON at position 5' });
    assert.throws(() => parseJson('[1,2'), { message: 'Unexpected end of JSON input at position 4' });
  });
});

describe('fuzz', () => {
  it('2,000 random JSON values: parseJson == parseJsonPrecise == JSON.parse; stringifyJson == JSON.stringify', () => {
    const r = seededFloats(0xc0ffee);
    for (let i = 0; i < 2000; i++) {
      const v = randomValue(r, 0, false);
      const text = JSON.stringify(v);
      const native = JSON.parse(text) as unknown;
      assert.deepEqual(parseJson(text), native, text);
      assert.deepEqual(parseJsonPrecise(text), native, text);
      assert.equal(stringifyJson(v), text);
      assert.equal(stringifyJson(v, 2), JSON.stringify(v, null, 2));
    }
  });

  it('2,000 random values with bigints round-trip through stringifyJson/parseJson', () => {
    const r = seededFloats(42);
    for (let i = 0; i < 2000; i++) {
      const v = randomValue(r, 0, true);
      const text = stringifyJson(v);
      assert.equal(text, referenceStringify(v), 'matches the placeholder reference');
      assert.deepEqual(parseJson(text), normalize(v), text);
      assert.deepEqual(parseJsonPrecise(text), normalize(v), text);
      const space = i % 2 ? 2 : '\t';
      assert.equal(stringifyJson(v, space), referenceStringify(v, space));
    }
  });
});

describe('stringifyJson', () => {
  it('writes bigints as bare digits and matches JSON.stringify semantics', () => {
    const v = { a: 18446744073709551615n, b: undefined, c: [undefined, () => 1, NaN, -1n, Infinity], d: { e: -0, f: 'x' }, g: Symbol('s'), h: null, i: true };
    assert.equal(stringifyJson(v), '{"a":18446744073709551615,"c":[null,null,null,-1,null],"d":{"e":0,"f":"x"},"h":null,"i":true}');
    assert.equal(stringifyJson({ when: new Date(0), n: 1n }), '{"when":"1970-01-01T00:00:00.000Z","n":1}');
    assert.equal(stringifyJson({ x: { toJSON: (k: string) => `k=${k}` }, n: 2n }), '{"x":"k=x","n":2}');
    assert.equal(stringifyJson([1n, { toJSON: (k: unknown) => typeof k + k }]), '[1,"string1"]');
    assert.equal(stringifyJson(18446744073709551615n), '18446744073709551615');
    assert.equal(stringifyJson([]), '[]');
    assert.equal(stringifyJson({ a: [], b: {}, n: 1n }, 2), '{\n  "a": [],\n  "b": {},\n  "n": 1\n}');
  });

  it('equals JSON.stringify when no bigint is present', () => {
    const v = { token_ids: [1, 2, 3], s: 'é"\n', nested: [{ a: null }], u: undefined };
    assert.equal(stringifyJson(v), JSON.stringify(v));
    assert.equal(stringifyJson(v, 4), JSON.stringify(v, null, 4));
  });

  it('throws TypeError on cycles and non-serializable top-level values', () => {
    const cyc: Record<string, unknown> = { n: 1n };
    cyc.self = cyc;
    assert.throws(() => stringifyJson(cyc), TypeError);
    const cyc2: unknown[] = [];
    cyc2.push(cyc2);
    assert.throws(() => stringifyJson(cyc2), TypeError);
    assert.throws(() => stringifyJson(undefined), TypeError);
    assert.throws(() => stringifyJson(() => 1), TypeError);
    const shared = { n: 1n };
    assert.equal(stringifyJson([shared, shared]), '[{"n":1},{"n":1}]');
  });
});

describe('schema helpers', () => {
  it('toU64', () => {
    assert.equal(toU64(0), 0n);
    assert.equal(toU64(Number.MAX_SAFE_INTEGER), MAX_SAFE);
    assert.equal(toU64(18446744073709551615n), 18446744073709551615n);
    assert.equal(toU64(0n), 0n);
    for (const bad of [-1, 1.5, NaN, Infinity, 2 ** 53, -1n, 18446744073709551616n, '1', null, undefined, {}, true]) {
      assert.equal(toU64(bad), undefined, String(bad));
    }
  });

  it('toI64AsU64', () => {
    assert.equal(toI64AsU64(-1), 18446744073709551615n);
    assert.equal(toI64AsU64(-1n), 18446744073709551615n);
    assert.equal(toI64AsU64(-(2n ** 63n)), 2n ** 63n);
    assert.equal(toI64AsU64(18446744073709551615n), 18446744073709551615n);
    assert.equal(toI64AsU64(42), 42n);
    assert.equal(toI64AsU64(2 ** 60), 2n ** 60n);
    for (const bad of [1.5, NaN, -Infinity, -(2n ** 63n) - 1n, 2n ** 64n, '-1', null, undefined]) {
      assert.equal(toI64AsU64(bad), undefined, String(bad));
    }
  });

  it('u64ToI64 and jsonU64', () => {
    assert.equal(u64ToI64(18446744073709551615n), -1n);
    assert.equal(u64ToI64(2n ** 63n), -(2n ** 63n));
    assert.equal(u64ToI64(2n ** 63n - 1n), 2n ** 63n - 1n);
    assert.equal(u64ToI64(5n), 5n);
    assert.equal(jsonU64(0n), 0);
    assert.equal(jsonU64(MAX_SAFE), Number.MAX_SAFE_INTEGER);
    assert.equal(jsonU64(MAX_SAFE + 1n), MAX_SAFE + 1n);
    assert.equal(stringifyJson({ w: jsonU64(7n) }), JSON.stringify({ w: 7 }));
    for (const h of BOUNDARIES.filter((b) => b >= 0n)) {
      assert.equal(toU64(parseJson(stringifyJson(jsonU64(h)))), h);
      assert.equal(toI64AsU64(parseJson(stringifyJson(u64ToI64(h)))), h);
    }
  });
});
