/**
 * Workload specs and generation: `NAME[:key=value...]` (the CLI's `--workload`, the grid's
 * `--workloads` items) parsed and checked against the family's knobs, then generated into a
 * {@link Trace} deterministic for a seed. `mixed` interleaves tenants of the other families:
 * `mixed:tenants=system_prompt/doc_qa:shares=3/1:doc_qa.documents=4`.
 *
 * `requests` and `rate` default to per-8-ranks values that scale with the fleet (`scale` = ranks
 * / 8), so a 64-rank fleet gets eight times the requests at eight times the rate and is loaded
 * as much, for as long, as an 8-rank one; a value given in the spec is used as is.
 */
import { packTrace, type Trace, type TraceRow } from '../trace.js';
import { BlockIdAllocator } from './context.js';
import { partRng } from './distributions.js';
import { FAMILIES } from './families.js';
import { MAX_REQUESTS, type Family, type KnobDef } from './family.js';

/** A parsed spec. */
export interface WorkloadSpec {
  /** The spec text, trimmed (names the workload in tables). */
  label: string;
  /** A family of {@link FAMILIES}, or `mixed`. */
  family: string;
  /** Knobs the spec sets (the rest take their defaults). */
  set: Readonly<Record<string, number>>;
  /** `mixed`: each tenant's family, its share of the requests, and the knobs set for it. */
  tenants?: readonly { family: string; share: number; set: Readonly<Record<string, number>> }[];
}

/** Options of {@link generateWorkload}. */
export interface GenerateOptions {
  seed?: number;
  /** Multiplier of the scaled defaults (`requests`, `rate`): the fleet's ranks / 8 (default 1). */
  scale?: number;
}

/** Names `--workload` accepts. */
export const WORKLOAD_NAMES: readonly string[] = [...Object.keys(FAMILIES), 'mixed'];

/** The knobs of `mixed` itself (besides `FAMILY.knob` keys, which set a tenant family's knobs). */
export const MIXED_KNOBS = {
  tenants: `families of the tenants, /-separated (default ${Object.keys(FAMILIES).join('/')})`,
  shares: 'each tenant\'s share of the requests, /-separated (default equal); they need not sum to 1',
  requests: 'requests in the trace (default: the tenants\' defaults combined, so it runs about as long as one of them)',
  rate: 'base arrival rate, requests/s at speed 1 (default: the tenants\' default rates combined by their shares)',
} as const;

/** Parse `NAME[:key=value...]`; throws an Error naming what is wrong. */
export function parseWorkload(text: string): WorkloadSpec {
  const label = text.trim();
  const [name, ...kvs] = label.split(':');
  if (name !== 'mixed' && !FAMILIES[name]) throw new Error(`unknown workload "${name}" (known: ${WORKLOAD_NAMES.join(', ')})`);
  const pairs = kvs.map((kv) => {
    const eq = kv.indexOf('=');
    if (eq <= 0) throw new Error(`workload "${label}": "${kv}" is not key=value`);
    return [kv.slice(0, eq).trim(), kv.slice(eq + 1).trim()] as const;
  });
  if (name !== 'mixed') return { label, family: name, set: knobValues(name, FAMILIES[name].knobs, pairs, label) };
  const get = (k: string): string | undefined => pairs.find(([key]) => key === k)?.[1];
  const families = (get('tenants') ?? Object.keys(FAMILIES).join('/')).split('/').map((s) => s.trim());
  for (const f of families) if (!FAMILIES[f]) throw new Error(`workload "${label}": unknown tenant family "${f}" (known: ${Object.keys(FAMILIES).join(', ')})`);
  const sharesText = get('shares');
  const shares = sharesText === undefined ? families.map(() => 1) : sharesText.split('/').map(Number);
  if (shares.length !== families.length || shares.some((s) => !(Number.isFinite(s) && s > 0))) {
    throw new Error(`workload "${label}": shares needs ${families.length} positive numbers separated by /`);
  }
  for (const [k] of pairs) {
    const dot = k.indexOf('.');
    if (dot < 0 ? !(k in MIXED_KNOBS) : !families.includes(k.slice(0, dot))) {
      throw new Error(`workload "${label}": unknown key "${k}" (known: ${Object.keys(MIXED_KNOBS).join(', ')}, and FAMILY.knob for a tenant family)`);
    }
  }
  const total = shares.reduce((a, b) => a + b, 0);
  const tenants = families.map((family, i) => ({
    family, share: shares[i] / total,
    set: knobValues(family, FAMILIES[family].knobs, pairs.filter(([k]) => k.startsWith(`${family}.`)).map(([k, v]) => [k.slice(family.length + 1), v] as const), label),
  }));
  const { requests, rate } = FAMILIES.no_reuse.knobs;
  const own = knobValues('mixed', { requests, rate }, pairs.filter(([k]) => k === 'requests' || k === 'rate'), label);
  return { label, family: 'mixed', set: own, tenants };
}

