/**
 * The workload generators (src/sim/workload/): each family's shape read back from the trace,
 * determinism for a seed, the JSONL round trip, arrivals, scaling and spec errors.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateWorkload, parseWorkload, WORKLOAD_NAMES } from '../../../src/sim/workload/spec.js';
import { FAMILIES } from '../../../src/sim/workload/families.js';
import { parseTrace, traceJsonl, sessionOf, type Trace } from '../../../src/sim/trace.js';
import { checkGrowingSessions, checkSharedPrefix, checkWellFormed, groupBy, requests, type Req } from './workload-shapes.js';

/** Longest common leading run of ids of a set of requests. */
function commonPrefix(rs: readonly Req[]): number {
  let n = 0;
  while (rs.every((r) => n < r.ids.length && r.ids[n] === rs[0].ids[n])) n++;
  return n;
}

test('system_prompt: groups share their 2,048-token prompt, questions are unique, popularity is skewed', () => {
  const rs = requests(generateWorkload('system_prompt:requests=2000:groups=8', { seed: 1 }));
  assert.equal(rs.length, 2000);
  checkWellFormed(rs);
  const sizes = checkSharedPrefix(rs, 2048, 8);
  assert.equal(sizes.length, 8);
  assert.ok(sizes[0] > 3 * sizes[7], `Zipf(1): the most popular group ${sizes[0]} vs the least ${sizes[7]}`);
  assert.ok(rs.every((r) => r.ids.length >= 5), 'four prompt blocks then the question');
  assert.equal(new Set(rs.map((r) => r.session)).size, 2000, 'one-shot requests: a session each');
  const uniform = checkSharedPrefix(requests(generateWorkload('system_prompt:requests=2000:groups=4:zipf=0:prefix=1000', { seed: 1 })), 1000, 4);
  assert.ok(uniform[0] < 1.25 * uniform[3], `zipf=0 is uniform: ${uniform}`);
});

test('multi_turn: each turn is the previous prompt + answer + message; sessions share only the system prompt', () => {
  const t = generateWorkload('multi_turn:requests=1500', { seed: 2 });
  const rs = requests(t);
  checkWellFormed(rs);
  const turns = checkGrowingSessions(rs, 512);
  assert.ok(turns.filter((n) => n >= 3).length > 50, 'many sessions of several turns');
  const system = rs[0].ids[0];
  assert.ok(rs.every((r) => r.ids[0] === system), 'one system prompt (512 tokens: one block) for all');
  const owner = new Map<number, string | undefined>();
  for (const r of rs) {
    for (const h of r.ids) {
      if (owner.has(h) && owner.get(h) !== r.session) assert.equal(h, system, `block ${h} is in two sessions`);
      owner.set(h, r.session);
    }
  }
  // the trace is a window of a running service: some sessions were under way when it opened
  assert.ok(rs.filter((r, k) => r.input > 4000 && k < 50).length > 0, 'early requests with long contexts');
});

test('agentic: sessions of one agent share the 8,192-token tool prefix and grow step by step', () => {
  const rs = requests(generateWorkload('agentic:requests=1500:agents=3', { seed: 3 }));
  checkWellFormed(rs);
  const steps = checkGrowingSessions(rs, 8192);
  assert.ok(Math.max(...steps) >= 12, 'sessions of many steps');
  const agents = groupBy(rs, (r) => r.ids[0]);
  assert.equal(agents.size, 3);
  for (const members of agents.values()) assert.ok(commonPrefix(members) >= 16, 'sixteen shared prefix blocks');
  assert.ok(rs.every((r) => r.input > 8192));
});

test('doc_qa: questions share their whole document; documents interleave', () => {
  const rs = requests(generateWorkload('doc_qa:requests=600:documents=5', { seed: 4 }));
  checkWellFormed(rs);
  const docs = groupBy(rs, (r) => r.ids[0]);
  assert.equal(docs.size, 5);
  for (const members of docs.values()) {
    assert.ok(members.length > 50, 'many questions per document');
    const shared = commonPrefix(members);
    assert.ok(shared >= 8192 / 512 && shared * 512 <= 30_720, `a document of 8-30k tokens: ${shared} blocks`);
    for (const r of members) assert.ok(r.input - shared * 512 <= 512 + 4 * 64, 'the rest is one question (and the document\'s partial block)');
  }
  let switches = 0;
  for (let k = 1; k < rs.length; k++) if (rs[k].ids[0] !== rs[k - 1].ids[0]) switches++;
  assert.ok(switches > rs.length / 2, `interleaved: ${switches} switches`);
});

test('doc_qa: one document length in each equal slice of doc_min..doc_max, for every seed', () => {
  const width = (30_720 - 8192 + 1) / 16;
  for (const seed of [0, 1, 2]) {
    const docs = groupBy(requests(generateWorkload('doc_qa:requests=800', { seed })), (r) => r.ids[0]);
    assert.equal(docs.size, 16);
    // a document's full blocks are what its questions share: its length to within one block
    const lengths = [...docs.values()].map((m) => commonPrefix(m) * 512).sort((a, b) => a - b);
    lengths.forEach((n, k) => assert.ok(n > 8192 + k * width - 512 && n < 8192 + (k + 1) * width, `seed ${seed}: document ${k} of ${lengths}`));
  }
});

test('no_reuse: no block is shared by two requests', () => {
  const rs = requests(generateWorkload('no_reuse:requests=1000', { seed: 5 }));
  checkWellFormed(rs);
  const all = rs.flatMap((r) => r.ids);
  assert.equal(new Set(all).size, all.length);
});

