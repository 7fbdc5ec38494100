/**
 * Hostile bodies on every POST/PATCH route (issue 15), seeded so a failure reproduces: valid
 * bodies mutated by replacing, deleting or adding values (wrong types, u64 overflow, deep nesting,
 * huge and odd strings, oversized lists), and bodies damaged as text (truncated, bytes flipped,
 * invalid UTF-8). Over real HTTP on a real server: no answer is a 5xx but the catalogue's 503
 * (a partition without schedulable workers, no eligible worker), every 4xx and 503 is
 * `{"error": string}`, and a rejected request changes nothing a client can read back (the catalog,
 * the loads and the index, compared before and after each one; accepted ones may change them).
 * At the end `GET /workers`, `/loads` and `/dump` agree with that state.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request, Agent } from 'node:http';
import { seededRng } from '../../../src/core/random.js';
import { parseJson, stringifyJson } from '../../../src/core/wire/json.js';
import { startServer, toks } from './server.js';

const BODIES = 2000;
const SEED = 20261503;
const rng = seededRng(SEED);
const int = (n: number): number => Math.floor(rng.next() * n);
const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)];

/** Text spliced in verbatim by {@link enc} (nesting too deep to build as values). */
class Raw { constructor(readonly text: string) {} }

/** JSON text of a value with bigints as digits and {@link Raw} pieces verbatim. */
function enc(v: unknown): string {
  if (v instanceof Raw) return v.text;
  if (typeof v === 'bigint') return v.toString();
  if (Array.isArray(v)) return `[${v.map(enc).join(',')}]`;
  if (v !== null && typeof v === 'object') return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}:${enc(x)}`).join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}

/** A value no field expects, or one at the edge of what it accepts. */
function evil(): unknown {
  switch (int(16)) {
    case 0: { const d = 1 + int(5000); return new Raw(`${'['.repeat(d)}${pick(['1', '18446744073709551616', '"x"', ''])}${']'.repeat(d)}`); }
    case 1: return pick([18446744073709551616n, 18446744073709551615n, -1n, -(1n << 63n) - 1n, 1n << 100n]);
    case 2: return pick([-1, 0, 1.5, 4294967295, 4294967296, 9007199254740993, 1e308, -0]);
    case 3: return pick(['', 'x'.repeat(5000), '\u0000', '\ud800', 'é'.repeat(10), 'tcp://169.254.169.254:80', 'ipc:///etc/passwd']);
    case 4: return pick([true, false, null]);
    case 5: return {};
    case 6: return { a: [1n << 70n, { b: new Raw('[[[[[[[[]]]]]]]]') }] };
    case 7: return Array.from({ length: pick([0, 1, 65, 1025, 4097]) }, () => pick([1, 'a', null]));
    case 8: return [pick([1n << 64n, -5, 'x', [1], {}])];
    case 9: return Object.fromEntries(Array.from({ length: pick([1, 65, 1100]) }, (_, i) => [String(i), pick(['tcp://h:1', 1, null])]));
    case 10: return toks(pick([0, 3, 5000]));
    case 11: return { worker_id: pick([1, -1, 'x', 1n << 64n]), dp_rank: pick([0, -1, 1e10, 'x']) };
    case 12: return { session_id: 'x'.repeat(pick([1, 300, 5000])) };
    case 13: return { required_taints: Array(pick([0, 70])).fill('t'), preferred_taints: { t: pick([1, 'x', 1e400]) } };
    case 14: return pick([1024, 1025, 65535, 65536, 65537, 4294967295]);
    default: return [[], {}, [[]]];
  }
}

/** The keys and array slots of a value tree, as paths. */
function paths(v: unknown, at: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
  if (Array.isArray(v)) v.slice(0, 8).forEach((x, i) => { out.push([...at, i]); paths(x, [...at, i], out); });
  else if (v !== null && typeof v === 'object' && !(v instanceof Raw)) {
    for (const [k, x] of Object.entries(v)) { out.push([...at, k]); paths(x, [...at, k], out); }
  }
  return out;
}

/** One mutation of a valid body (a deep copy): replace, delete or add a value, possibly several times. */
function mutate(body: Record<string, unknown>): unknown {
  const root: unknown = structuredClone(body);
  for (let n = 1 + int(3); n > 0; n--) {
    const ps = paths(root);
    const op = int(4);
    if (op === 3 || ps.length === 0) {
      (root as Record<string, unknown>)[pick(['unknown_field', 'worker_id', 'model_name', 'token_ids', 'selection_id', 'decay_fraction'])] = evil();
      continue;
    }
    const path = pick(ps);
    let parent = root as Record<string | number, unknown>;
    for (const k of path.slice(0, -1)) parent = parent[k] as Record<string | number, unknown>;
    const last = path[path.length - 1];
    if (op === 2 && !Array.isArray(parent)) delete parent[last];
    else parent[last] = evil();
  }
  return int(20) === 0 ? [root] : root;
}

/** A body damaged as bytes. */
function damage(text: string): Buffer {
  const b = Buffer.from(text);
  switch (int(4)) {
    case 0: return b.subarray(0, int(b.length));
    case 1: { const c = Buffer.from(b); for (let k = 0; k < 1 + int(3); k++) c[int(c.length)] = int(256); return c; }
    case 2: return Buffer.concat([b.subarray(0, int(b.length)), Buffer.from([0xff, 0xc3, 0x28]), b.subarray(int(b.length))]);
    default: return Buffer.from(`${text.slice(0, -1)},"model_name":"dup","model_name":${enc(evil())}}`);
  }
}

const W = { worker_id: 1, model_name: 'model', endpoint: 'http://worker-1:8000', block_size: 4, data_parallel_size: 2, taints: ['gpu'] };
const PROMPT = { model_name: 'model', token_ids: toks(16), router_config_override: { overlap_score_credit: 1 } };
const TEMPLATES: [string, string, Record<string, unknown>][] = [
  ['POST', '/workers', { ...W, worker_id: 7, topology_domains: { zone: 'a' }, kv_events_endpoints: { 0: 'tcp://h:1', 1: 'tcp://h:2' } }],
  ['PATCH', '/workers/1', { max_num_batched_tokens: 1024, taints: ['gpu', 'fast'], total_kv_blocks: 100 }],
  ['POST', '/select', { ...PROMPT, selection_id: 'sel', allowed_worker_ids: [1], routing_constraints: { required_taints: ['gpu'] }, advisory: true }],
  ['POST', '/select_and_reserve', { ...PROMPT, selection_id: 'sar', session_context: { session_id: 's', agent_headers: { a: ['b'] } }, expected_output_tokens: 8 }],
  ['POST', '/reservations', { model_name: 'model', selection_id: 'res', worker_id: 1, dp_rank: 1, sequence_hashes: [1, -2], isl_tokens: 8, effective_prefill_tokens: 4 }],
  ['POST', '/reservations/live/output_block', { decay_fraction: 0.5 }],
  ['POST', '/reservations/live/prefill_complete', {}],
  ['POST', '/potential_loads', { ...PROMPT, block_mm_infos: [{ mm_objects: [{ mm_hash: 5, offsets: [[0, 1]] }] }, null] }],
  ['POST', '/overlap_scores', { model_name: 'model', block_hashes: [1, 2], sequence_hashes: [3, 4], isl_tokens: 8 }],
  ['POST', '/replica_sync/register_peer', { endpoint: 'tcp://127.0.0.1:9' }],
  ['POST', '/replica_sync/deregister_peer', { endpoint: 'tcp://127.0.0.1:9' }],
];

test(`fuzz: ${BODIES} mutated bodies on every POST/PATCH route (seed ${SEED}): no 500, errors are {"error"}, rejections change nothing`, async (t) => {
  const s = await startServer(t);
  await s.worker(1, { data_parallel_size: 2, taints: ['gpu'] });
  await s.worker(2);
  assert.equal((await s.call('POST', '/select_and_reserve', { ...PROMPT, selection_id: 'live' })).status, 200);
  const state = (): string => stringifyJson([s.service.listWorkers(), s.service.loads(), s.service.dump()]);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  t.after(() => agent.destroy());
  const url = new URL(s.base);
  const send = (method: string, path: string, body: Buffer): Promise<{ status: number; text: string }> => new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, method, path, agent,
      headers: { 'content-type': 'application/json', 'content-length': body.length } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
  const statuses = new Map<number, number>();
  let before = state();
  for (let i = 0; i < BODIES; i++) {
    const [method, path, template] = pick(TEMPLATES);
    const text = enc(mutate(template));
    const body = int(5) === 0 ? damage(text) : Buffer.from(text);
    const r = await send(method, path, body);
    statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
    const what = `#${i} ${method} ${path} ${body.toString('utf8').slice(0, 160)} -> ${r.status} ${r.text.slice(0, 160)}`;
    assert.ok(r.status < 500 || r.status === 503, what);
    const after = state();
    if (r.status >= 400) {
      const parsed = parseJson(r.text) as { error?: unknown };
      assert.equal(typeof parsed.error, 'string', what);
      assert.equal(after, before, `rejected, yet the state changed: ${what}`);
    }
    before = after;
  }
  assert.ok((statuses.get(422) ?? 0) > BODIES / 4, `mostly schema rejections: ${[...statuses].join(' ')}`);
  assert.ok([...statuses.keys()].some((c) => c < 300), 'some mutations are still valid');
  const http = await Promise.all(['/workers', '/loads', '/dump'].map(async (p) => (await s.call('GET', p)).text));
  assert.equal(`[${http.join(',')}]`, state(), 'GET /workers, /loads and /dump show that state');
});
