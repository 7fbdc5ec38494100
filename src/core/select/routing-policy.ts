/**
 * The routing policies the service offers by name (`--routing-policy`,
 * `SELECT_SERVICE_ROUTING_POLICY`): `kv`, Dynamo's cost function (the default), or `ttft`
 * (select/ttft.ts) with its parameters, `ttft:name=value:name=value`. No imports, so the
 * configuration schema can validate the name without depending on the policies.
 */

/** Parameters of the `ttft` policy and their defaults. */
export const TTFT_DEFAULTS = Object.freeze({
  prior_tokens_per_sec: 10_000,
  prior_weight_tokens: 50_000,
  decode_weight: 1,
  memory_weight: 1,
  memory_threshold: 0.9,
  backlog_weight: 60,
  session_weight: 0.25,
  evict_weight: 0.5,
  tie_tolerance: 0.05,
});
export type TtftParams = { -readonly [K in keyof typeof TTFT_DEFAULTS]: number };

/** Routing policies the service offers by name. */
export const ROUTING_POLICIES = ['kv', 'ttft'] as const;
export type RoutingPolicyKind = (typeof ROUTING_POLICIES)[number];

/**
 * `kv` or `ttft[:name=value...]` (the flag / variable syntax). Throws an Error naming what is
 * wrong: an unknown policy, an unknown parameter, a value that is not a finite number >= 0
 * (`prior_tokens_per_sec` > 0).
 */
export function parseRoutingPolicy(text: string): { kind: RoutingPolicyKind; params: TtftParams } {
  const [kind, ...kvs] = text.trim().split(':');
  if (!(ROUTING_POLICIES as readonly string[]).includes(kind)) throw new Error(`unknown routing policy "${kind}" (known: ${ROUTING_POLICIES.join(', ')})`);
  if (kind === 'kv' && kvs.length > 0) throw new Error('routing policy kv takes no parameters here (use the DYN_ROUTER_* cost settings)');
  return { kind: kind as RoutingPolicyKind, params: ttftParams(Object.fromEntries(kvs.map((kv) => { const [k, v] = kv.split('='); return [k, v === undefined ? NaN : Number(v)]; }))) };
}

/** Parameters over the defaults; throws an Error naming an unknown or bad one. */
export function ttftParams(given: Readonly<Record<string, unknown>>): TtftParams {
  const p: TtftParams = { ...TTFT_DEFAULTS };
  for (const [k, v] of Object.entries(given)) {
    if (!(k in TTFT_DEFAULTS)) throw new Error(`ttft: unknown parameter "${k}" (known: ${Object.keys(TTFT_DEFAULTS).join(', ')})`);
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || (k === 'prior_tokens_per_sec' && v === 0)) {
      throw new Error(`ttft: parameter "${k}" must be a finite number >= 0${k === 'prior_tokens_per_sec' ? ', not 0' : ''} (got ${String(v)})`);
    }
    p[k as keyof TtftParams] = v;
  }
  return p;
}