test('mixed: every tenant keeps its family\'s shape, shares as given, and tenants share nothing', () => {
  const t = generateWorkload('mixed:tenants=system_prompt/multi_turn/doc_qa/no_reuse:shares=4/3/2/1:requests=2000:doc_qa.documents=3', { seed: 6 });
  const rs = requests(t);
  assert.equal(rs.length, 2000);
  checkWellFormed(rs);
  const by = groupBy(rs, (r) => r.tenant);
  assert.deepEqual([...by.keys()].sort(), ['doc_qa', 'multi_turn', 'no_reuse', 'system_prompt']);
  assert.deepEqual(['system_prompt', 'multi_turn', 'doc_qa', 'no_reuse'].map((k) => by.get(k)!.length), [800, 600, 400, 200]);
  checkSharedPrefix(by.get('system_prompt')!, 2048, 16);
  checkGrowingSessions(by.get('multi_turn')!, 512);
  assert.equal(groupBy(by.get('doc_qa')!, (r) => r.ids[0]).size, 3, 'a tenant family\'s knob applies');
  const tenantIds = [...by.values()].map((m) => new Set(m.flatMap((r) => r.ids)));
  for (let a = 0; a < tenantIds.length; a++) {
    for (let b = a + 1; b < tenantIds.length; b++) for (const h of tenantIds[a]) assert.ok(!tenantIds[b].has(h), 'tenants share no block');
  }
  let switches = 0;
  for (let k = 1; k < rs.length; k++) if (rs[k].tenant !== rs[k - 1].tenant) switches++;
  assert.ok(switches > 500, 'tenants interleave');
  const twice = requests(generateWorkload('mixed:tenants=no_reuse/no_reuse:requests=100', { seed: 1 }));
  assert.deepEqual([...groupBy(twice, (r) => r.tenant).keys()].sort(), ['no_reuse', 'no_reuse-2']);
});

const arrays = (t: Trace): unknown => ({ ...t, timestamps: [...t.timestamps], inputLength: [...t.inputLength], outputLength: [...t.outputLength], offsets: [...t.offsets], hashIds: [...t.hashIds] });

test('every family is deterministic for a seed, and differs between seeds', () => {
  for (const name of WORKLOAD_NAMES) {
    const spec = `${name}:requests=300`;
    const a = generateWorkload(spec, { seed: 7 });
    assert.deepEqual(arrays(generateWorkload(spec, { seed: 7 })), arrays(a), name);
    assert.notDeepEqual(arrays(generateWorkload(spec, { seed: 8 })), arrays(a), name);
  }
});

test('JSONL round trip: the written trace parses back equal, sessions and tenants included', () => {
  for (const name of WORKLOAD_NAMES) {
    const t = generateWorkload(`${name}:requests=300`, { seed: 9 });
    const back = parseTrace(traceJsonl(t));
    assert.deepEqual(arrays(back), arrays(t), name);
    assert.equal(sessionOf(back, 5), t.sessions![5]);
  }
  const first = JSON.parse(traceJsonl(generateWorkload('multi_turn:requests=5')).split('\n')[0]) as Record<string, unknown>;
  assert.deepEqual(Object.keys(first), ['timestamp', 'input_length', 'output_length', 'hash_ids', 'session_id', 'tenant']);
});

test('arrivals: Poisson at the rate asked, from time 0; the default size and rate scale with the fleet', () => {
  const t = generateWorkload('no_reuse:requests=4000:rate=50', { seed: 10 });
  assert.equal(t.timestamps[0], 0);
  const rate = t.length / (t.timestamps[t.length - 1] / 1000);
  assert.ok(Math.abs(rate - 50) < 5, `rate ${rate}`);
  const gaps = Array.from({ length: t.length - 1 }, (_, k) => t.timestamps[k + 1] - t.timestamps[k]);
  const mean = gaps.reduce((a, b) => a + b, 0) / gaps.length;
  const sd = Math.sqrt(gaps.reduce((a, g) => a + (g - mean) ** 2, 0) / gaps.length);
  assert.ok(Math.abs(sd / mean - 1) < 0.1, `exponential gaps: coefficient of variation ${sd / mean}`);
  const base = FAMILIES.no_reuse.knobs.requests.default;
  assert.equal(generateWorkload('no_reuse:input=64', { scale: 0.25 }).length, base / 4);
  assert.equal(generateWorkload('no_reuse:requests=100', { scale: 8 }).length, 100, 'an explicit size is kept');
});

test('workload specs: unknown names, keys and out-of-range values are errors naming them', () => {
  assert.deepEqual(parseWorkload(' doc_qa:documents=4 ').set, { documents: 4 });
  assert.throws(() => parseWorkload('chat'), /unknown workload "chat" \(known: system_prompt, multi_turn/);
  assert.throws(() => parseWorkload('system_prompt:colour=2'), /system_prompt has no knob "colour" \(known: groups, prefix/);
  assert.throws(() => parseWorkload('system_prompt:groups=0'), /groups must be a whole number in \[1, 100000\] \(got 0\)/);
  assert.throws(() => parseWorkload('system_prompt:groups=2.5'), /whole number/);
  assert.throws(() => parseWorkload('system_prompt:prefix'), /"prefix" is not key=value/);
  assert.throws(() => parseWorkload('mixed:tenants=doc_qa/chat'), /unknown tenant family "chat"/);
  assert.throws(() => parseWorkload('mixed:tenants=doc_qa/no_reuse:shares=1'), /shares needs 2 positive numbers/);
  assert.throws(() => parseWorkload('mixed:tenants=doc_qa:no_reuse.input=5'), /unknown key "no_reuse.input"/);
  assert.throws(() => generateWorkload('doc_qa:doc_min=9000:doc_max=8000'), /doc_min 9000 exceeds doc_max 8000/);
  assert.throws(() => generateWorkload('no_reuse', { seed: 1.5 }), /seed must be a whole number/);
});
