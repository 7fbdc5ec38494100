/**
 * Router configuration: ONE zod schema turns the decoded env (`config-env.ts`) plus CLI overrides
 * into a validated, frozen {@link RouterConfig}; failure lists every problem (fastify style).
 * Isomorphic: no `node:` imports and no `process.env` (the Node entry passes the record).
 *
 * Deviation from Dynamo (`lib/kv-router/src/scheduling/config.rs`), by product rule "an invalid value fails start-up with a
 * message naming the variable": Dynamo ignores an unparsable float/int and an unrecognised
 * boolean and keeps the default. Here a variable that is PRESENT but unparsable is an error
 * naming the variable — a typo such as `DYN_ROUTER_TEMPERATURE=0,5` would otherwise run with a
 * silently different policy. Two exceptions keep the spec's explicit leniency:
 * `DYN_ROUTER_ACTIVE_REQUEST_EXPIRY_SECS` (non-numeric or 0 -> 300, Dynamo `lib/bindings/python/rust/llm/kv.rs`) and
 * `DYN_ROUTER_CONDITIONAL_DISAGG_POLICY` (bad value ignored). Empty variables count as unset.
 * Numbers, booleans and enum values are trimmed before parsing; enums stay case-sensitive.
 * Non-finite numbers (`inf`, `nan`) parse but fail validation.
 */
import * as z from 'zod';
import { CONFIG_FIELDS, ENUM_VALUES, ENV_VARS, decodeEnv, type ConfigField } from './config-env.js';
import { show as quote } from '../wire/show.js';
import { parseRoutingPolicy } from '../select/routing-policy.js';

/** Why a routing-policy name does not parse, or null. */
function routingPolicyProblem(v: string): string | null {
  try { parseRoutingPolicy(v); return null; } catch (err) { return (err as Error).message; }
}

/** The service's router configuration (Dynamo `lib/kv-router/src/scheduling/config.rs` `KvRouterConfig` fields + service values). */
export interface RouterConfig {
  readonly overlapScoreCredit: number;
  readonly overlapScoreCreditDecay: number;
  readonly prefillLoadScale: number;
  readonly decodeActiveRequestWeight: number;
  readonly routerTemperature: number;
  readonly useKvEvents: boolean;
  readonly routerReplicaSync: boolean;
  readonly routerTrackActiveBlocks: boolean;
  readonly routerTrackOutputBlocks: boolean;
  readonly routerAssumeKvReuse: boolean;
  readonly routerTrackPrefillTokens: boolean;
  readonly routerTrackingHash: 'public-xxh3-v1' | 'keyed-xxh3-v1';
  readonly routerTrackingKeyFile: string | null;
  readonly routerTrackingKeyId: string | null;
  readonly routerQueueThreshold: number | null;
  /** Path of the policy-class YAML; reading/parsing it is the Node side's job. */
  readonly routerPolicyConfig: string | null;
  readonly routerPrefillPolicy: string | null;
  readonly routerDecodePolicy: string | null;
  readonly conditionalDisaggEnabled: boolean;
  readonly conditionalDisaggPolicy: 'isl_bounding' | 'prefill_load' | 'isl_or_load';
  readonly conditionalDisaggEffIslThreshold: number;
  readonly conditionalDisaggEffIslRatioThreshold: number;
  readonly conditionalDisaggPrefillBusyThreshold: number | null;
  readonly conditionalDisaggDecodeBusyThreshold: number | null;
  readonly routerPredictedTtlSecs: number | null;
  readonly routerApproximateCachePolicy: 'ttl' | 'lru';
  readonly routerTtlSecs: number;
  readonly routerEventThreads: number;
  readonly routerQueuePolicy: 'fcfs' | 'lcfs' | 'wspt';
  readonly useRemoteIndexer: boolean;
  readonly sharedCacheMultiplier: number;
  readonly sharedCacheType: 'none' | 'hicache';
  readonly hostCacheHitWeight: number;
  readonly diskCacheHitWeight: number;
  readonly routerPrefillLoadModel: 'none' | 'aic';
  readonly routerActiveSequenceStride: number;
  /** Absolute-age expiry of bookings (Dynamo `lib/kv-router/src/services/selection/core/reservations.rs`), seconds. */
  readonly activeRequestExpirySecs: number;
  /** Dequeue-time overlap refresh age (Dynamo `lib/kv-router/src/scheduling/queue.rs`), seconds; 0 disables. */
  readonly overlapRefreshAfterSecs: number;
  /** `DYN_ROUTER_WORKER_SELECTION_POLICY` (trimmed; `default` = built-in selector). */
  readonly workerSelectionPolicy: string | null;
  /** `SELECT_SERVICE_ROUTING_POLICY`: `kv` (null, the default), `ttft` or `sglang_cache_aware`, with `[:name=value...]` (select/routing-policy.ts). */
  readonly routingPolicy: string | null;
}