/** Checked numeric values of `pairs` for the knobs `knobs` of family `name`. */
function knobValues(name: string, knobs: Readonly<Record<string, KnobDef>>, pairs: readonly (readonly [string, string])[], label: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, text] of pairs) {
    const def = knobs[k];
    if (!def) throw new Error(`workload "${label}": ${name} has no knob "${k}" (known: ${Object.keys(knobs).join(', ')})`);
    const v = Number(text);
    if (text === '' || !Number.isFinite(v) || v < def.min || v > def.max || (def.int && !Number.isInteger(v))) {
      throw new Error(`workload "${label}": ${k} must be ${def.int ? 'a whole number' : 'a number'} in [${def.min}, ${def.max}] (got ${text})`);
    }
    out[k] = v;
  }
  return out;
}

/** Every knob of `f`: the spec's value, else the default (scaled ones x `scale`). */
export function resolveKnobs(f: Family, set: Readonly<Record<string, number>>, scale: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, def] of Object.entries(f.knobs)) {
    out[k] = set[k] ?? (def.scaled ? scaledDefault(def, scale) : def.default);
  }
  return out;
}

function scaledDefault(def: KnobDef, scale: number): number {
  const v = def.default * scale;
  return def.int ? Math.min(def.max, Math.max(def.min, Math.round(v))) : v;
}

/** Generate the workload of `spec` (a spec or its text). Deterministic for (spec, seed, scale). */
export function generateWorkload(spec: WorkloadSpec | string, o: GenerateOptions = {}): Trace {
  const s = typeof spec === 'string' ? parseWorkload(spec) : spec;
  const seed = o.seed ?? 0, scale = o.scale ?? 1;
  if (!Number.isInteger(seed)) throw new Error(`seed must be a whole number (got ${seed})`);
  if (!(scale > 0 && Number.isFinite(scale))) throw new Error(`scale must be a positive number (got ${scale})`);
  const ids = new BlockIdAllocator();
  let rows: TraceRow[];
  if (!s.tenants) {
    const f = FAMILIES[s.family];
    rows = f.generate(resolveKnobs(f, s.set, scale), { rng: partRng(seed, 0), ids, tenant: f.name });
  } else {
    const tenants = s.tenants.map((t) => ({ ...t, f: FAMILIES[t.family], knobs: resolveKnobs(FAMILIES[t.family], t.set, scale) }));
    // by default the mix runs about as long as one tenant family alone: requests and rate combined harmonically
    const requests = s.set.requests ?? Math.round(1 / tenants.reduce((a, t) => a + t.share / t.knobs.requests, 0));
    const rate = s.set.rate ?? 1 / tenants.reduce((a, t) => a + t.share / t.knobs.rate, 0);
    if (requests > MAX_REQUESTS) throw new Error(`workload "${s.label}": more than ${MAX_REQUESTS} requests`);
    const named = new Map<string, number>();
    rows = tenants.flatMap((t, k) => {
      const seen = (named.get(t.family) ?? 0) + 1;
      named.set(t.family, seen);
      const knobs = { ...t.knobs, requests: Math.max(1, Math.round(requests * t.share)), rate: rate * t.share };
      return t.f.generate(knobs, { rng: partRng(seed, k + 1), ids, tenant: seen > 1 ? `${t.family}-${seen}` : t.family });
    });
    rows.sort((a, b) => a.t - b.t);
  }
  // the trace starts at 0, as Mooncake's do (microsecond times stay exact through JSONL)
  const t0 = rows.length > 0 ? rows[0].t : 0;
  for (const r of rows) r.t = Math.round((r.t - t0) * 1000) / 1000;
  return packTrace(rows);
}
