/**
 * Shape checks of generated workloads, read from the trace alone (what a replay sees): each
 * asserts the family's defining property on the requests of one tenant, so `mixed` reuses them.
 */
import assert from 'node:assert/strict';
import { TRACE_BLOCK_TOKENS, hashIdsOf, type Trace } from '../../../src/sim/trace.js';

/** A request of a trace, unpacked. */
export interface Req { i: number; t: number; input: number; output: number; ids: number[]; session?: string; tenant?: string }

export function requests(trace: Trace, tenant?: string): Req[] {
  const out: Req[] = [];
  for (let i = 0; i < trace.length; i++) {
    const r = {
      i, t: trace.timestamps[i], input: trace.inputLength[i], output: trace.outputLength[i], ids: Array.from(hashIdsOf(trace, i)),
      session: trace.sessions?.[i], tenant: trace.tenants?.[i],
    };
    if (tenant === undefined || r.tenant === tenant) out.push(r);
  }
  return out;
}

const full = (tokens: number): number => Math.floor(tokens / TRACE_BLOCK_TOKENS);

/** Requests grouped by key, in trace order. */
export function groupBy<K>(rs: readonly Req[], key: (r: Req) => K): Map<K, Req[]> {
  const m = new Map<K, Req[]>();
  for (const r of rs) m.set(key(r), [...(m.get(key(r)) ?? []), r]);
  return m;
}

/** Every request: as many ids as 512-token blocks, time order. */
export function checkWellFormed(rs: readonly Req[]): void {
  for (const r of rs) assert.equal(r.ids.length, Math.ceil(r.input / TRACE_BLOCK_TOKENS), `request ${r.i}: one id per block`);
  for (let k = 1; k < rs.length; k++) assert.ok(rs[k].t >= rs[k - 1].t, 'time order');
}

/** Ids that appear in more than one request. */
function sharedIds(rs: readonly Req[]): Set<number> {
  const seen = new Set<number>(), shared = new Set<number>();
  for (const r of rs) for (const h of new Set(r.ids)) (seen.has(h) ? shared : seen).add(h);
  return shared;
}

/**
 * Groups sharing a `prefix`-token system prompt: within a group (its first id) every request
 * carries the same `prefix / 512` leading ids and nothing else shared; `groups` groups at most.
 * Returns the group sizes, most popular first.
 */
export function checkSharedPrefix(rs: readonly Req[], prefix: number, groups: number): number[] {
  const n = full(prefix);
  const byGroup = groupBy(rs, (r) => r.ids[0]);
  assert.ok(byGroup.size <= groups, `${byGroup.size} groups <= ${groups}`);
  for (const members of byGroup.values()) {
    for (const r of members) {
      assert.ok(r.input > prefix, 'a question follows the prefix');
      assert.deepEqual(r.ids.slice(0, n), members[0].ids.slice(0, n), 'the group shares its prefix blocks');
    }
  }
  // beyond the prefixes, nothing is shared: questions are unique
  const prefixIds = new Set([...byGroup.values()].flatMap((m) => m[0].ids.slice(0, n)));
  for (const h of sharedIds(rs)) assert.ok(prefixIds.has(h), `id ${h} shared outside a prefix`);
  return [...byGroup.values()].map((m) => m.length).sort((a, b) => b - a);
}

/**
 * Sessions whose context grows: each request of a session (time order) starts with every full
 * block of the previous one's prompt, and is at least that prompt plus its answer long. The
 * first `common` tokens (a system or tool prefix) are the same for every session sharing the
 * first id. Returns the number of requests per session.
 */
export function checkGrowingSessions(rs: readonly Req[], common: number): number[] {
  const sessions = groupBy(rs, (r) => r.session);
  assert.ok(!sessions.has(undefined), 'every request names its session');
  for (const [s, turns] of sessions) {
    for (let k = 1; k < turns.length; k++) {
      const prev = turns[k - 1], cur = turns[k];
      assert.ok(cur.t > prev.t, `session ${s}: turns are apart in time`);
      assert.ok(cur.input > prev.input + prev.output, `session ${s}: context grows by the answer and a new message`);
      assert.deepEqual(cur.ids.slice(0, full(prev.input)), prev.ids.slice(0, full(prev.input)), `session ${s}: keeps the previous prompt's full blocks`);
      assert.notEqual(cur.ids[full(prev.input)], prev.ids[full(prev.input)], `session ${s}: the grown last block is new content`);
    }
  }
  for (const members of groupBy(rs, (r) => r.ids[0]).values()) {
    for (const r of members) assert.deepEqual(r.ids.slice(0, full(common)), members[0].ids.slice(0, full(common)), 'the common prefix is shared');
  }
  return [...sessions.values()].map((t) => t.length);
}