/** Fixed limits with the spec's defaults (Dynamo `lib/kv-router/src/services/selection/server.rs`, `lib/kv-router/src/services/selection/core/reservations.rs`, `lib/kv-router/src/services/common/replica_sync.rs`, `lib/kv-router/src/services/indexer/server.rs`, `lib/kv-router/src/services/selection/affinity.rs`; Dynamo `lib/kv-router/src/approx.rs`, `lib/kv-router/src/scheduling/queue.rs`). */
export const LIMITS = Object.freeze({
  requestBodyLimitBytes: 8 * 1024 * 1024,
  selectionCacheTtlSecs: 120, selectionCacheMaxEntries: 4096, selectionCacheMaxBytes: 268435456,
  replicaLifecycleQueue: 100000, replicaAffinityQueue: 4096, replicaBatchMax: 256, replicaBatchMs: 1,
  // The mesh beyond Dynamo (docs/replicas.md): anti-entropy digests every second; ZMQ queues of
  // 10,000 messages per peer each way (ZMQ's default is 1,000: 5 s at 200 events/s); /ready waits
  // up to 30 s for the mesh; freed ids remembered for the expiry window (a free missed for less
  // than that is repaired), at most 100,000 of them in 32 MiB; 10,000 anti-entropy messages queued.
  replicaDigestIntervalMs: 1000, replicaSendHwm: 10000, replicaReceiveHwm: 10000, replicaReadyTimeoutSecs: 30,
  replicaTombstoneTtlSecs: 300, replicaMaxTombstones: 100000, replicaTombstoneMaxBytes: 32 * 1024 * 1024, replicaRepairQueue: 10000,
  sessionAffinityMaxEntries: 65536, sessionIdMaxBytes: 256,
  sessionAffinityTtlMinSecs: 1, sessionAffinityTtlMaxSecs: 31536000, affinityReapMaxSecs: 30,
  expirySweepSecs: 60, queueRecheckSecs: 60,
  // how freed, expired and released bookings ended, kept per id for the expiry window (their 404 says so)
  endedReservationsMaxEntries: 65536, endedReservationsMaxBytes: 8 * 1024 * 1024,
  approximateMaxTreeSize: 2 ** 20, approximatePruneTargetRatio: 0.8,
  recoveryDelayMs: 1000, recoveryTimeoutMs: 10000, discoveryRetryMs: 5000,
  // Request shape (README "Limits"): a value above one is a 422 naming the field and the limit.
  maxStringChars: 4096, maxDataParallelSize: 1024, maxDataParallelStartRank: 65535, maxBlockSize: 65536,
  maxTaints: 64, maxMapEntries: 64, maxAllowedWorkerIds: 65536, maxMmObjectsPerBlock: 64, maxPromptItems: 4194304,
  // Capacity (configurable, README "Limits"): defaults, and the wasm index handles partitions share.
  // (prompt blocks: bench/RESULTS.md "Prompt size"; fewer where bookings are also recorded into an index)
  defaultMaxPromptBlocks: 16384, defaultMaxPromptBlocksRecorded: 4096, defaultMaxBookings: 262144, wasmIndexHandles: 4096,
  // HTTP transport: the whole request must arrive within (408), an idle socket closes after (0 = never).
  requestTimeoutMs: 30000, connectionTimeoutMs: 600000,
  // After an answer given before the request was read in full (413, 415, 401, 408, ...): the rest
  // is read and discarded up to this many bytes and ms, then the socket closes (http/lingering-close.ts).
  drainMaxBytes: 4 * 8 * 1024 * 1024, drainMaxMs: 30000,
});

/** A value in a problem line: env strings quoted, a bigint as `5n`, anything else briefly and safely (wire/show.ts). */
const show = (v: unknown): string => (typeof v === 'bigint' ? `${v}n` : quote(v));

