/**
 * The routing policies the service offers by name (`--routing-policy`,
 * `SELECT_SERVICE_ROUTING_POLICY`) and their parameters: `kv`, Dynamo's cost function (the
 * default), `ttft` (select/ttft.ts), and the policies of the routers users would otherwise run,
 * implemented on the core (select/peers/). The syntax is `name` or `name:key=value:key=value`.
 * No imports, so the configuration schema can validate a name without depending on the policies
 * (select/named-policies.ts builds them).
 */

/** Parameters of the `ttft` policy and their defaults (select/ttft.ts says what each weighs). */
export const TTFT_DEFAULTS = Object.freeze({
  delay_weight: 1,
  evict_weight: 0.5,
  tie_tolerance: 0.15,
  spread_secs: 45,
  // load/ttft-model.ts RANK_FACTOR_SE (no imports here)
  factor_se: 3,
});
export type TtftParams = { -readonly [K in keyof typeof TTFT_DEFAULTS]: number };

/**
 * Parameters of `ray_prefix_affinity` (select/peers/ray-prefix-affinity.ts): Ray Serve LLM's
 * `PrefixCacheAffinityRouter.initialize_state` defaults (Ray 2.58.0), its character counts as
 * tokens (4 characters a token); `do_eviction` is 0 or 1.
 */
export const RAY_PREFIX_AFFINITY_DEFAULTS = Object.freeze({
  imbalanced_threshold: Infinity,
  match_rate_threshold: 0.1,
  do_eviction: 0,
  eviction_threshold_tokens: 100_000,
  eviction_target_tokens: 90_000,
  eviction_interval_secs: 10,
});

/**
 * One named policy's parameters: defaults, and the rules beyond "a finite number >= 0" that some
 * of them obey (`positive`: not 0; `fraction`: at most 1; `integer`; `unbounded`: may also be
 * `inf`, i.e. off).
 */
export interface PolicyParamTable {
  readonly defaults: Readonly<Record<string, number>>;
  readonly positive?: readonly string[];
  readonly fraction?: readonly string[];
  readonly integer?: readonly string[];
  /** Lower bounds above 0 (the peer rejects values below them). */
  readonly min?: Readonly<Record<string, number>>;
  /** Parameters that may also be `inf` (unbounded). */
  readonly unbounded?: readonly string[];
}

/** Every named policy and its parameter table (`kv` takes its settings from `DYN_ROUTER_*`). */
export const ROUTING_POLICY_PARAMS = Object.freeze({
  kv: { defaults: {} },
  ttft: { defaults: TTFT_DEFAULTS },
  // llm-d's precise-prefix-cache-aware guide (select/peers/llmd.ts): its three scorer weights, the
  // KV-cache backend weights of llm-d-kv-cache, and 1 for v0.8.0's min-max prefix normalisation
  llmd: {
    defaults: { prefix_weight: 2, kv_weight: 1, queue_weight: 1, cpu_weight: 0.8, disk_weight: 1, prefix_min_max: 0 },
    fraction: ['cpu_weight', 'disk_weight', 'prefix_min_max'], integer: ['prefix_min_max'],
  },
  // SGLang's router (select/peers/sglang-cache-aware.ts): smg model_gateway/src/main.rs 193-225, validation.rs 484-513
  sglang_cache_aware: {
    defaults: { cache_threshold: 0.3, balance_abs_threshold: 64, balance_rel_threshold: 1.5, eviction_interval_secs: 120, max_tree_size: 2 ** 26 },
    fraction: ['cache_threshold'], positive: ['eviction_interval_secs', 'max_tree_size'],
    integer: ['balance_abs_threshold', 'eviction_interval_secs', 'max_tree_size'], min: { balance_rel_threshold: 1 },
  },
  // Ray Serve LLM's PrefixCacheAffinityRouter (select/peers/ray-prefix-affinity.ts)
  ray_prefix_affinity: {
    defaults: RAY_PREFIX_AFFINITY_DEFAULTS, fraction: ['match_rate_threshold', 'do_eviction'],
    integer: ['do_eviction', 'eviction_threshold_tokens', 'eviction_target_tokens'], unbounded: ['imbalanced_threshold'],
  },
} satisfies Record<string, PolicyParamTable>);

/** Routing policies the service offers by name. */
export type RoutingPolicyKind = keyof typeof ROUTING_POLICY_PARAMS;
export const ROUTING_POLICIES = Object.freeze(Object.keys(ROUTING_POLICY_PARAMS)) as readonly RoutingPolicyKind[];

/** Whether `name` names a routing policy. */
export const isRoutingPolicy = (name: string): name is RoutingPolicyKind => Object.hasOwn(ROUTING_POLICY_PARAMS, name);

/**
 * `kind[:name=value...]` (the flag / variable syntax). Throws an Error naming what is wrong: an
 * unknown policy, an unknown parameter, a value that is not a finite number >= 0 (or breaks its
 * parameter's rule).
 */
export function parseRoutingPolicy(text: string): { kind: RoutingPolicyKind; params: Record<string, number> } {
  const [kind, ...kvs] = text.trim().split(':');
  if (!isRoutingPolicy(kind)) throw new Error(`unknown routing policy "${kind}" (known: ${ROUTING_POLICIES.join(', ')})`);
  if (kind === 'kv' && kvs.length > 0) throw new Error('routing policy kv takes no parameters here (use the DYN_ROUTER_* cost settings)');
  return { kind, params: policyParams(kind, paramValues(kvs)) };
}

/** `key=value` texts as numbers (`inf` and `Infinity` are Infinity; a missing value is NaN). */
export function paramValues(kvs: readonly string[]): Record<string, number> {
  return Object.fromEntries(kvs.map((kv) => {
    const [k, v] = kv.split('=');
    return [k, v === undefined || v === '' ? NaN : v === 'inf' ? Infinity : Number(v)];
  }));
}

/** `given` over `kind`'s defaults; throws an Error naming an unknown or bad parameter. */
export function policyParams(kind: RoutingPolicyKind, given: Readonly<Record<string, unknown>>): Record<string, number> {
  const t: PolicyParamTable = ROUTING_POLICY_PARAMS[kind];
  const p: Record<string, number> = { ...t.defaults };
  for (const [k, v] of Object.entries(given)) {
    if (!Object.hasOwn(t.defaults, k)) {
      const known = Object.keys(t.defaults);
      throw new Error(`${kind}: unknown parameter "${k}" (known: ${known.length > 0 ? known.join(', ') : 'none'})`);
    }
    const positive = t.positive?.includes(k) ?? false, fraction = t.fraction?.includes(k) ?? false, integer = t.integer?.includes(k) ?? false;
    const min = t.min?.[k] ?? 0;
    const unbounded = (t.unbounded?.includes(k) ?? false) && v === Infinity;
    if (typeof v !== 'number' || (!Number.isFinite(v) && !unbounded) || v < min || (positive && v === 0) || (fraction && v > 1) || (integer && !unbounded && !Number.isInteger(v))) {
      const rule = `${integer ? 'an integer' : 'a finite number'} ${fraction ? 'in [0, 1]' : `>= ${min}`}${positive ? ', not 0' : ''}${t.unbounded?.includes(k) ? ', or inf' : ''}`;
      throw new Error(`${kind}: parameter "${k}" must be ${rule} (got ${String(v)})`);
    }
    p[k] = v;
  }
  return p;
}

/** The `ttft` parameters over its defaults; throws an Error naming an unknown or bad one. */
export function ttftParams(given: Readonly<Record<string, unknown>>): TtftParams {
  return policyParams('ttft', given) as TtftParams;
}
