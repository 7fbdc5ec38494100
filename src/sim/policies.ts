/**
 * The routing policies a simulation compares, and how each becomes a SelectionCore setup.
 *
 * `kv` is the core's built-in default selector (Dynamo `lib/kv-router/src/scheduling/selector/default.rs`), tuned through the router
 * configuration (`overlap_score_credit`, `prefill_load_scale`, `router_temperature`); every other
 * named routing policy of the core (`ttft`, the peers' routers: `--routing-policy NAME`,
 * select/routing-policy.ts) runs exactly as the service runs it, with its own parameters
 * (`ttft:spread_secs=0`). Every other
 * policy goes through the one custom-policy mechanism of the core (Dynamo `lib/kv-router/src/services/selection/service.rs`: filters → scorers →
 * picker, registered by type name and chosen with `DYN_ROUTER_WORKER_SELECTION_POLICY`): round
 * robin and random are pickers, least loaded and a user-written scorer are scorers. Session
 * affinity is the default cost with the core's own binding tables (Dynamo `lib/kv-router/src/services/selection/affinity.rs`) switched on.
 *
 * A spec string is `name` or `name:key=value:key=value`, e.g. `kv:overlap_score_credit=0.5`.
 */
import type { RouterConfig } from '../core/config/config.js';
import { PolicyRegistry, WorkerInputs, type PolicyFactory, type WorkerPicker, type WorkerScorer } from '../core/select/policy.js';
import { pickByCost } from '../core/select/selector.js';
import type { SessionAffinityConfig } from '../core/options.js';
import { EXAMPLE_SCORER, compileScorer } from './custom-scorer.js';
import { ROUTING_POLICIES, isRoutingPolicy, paramValues, policyParams } from '../core/select/routing-policy.js';

/** The simulator's own policies (the core's named routing policies are the others). */
const SIM_KINDS = ['round_robin', 'random', 'least_loaded', 'session_affinity', 'custom'] as const;
/** Policy kinds: every named routing policy of the core, then the simulator's baselines. */
export const POLICY_KINDS = Object.freeze([...ROUTING_POLICIES, ...SIM_KINDS]);
export type PolicyKind = (typeof POLICY_KINDS)[number];

/** One policy of a comparison. */
export interface PolicySpec {
  /** Label in results (the spec string). */
  label: string;
  kind: PolicyKind;
  /** Cost parameters (snake_case names of `dynamo-default-cost-fn`) and `ttl_secs` for affinity. */
  params: Readonly<Record<string, number>>;
}

/** Default cost knobs every kv-based policy starts from (CLI flags / page fields set them). */
export interface CostKnobs { overlapScoreCredit: number; prefillLoadScale: number; routerTemperature: number }

/** Parameters of `kv` and the simulator's kv-based policies (named policies have their own tables). */
const PARAM_NAMES = new Set(['overlap_score_credit', 'prefill_load_scale', 'router_temperature', 'ttl_secs', 'soft']);

/** Parse `kv,round_robin,kv:overlap_score_credit=0.5`; throws an Error naming a bad entry. */
export function parsePolicies(list: string): PolicySpec[] {
  const specs = list.split(',').map((s) => s.trim()).filter((s) => s.length > 0).map(parsePolicy);
  if (specs.length === 0) throw new Error('no policies given');
  const seen = new Set<string>();
  for (const s of specs) {
    if (seen.has(s.label)) throw new Error(`policy "${s.label}" is listed twice`);
    seen.add(s.label);
  }
  return specs;
}

function parsePolicy(text: string): PolicySpec {
  const [kind, ...kvs] = text.split(':');
  if (!(POLICY_KINDS as readonly string[]).includes(kind)) {
    throw new Error(`unknown policy "${kind}" (known: ${POLICY_KINDS.join(', ')})`);
  }
  const params: Record<string, number> = {};
  // a named routing policy other than kv: its own parameter table, as --routing-policy parses it
  if (kind !== 'kv' && isRoutingPolicy(kind)) {
    const given = paramValues(kvs);
    try { policyParams(kind, given); } catch (err) { throw new Error(`policy "${text}": ${(err as Error).message}`); }
    return { label: text, kind, params: given };
  }
  for (const kv of kvs) {
    const [k, v] = kv.split('=');
    const n = Number(v);
    if (!PARAM_NAMES.has(k) || v === undefined || !Number.isFinite(n) || n < 0) {
      throw new Error(`policy "${text}": bad parameter "${kv}" (known: ${[...PARAM_NAMES].join(', ')}; non-negative numbers)`);
    }
    params[k] = n;
  }
  return { label: text, kind: kind as PolicyKind, params };
}