/** A finite number satisfying `rule`; messages read `must be >= 0 (got -1)`. */
function num(rule: (v: number) => boolean, what: string) {
  return z
    .number({ error: (i) => `must be a ${typeof i.input === 'number' ? 'finite ' : ''}number (got ${show(i.input)})` })
    .refine(rule, { error: (i) => `${what} (got ${show(i.input)})` });
}
const nonNeg = () => num((v) => v >= 0, 'must be >= 0');
const unit = () => num((v) => v >= 0 && v <= 1, 'must be between 0 and 1');
const int = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  num((v) => Number.isInteger(v) && v >= min && v <= max, `must be an integer between ${min} and ${max}`);
const bool = () => z.boolean({ error: (i) => `must be a boolean (got ${show(i.input)})` });
const str = () => z.string({ error: (i) => `must be a string (got ${show(i.input)})` }).nullable().default(null);
const oneOf = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, { error: (i) => `must be one of ${values.join(', ')} (got ${show(i.input)})` });

/** The one schema: every field, its type, range and default, plus the cross-field rules. */
export const RouterConfigSchema = z
  .object({
    overlapScoreCredit: nonNeg().default(1.0),
    overlapScoreCreditDecay: nonNeg().default(0.0),
    prefillLoadScale: nonNeg().default(1.0),
    decodeActiveRequestWeight: nonNeg().default(0.0),
    routerTemperature: nonNeg().default(0.0),
    useKvEvents: bool().default(true),
    routerReplicaSync: bool().default(false),
    routerTrackActiveBlocks: bool().default(true),
    routerTrackOutputBlocks: bool().default(false),
    routerAssumeKvReuse: bool().default(true),
    routerTrackPrefillTokens: bool().default(true),
    routerTrackingHash: oneOf(ENUM_VALUES.routerTrackingHash).default('public-xxh3-v1'),
    routerTrackingKeyFile: str(),
    routerTrackingKeyId: str(),
    routerQueueThreshold: nonNeg().nullable().default(null),
    routerPolicyConfig: str(),
    routerPrefillPolicy: str(),
    routerDecodePolicy: str(),
    conditionalDisaggEnabled: bool().default(false),
    conditionalDisaggPolicy: oneOf(ENUM_VALUES.conditionalDisaggPolicy).default('isl_bounding'),
    conditionalDisaggEffIslThreshold: int(0).default(2048),
    conditionalDisaggEffIslRatioThreshold: unit().default(0.7),
    conditionalDisaggPrefillBusyThreshold: nonNeg().nullable().default(null),
    conditionalDisaggDecodeBusyThreshold: nonNeg().nullable().default(null),
    routerPredictedTtlSecs: nonNeg().nullable().default(null),
    routerApproximateCachePolicy: oneOf(ENUM_VALUES.routerApproximateCachePolicy).default('ttl'),
    routerTtlSecs: nonNeg().default(120.0),
    routerEventThreads: int(1, 0xffffffff).default(4),
    routerQueuePolicy: oneOf(ENUM_VALUES.routerQueuePolicy).default('fcfs'),
    useRemoteIndexer: bool().default(false),
    sharedCacheMultiplier: unit().default(0.0),
    sharedCacheType: oneOf(ENUM_VALUES.sharedCacheType).default('none'),
    hostCacheHitWeight: unit().default(0.75),
    diskCacheHitWeight: unit().default(0.25),
    routerPrefillLoadModel: oneOf(ENUM_VALUES.routerPrefillLoadModel).default('none'),
    routerActiveSequenceStride: int(1).default(1),
    activeRequestExpirySecs: num((v) => v > 0, 'must be > 0').default(300),
    overlapRefreshAfterSecs: nonNeg().default(10),
    workerSelectionPolicy: str(),
    routingPolicy: str().refine((v) => v === null || routingPolicyProblem(v) === null, { error: (i) => `${routingPolicyProblem(String(i.input))} (got ${show(i.input)})` }),
  })
  .strict()
  .superRefine(
    (c, ctx) => {
      const bad = (field: ConfigField, message: string): void => {
        ctx.addIssue({ code: 'custom', path: [field], message });
      };
      if (c.routerTrackOutputBlocks === true && c.routerTrackActiveBlocks === false) {
        bad('routerTrackOutputBlocks', 'router_track_output_blocks requires router_track_active_blocks=true');
      }
      if (c.routerPredictedTtlSecs != null && c.useKvEvents === false) {
        bad('routerPredictedTtlSecs', 'router_predicted_ttl_secs requires use_kv_events=true');
      }
      if (c.routerApproximateCachePolicy === 'lru' && c.useKvEvents === true) {
        bad('routerApproximateCachePolicy', 'router_approximate_cache_policy=lru requires use_kv_events=false');
      }
      if (c.routerPrefillLoadModel === 'aic' && c.routerTrackPrefillTokens === false) {
        bad('routerPrefillLoadModel', 'router_prefill_load_model=aic requires router_track_prefill_tokens=true');
      }
      const loadPolicy = c.conditionalDisaggPolicy === 'prefill_load' || c.conditionalDisaggPolicy === 'isl_or_load';
      if (c.conditionalDisaggEnabled === true && loadPolicy
        && c.conditionalDisaggPrefillBusyThreshold == null && c.routerQueueThreshold == null) {
        bad('conditionalDisaggPolicy', `conditional_disagg_policy=${c.conditionalDisaggPolicy} needs a prefill busy threshold: `
          + `set ${ENV_VARS.conditionalDisaggPrefillBusyThreshold} or ${ENV_VARS.routerQueueThreshold}`);
      }
      const keyFile = c.routerTrackingKeyFile;
      const keyId = c.routerTrackingKeyId;
      if (c.routerTrackingHash === 'public-xxh3-v1') {
        const msg = 'router tracking key options require router_tracking_hash=keyed-xxh3-v1';
        if (keyFile != null) bad('routerTrackingKeyFile', msg);
        if (keyId != null) bad('routerTrackingKeyId', msg);
      } else if (c.routerTrackingHash === 'keyed-xxh3-v1') {
        if (keyFile == null) bad('routerTrackingKeyFile', 'keyed-xxh3-v1 requires router_tracking_key_file');
        if (keyId == null) bad('routerTrackingKeyId', 'keyed-xxh3-v1 requires router_tracking_key_id');
      }
      if (keyFile === '') bad('routerTrackingKeyFile', 'must not be empty');
      if (typeof keyId === 'string' && (keyId === '' || keyId.trim() !== keyId)) {
        bad('routerTrackingKeyId', `must be non-empty without surrounding whitespace (got ${show(keyId)})`);
      }
    },
    { when: () => true }, // run the cross-field rules even when a field failed: list every problem
  );