/** What a core needs to route with one policy. */
export interface PolicySetup {
  /** Router configuration overrides (cost knobs, the policy type name). */
  overrides: Partial<RouterConfig>;
  policies?: PolicyRegistry;
  /** The core's session-affinity tables (Dynamo `lib/kv-router/src/services/selection/affinity.rs`), for `session_affinity`. */
  sessionAffinity?: SessionAffinityConfig;
}

/** Options of {@link policySetup}. */
export interface SetupOptions {
  knobs: CostKnobs;
  /** The `custom` policy's scorer (default: {@link EXAMPLE_SCORER}). */
  scorer?: WorkerScorer;
}

/** The core setup of `spec`. */
export function policySetup(spec: PolicySpec, o: SetupOptions): PolicySetup {
  const p = spec.params;
  const knobs: CostKnobs = {
    overlapScoreCredit: p.overlap_score_credit ?? o.knobs.overlapScoreCredit,
    prefillLoadScale: p.prefill_load_scale ?? o.knobs.prefillLoadScale,
    routerTemperature: p.router_temperature ?? o.knobs.routerTemperature,
  };
  if (spec.kind === 'kv') return { overrides: { ...knobs } };
  // the core's named policies (--routing-policy NAME), their parameters in the same syntax
  if (isRoutingPolicy(spec.kind)) {
    return { overrides: { routingPolicy: [spec.kind, ...Object.entries(p).map(([k, v]) => `${k}=${v}`)].join(':') } };
  }
  // the default cost routed through the core's own binding tables: `ttl_secs` (default 300),
  // `soft=1` for soft mode; sessions are the trace's conversations
  if (spec.kind === 'session_affinity') {
    return { overrides: { ...knobs }, sessionAffinity: { ttlSecs: p.ttl_secs ?? 300, mode: p.soft ? 'soft' : 'hard' } };
  }
  const factory: PolicyFactory = simpleFactory(spec.kind, o.scorer);
  const type = `sim-${spec.kind}`;
  return { overrides: { workerSelectionPolicy: type }, policies: new PolicyRegistry().register(type, factory) };
}

/** The lowest cost, ties broken uniformly (the default picker at temperature 0). */
export const minCostPicker: WorkerPicker = {
  requiredWorkerInputs: () => WorkerInputs.NONE,
  pick: (_ctx, rows, rng) => pickByCost(Float64Array.from(rows, (r) => r.cost()), rows.length, 0, rng),
};

/** Least loaded: the load terms of the default cost without any cache credit. */
export const leastLoadedScorer: WorkerScorer = {
  requiredWorkerInputs: () => WorkerInputs.LOAD,
  score(ctx, cands, out) {
    const bs = ctx.blockSize();
    for (let i = 0; i < cands.length; i++) out[i] = cands[i].activePrefillTokens() / bs + cands[i].decodeCostBlocks();
  },
};

function simpleFactory(kind: PolicyKind, scorer: WorkerScorer | undefined): PolicyFactory {
  return () => {
    switch (kind) {
      case 'round_robin': {
        let next = 0;
        return { filters: [], scorers: [], picker: { pick: (_c, rows) => next++ % rows.length } };
      }
      case 'random':
        return { filters: [], scorers: [], picker: { pick: (_c, rows, rng) => Math.floor(rng.next() * rows.length) } };
      case 'least_loaded':
        return { filters: [], scorers: [leastLoadedScorer], picker: minCostPicker };
      default:
        return { filters: [], scorers: [scorer ?? compileScorer(EXAMPLE_SCORER)], picker: minCostPicker };
    }
  };
}