// Compile-time proof that the schema and the interface describe the same object.
type SchemaOut = z.output<typeof RouterConfigSchema>;
const _sameShape: [SchemaOut extends RouterConfig ? true : false, RouterConfig extends SchemaOut ? true : false] = [true, true];
void _sameShape;

/** Start-up configuration failure; `problems` holds one `NAME: message` line per problem. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super(`invalid router configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.problems = Object.freeze([...problems]);
  }
}

/** How a CLI-overridden field is named in messages (Dynamo `lib/bindings/python/rust/llm/kv.rs` flags); others use the field name. */
export const OPTION_FLAGS: Readonly<Partial<Record<ConfigField, string>>> = Object.freeze({
  routerAssumeKvReuse: '--router-assume-kv-reuse',
  routerTrackingHash: '--router-tracking-hash',
  routerTrackingKeyFile: '--router-tracking-key-file',
  routerTrackingKeyId: '--router-tracking-key-id',
  routingPolicy: '--routing-policy',
});

/**
 * Builds the configuration from an env-like record and CLI overrides (overrides win; `undefined`
 * override values are ignored). Throws {@link ConfigError} listing every problem, each naming
 * the env variable (or CLI option) to fix. The result is frozen.
 */
export function parseRouterConfig(
  env: Record<string, string | undefined>,
  overrides: Partial<RouterConfig> = {},
): RouterConfig {
  const decoded = decodeEnv(env);
  const input: Record<string, unknown> = { ...decoded.values };
  const labels: Partial<Record<string, string>> = { ...decoded.sources };
  for (const [key, value] of Object.entries(overrides)) {
    if (value === undefined) continue;
    input[key] = value;
    labels[key] = OPTION_FLAGS[key as ConfigField] ?? key;
  }
  // Dynamo `lib/kv-router/src/scheduling/config.rs`: an unset multiplier defaults to 0.5 once a shared cache type is configured.
  if (input.sharedCacheMultiplier === undefined && input.sharedCacheType === 'hicache') {
    input.sharedCacheMultiplier = 0.5;
    labels.sharedCacheMultiplier = labels.sharedCacheType;
  }
  const problems = [...decoded.problems];
  const result = RouterConfigSchema.safeParse(input);
  if (!result.success) {
    for (const issue of result.error.issues) {
      const field = issue.path[0];
      if (typeof field !== 'string') {
        const keys = issue.code === 'unrecognized_keys' ? issue.keys.join(', ') : '';
        problems.push(keys ? `overrides: unknown option(s) ${keys}` : `overrides: ${issue.message}`);
      } else {
        problems.push(`${labels[field] ?? ENV_VARS[field as ConfigField] ?? field}: ${issue.message}`);
      }
    }
  }
  if (problems.length > 0 || !result.success) throw new ConfigError(problems);
  return Object.freeze(result.data);
}

/** The configuration with every default (equivalent to an empty environment). */
export function defaultRouterConfig(): RouterConfig {
  return parseRouterConfig({});
}

/** Queueing is on when a queue threshold is set or a policy class of the YAML queues (Dynamo `lib/kv-router/src/services/selection/catalog.rs`). */
export function queueingEnabled(cfg: RouterConfig, policyClassesQueue: boolean): boolean {
  return cfg.routerQueueThreshold != null || policyClassesQueue;
}

/** Normalised per-request override (deprecated `overlap_score_weight` already applied). */
export interface RouterConfigOverride {
  readonly overlapScoreCredit?: number;
  readonly prefillLoadScale?: number;
  readonly routerTemperature?: number;
  readonly assumeKvReuse?: boolean;
  readonly trackPrefillTokens?: boolean;
  readonly sharedCacheMultiplier?: number;
}

// JSON `null` means absent (serde `Option`); a u64-exact JSON parser may hand over a bigint.
const fromJson = <T extends z.ZodType>(schema: T) =>
  z.preprocess((v) => (typeof v === 'bigint' ? Number(v) : v), schema).nullish();

/**
 * Schema of a request body's `router_config_override` (Dynamo `lib/kv-router/src/services/selection/core/run.rs`). Validation: credit finite
 * >= 0; scale (and the deprecated weight) >= 0; temperature >= 0; multiplier in [0,1]; a
 * violation is a 422 at the HTTP layer. Unknown keys are ignored. As in Dynamo, a deprecated
 * `overlap_score_weight` is applied after the explicit fields: it replaces `prefill_load_scale`,
 * and 0 also forces `overlap_score_credit = 0`.
 */
export const RouterConfigOverrideSchema = z
  .object({
    overlap_score_credit: fromJson(nonNeg()),
    prefill_load_scale: fromJson(nonNeg()),
    overlap_score_weight: fromJson(nonNeg()),
    router_temperature: fromJson(nonNeg()),
    assume_kv_reuse: bool().nullish(),
    track_prefill_tokens: bool().nullish(),
    shared_cache_multiplier: fromJson(unit()),
  })
  .transform((o): RouterConfigOverride => {
    const out: { -readonly [K in keyof RouterConfigOverride]: RouterConfigOverride[K] } = {};
    if (o.overlap_score_credit != null) out.overlapScoreCredit = o.overlap_score_credit as number;
    if (o.prefill_load_scale != null) out.prefillLoadScale = o.prefill_load_scale as number;
    if (o.overlap_score_weight != null) {
      out.prefillLoadScale = o.overlap_score_weight as number;
      if (o.overlap_score_weight === 0) out.overlapScoreCredit = 0;
    }
    if (o.router_temperature != null) out.routerTemperature = o.router_temperature as number;
    if (o.assume_kv_reuse != null) out.assumeKvReuse = o.assume_kv_reuse;
    if (o.track_prefill_tokens != null) out.trackPrefillTokens = o.track_prefill_tokens;
    if (o.shared_cache_multiplier != null) out.sharedCacheMultiplier = o.shared_cache_multiplier as number;
    return Object.freeze(out);
  });

/** The values one request runs with after its override. */
export interface EffectiveRouterValues {
  readonly overlapScoreCredit: number;
  readonly prefillLoadScale: number;
  readonly routerTemperature: number;
  readonly assumeKvReuse: boolean;
  readonly trackPrefillTokens: boolean;
  readonly sharedCacheMultiplier: number;
}

/** Applies a parsed per-request override (absent fields fall back to the configuration). */
export function applyOverride(cfg: RouterConfig, override?: RouterConfigOverride | null): EffectiveRouterValues {
  const o = override ?? {};
  return {
    overlapScoreCredit: o.overlapScoreCredit ?? cfg.overlapScoreCredit,
    prefillLoadScale: o.prefillLoadScale ?? cfg.prefillLoadScale,
    routerTemperature: o.routerTemperature ?? cfg.routerTemperature,
    assumeKvReuse: o.assumeKvReuse ?? cfg.routerAssumeKvReuse,
    trackPrefillTokens: o.trackPrefillTokens ?? cfg.routerTrackPrefillTokens,
    sharedCacheMultiplier: o.sharedCacheMultiplier ?? cfg.sharedCacheMultiplier,
  };
}

export { CONFIG_FIELDS, ENV_VARS };
export type { ConfigField };
