/**
 * Decoding of the `DYN_*` environment variables into raw router-config values.
 *
 * This file only turns strings into typed values and records where each value came from; range
 * and cross-field validation live in the one schema of `config.ts`. It never reads
 * `process.env`: the caller passes an env-like record (the Node entry passes `process.env`).
 *
 * Parsing follows Dynamo `lib/kv-router/src/scheduling/config.rs` (`kv_router_config_from_lookup`) with one product deviation, stated
 * in the header of `config.ts`: a variable that is present but unparsable is reported as a
 * problem instead of being ignored silently.
 */

/** Field names of the router configuration, in the order of Dynamo `lib/kv-router/src/scheduling/config.rs` plus service values. */
export const CONFIG_FIELDS = [
  'overlapScoreCredit', 'overlapScoreCreditDecay', 'prefillLoadScale', 'decodeActiveRequestWeight',
  'routerTemperature', 'useKvEvents', 'routerReplicaSync', 'routerTrackActiveBlocks',
  'routerTrackOutputBlocks', 'routerAssumeKvReuse', 'routerTrackPrefillTokens', 'routerTrackingHash',
  'routerTrackingKeyFile', 'routerTrackingKeyId', 'routerQueueThreshold', 'routerPolicyConfig',
  'routerPrefillPolicy', 'routerDecodePolicy', 'conditionalDisaggEnabled', 'conditionalDisaggPolicy',
  'conditionalDisaggEffIslThreshold', 'conditionalDisaggEffIslRatioThreshold',
  'conditionalDisaggPrefillBusyThreshold', 'conditionalDisaggDecodeBusyThreshold',
  'routerPredictedTtlSecs', 'routerApproximateCachePolicy', 'routerTtlSecs', 'routerEventThreads',
  'routerQueuePolicy', 'useRemoteIndexer', 'sharedCacheMultiplier', 'sharedCacheType',
  'hostCacheHitWeight', 'diskCacheHitWeight', 'routerPrefillLoadModel', 'routerActiveSequenceStride',
  'activeRequestExpirySecs', 'overlapRefreshAfterSecs', 'workerSelectionPolicy', 'routingPolicy',
] as const;

/** One router-config field name. */
export type ConfigField = (typeof CONFIG_FIELDS)[number];

/** Accepted values of the enum-valued variables (exact, case-sensitive, as Dynamo's `FromStr`). */
export const ENUM_VALUES = {
  routerTrackingHash: ['public-xxh3-v1', 'keyed-xxh3-v1'],
  conditionalDisaggPolicy: ['isl_bounding', 'prefill_load', 'isl_or_load'],
  routerApproximateCachePolicy: ['ttl', 'lru'],
  routerQueuePolicy: ['fcfs', 'lcfs', 'wspt'],
  sharedCacheType: ['none', 'hicache'],
  routerPrefillLoadModel: ['none', 'aic'],
} as const;

export type Kind = 'float' | 'uint' | 'bool' | 'string' | keyof typeof ENUM_VALUES;

/** How one field is read: its variable names and how the value is written. */
export interface Binding {
  readonly vars: readonly string[]; // canonical name first, then aliases (first present wins)
  readonly kind: Kind;
}

const b = (kind: Kind, ...vars: string[]): Binding => ({ vars, kind });

/** Env variable(s) read for each field; the first name is the canonical one. */
export const BINDINGS: Readonly<Record<ConfigField, Binding>> = {
  overlapScoreCredit: b('float', 'DYN_ROUTER_KV_OVERLAP_SCORE_CREDIT'),
  overlapScoreCreditDecay: b('float', 'DYN_ROUTER_KV_OVERLAP_SCORE_CREDIT_DECAY'),
  prefillLoadScale: b('float', 'DYN_ROUTER_PREFILL_LOAD_SCALE'),
  decodeActiveRequestWeight: b('float', 'DYN_ROUTER_DECODE_ACTIVE_REQUEST_WEIGHT'),
  routerTemperature: b('float', 'DYN_ROUTER_TEMPERATURE'),
  useKvEvents: b('bool', 'DYN_ROUTER_USE_KV_EVENTS', 'DYN_USE_KV_EVENTS'),
  routerReplicaSync: b('bool', 'DYN_ROUTER_REPLICA_SYNC'),
  routerTrackActiveBlocks: b('bool', 'DYN_ROUTER_TRACK_ACTIVE_BLOCKS'),
  routerTrackOutputBlocks: b('bool', 'DYN_ROUTER_TRACK_OUTPUT_BLOCKS'),
  routerAssumeKvReuse: b('bool', 'DYN_ROUTER_ASSUME_KV_REUSE'),
  routerTrackPrefillTokens: b('bool', 'DYN_ROUTER_TRACK_PREFILL_TOKENS'),
  routerTrackingHash: b('routerTrackingHash', 'DYN_ROUTER_TRACKING_HASH'),
  routerTrackingKeyFile: b('string', 'DYN_ROUTER_TRACKING_KEY_FILE'),
  routerTrackingKeyId: b('string', 'DYN_ROUTER_TRACKING_KEY_ID'),
  routerQueueThreshold: b('float', 'DYN_ROUTER_QUEUE_THRESHOLD'),
  routerPolicyConfig: b('string', 'DYN_ROUTER_POLICY_CONFIG'),
  routerPrefillPolicy: b('string', 'DYN_ROUTER_PREFILL_POLICY'),
  routerDecodePolicy: b('string', 'DYN_ROUTER_DECODE_POLICY'),
  conditionalDisaggEnabled: b('bool', 'DYN_ROUTER_CONDITIONAL_DISAGG'),
  conditionalDisaggPolicy: b('conditionalDisaggPolicy', 'DYN_ROUTER_CONDITIONAL_DISAGG_POLICY'),
  conditionalDisaggEffIslThreshold: b('uint', 'DYN_ROUTER_CONDITIONAL_DISAGG_EFF_ISL_THRESHOLD'),
  conditionalDisaggEffIslRatioThreshold: b('float', 'DYN_ROUTER_CONDITIONAL_DISAGG_EFF_ISL_RATIO_THRESHOLD'),
  conditionalDisaggPrefillBusyThreshold: b('float', 'DYN_ROUTER_CONDITIONAL_DISAGG_PREFILL_BUSY_THRESHOLD'),
  conditionalDisaggDecodeBusyThreshold: b('float', 'DYN_ROUTER_CONDITIONAL_DISAGG_DECODE_BUSY_THRESHOLD'),
  routerPredictedTtlSecs: b('float', 'DYN_ROUTER_PREDICTED_TTL_SECS'),
  routerApproximateCachePolicy: b('routerApproximateCachePolicy', 'DYN_ROUTER_APPROXIMATE_CACHE_POLICY'),
  routerTtlSecs: b('float', 'DYN_ROUTER_TTL_SECS'),
  routerEventThreads: b('uint', 'DYN_ROUTER_EVENT_THREADS'),
  routerQueuePolicy: b('routerQueuePolicy', 'DYN_ROUTER_QUEUE_POLICY'),
  useRemoteIndexer: b('bool', 'DYN_USE_REMOTE_INDEXER'),
  sharedCacheMultiplier: b('float', 'DYN_SHARED_CACHE_MULTIPLIER'),
  sharedCacheType: b('sharedCacheType', 'DYN_SHARED_CACHE_TYPE'),
  hostCacheHitWeight: b('float', 'DYN_ROUTER_HOST_CACHE_HIT_WEIGHT'),
  diskCacheHitWeight: b('float', 'DYN_ROUTER_DISK_CACHE_HIT_WEIGHT'),
  routerPrefillLoadModel: b('routerPrefillLoadModel', 'DYN_ROUTER_PREFILL_LOAD_MODEL'),
  routerActiveSequenceStride: b('uint', 'DYN_ROUTER_ACTIVE_SEQUENCE_STRIDE'),
  activeRequestExpirySecs: b('uint', 'DYN_ROUTER_ACTIVE_REQUEST_EXPIRY_SECS'),
  overlapRefreshAfterSecs: b('float', 'DYN_ROUTER_OVERLAP_REFRESH_AFTER_SECS'),
  workerSelectionPolicy: b('string', 'DYN_ROUTER_WORKER_SELECTION_POLICY'),
  // not a Dynamo variable, so not in Dynamo's DYN_ROUTER_* namespace (docs/configuration.md)
  routingPolicy: b('string', 'SELECT_SERVICE_ROUTING_POLICY'),
};

/** Every variable name the router configuration reads (aliases and deprecated names included). */
export function routerEnvNames(): string[] {
  return [...CONFIG_FIELDS.flatMap((f) => BINDINGS[f].vars), ...DEPRECATED_OVERLAP_WEIGHT_VARS];
}

/** Levenshtein distance (insertions, deletions, substitutions), for "did you mean" hints. */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[b.length];
}

/** The name of `known` closest to `name` (ties: the first). */
export function closest(name: string, known: readonly string[]): string {
  let best = known[0];
  let bestD = Infinity;
  for (const k of known) {
    const d = editDistance(name, k);
    if (d < bestD) { best = k; bestD = d; }
  }
  return best;
}

/**
 * Variables of a namespace the service owns (e.g. `DYN_ROUTER_`) that it does not read, each
 * with the closest name it does read: `DYN_ROUTER_TEMPRATURE` -> `DYN_ROUTER_TEMPERATURE`.
 */
export function unknownEnvVars(env: Record<string, string | undefined>, prefix: string, known: readonly string[]): { name: string; closest: string }[] {
  const names = new Set(known);
  return Object.keys(env).filter((k) => k.startsWith(prefix) && !names.has(k)).sort()
    .map((name) => ({ name, closest: closest(name, known.filter((k) => k.startsWith(prefix))) }));
}

/** Canonical env variable of each field (used to name a field in error messages). */
export const ENV_VARS: Readonly<Record<ConfigField, string>> = Object.freeze(
  Object.fromEntries(CONFIG_FIELDS.map((f) => [f, BINDINGS[f].vars[0]])) as Record<ConfigField, string>,
);

/** Deprecated spellings of `prefillLoadScale`, read in this order after every other variable. */
export const DEPRECATED_OVERLAP_WEIGHT_VARS = ['DYN_ROUTER_KV_OVERLAP_SCORE_WEIGHT', 'DYN_OVERLAP_SCORE_WEIGHT'] as const;

/** Default of `DYN_ROUTER_ACTIVE_REQUEST_EXPIRY_SECS` (Dynamo `lib/bindings/python/rust/llm/kv.rs`), also used for bad values. */
export const DEFAULT_ACTIVE_REQUEST_EXPIRY_SECS = 300;

/** Result of decoding an env record: raw values (not yet range-checked) and their origin. */
export interface DecodedEnv {
  /** Field -> decoded value; only fields whose variable was present and parsed. */
  readonly values: Partial<Record<ConfigField, unknown>>;
  /** Field -> the env variable its value came from. */
  readonly sources: Partial<Record<ConfigField, string>>;
  /** Parse problems, each `VAR: message`. */
  readonly problems: string[];
}

// Rust's f64 FromStr: decimal with optional exponent, or inf/infinity/nan (any case).
const FLOAT_RE = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const NONFINITE_RE = /^([+-]?)(inf|infinity|nan)$/i;
// Rust's unsigned integer FromStr: optional '+', decimal digits.
const UINT_RE = /^\+?\d+$/;
const TRUE_WORDS = new Set(['1', 'true', 'yes', 'on']);
const FALSE_WORDS = new Set(['0', 'false', 'no', 'off']);

/** Parses a float like Rust's `f64::from_str` (after trimming); `undefined` when unparsable. */
export function parseEnvFloat(text: string): number | undefined {
  const s = text.trim();
  if (FLOAT_RE.test(s)) return Number(s);
  const m = NONFINITE_RE.exec(s);
  if (m === null) return undefined;
  if (m[2].toLowerCase() === 'nan') return Number.NaN;
  return m[1] === '-' ? -Infinity : Infinity;
}

/** Parses an unsigned decimal integer (after trimming); `undefined` when unparsable or unsafe. */
export function parseEnvUint(text: string): number | undefined {
  const s = text.trim();
  if (!UINT_RE.test(s)) return undefined;
  const n = Number(s);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** Truthy parser: 1/true/yes/on and 0/false/no/off, case-insensitive; else `undefined`. */
export function parseEnvBool(text: string): boolean | undefined {
  const s = text.trim().toLowerCase();
  if (TRUE_WORDS.has(s)) return true;
  if (FALSE_WORDS.has(s)) return false;
  return undefined;
}

/** Returns the first of `vars` that is present and non-empty, with its value. */
function lookup(env: Record<string, string | undefined>, vars: readonly string[]): [string, string] | undefined {
  for (const name of vars) {
    const v = env[name];
    // An empty variable counts as unset (shell `VAR= cmd`), like Dynamo's booleans (Dynamo `lib/kv-router/src/scheduling/config.rs`).
    if (v !== undefined && v !== '') return [name, v];
  }
  return undefined;
}

function decodeOne(field: ConfigField, name: string, raw: string, out: DecodedEnv): void {
  const { kind } = BINDINGS[field];
  const put = (value: unknown): void => {
    out.values[field] = value;
    out.sources[field] = name;
  };
  const bad = (what: string): void => {
    out.problems.push(`${name}: ${what} (got ${JSON.stringify(raw)})`);
  };
  switch (kind) {
    case 'string':
      // Paths, key ids and policy names are taken verbatim: the key id rule (no surrounding
      // whitespace) is checked by the schema. Policy names are trimmed like Dynamo's `normalized`.
      put(field.endsWith('Policy') ? raw.trim() || null : raw);
      return;
    case 'float': {
      const v = parseEnvFloat(raw);
      return v === undefined ? bad('must be a number') : put(v);
    }
    case 'uint': {
      const v = parseEnvUint(raw);
      if (field === 'activeRequestExpirySecs') {
        // Dynamo `lib/bindings/python/rust/llm/kv.rs`: non-numeric or 0 -> default, silently (the one lenient numeric variable).
        return put(v === undefined || v === 0 ? DEFAULT_ACTIVE_REQUEST_EXPIRY_SECS : v);
      }
      return v === undefined ? bad('must be a non-negative integer') : put(v);
    }
    case 'bool': {
      const v = parseEnvBool(raw);
      return v === undefined ? bad('must be one of 1/true/yes/on or 0/false/no/off') : put(v);
    }
    default: {
      const allowed: readonly string[] = ENUM_VALUES[kind];
      const v = raw.trim();
      if (allowed.includes(v)) return put(v);
      // Dynamo `lib/kv-router/src/scheduling/config.rs`: a bad conditional-disagg policy is silently ignored (default kept).
      if (field === 'conditionalDisaggPolicy') return;
      return bad(`must be one of ${allowed.join(', ')}`);
    }
  }
}

/**
 * Decodes every router variable present in `env`.
 *
 * Aliases: the canonical name wins over `DYN_USE_KV_EVENTS`. The deprecated overlap weight
 * (`DYN_ROUTER_KV_OVERLAP_SCORE_WEIGHT`, then `DYN_OVERLAP_SCORE_WEIGHT`) is applied last, as in
 * Dynamo: it replaces `prefillLoadScale`, and a value of 0 also sets `overlapScoreCredit = 0`.
 * The hicache multiplier default (0.5) is applied by `config.ts` after CLI overrides.
 */
export function decodeEnv(env: Record<string, string | undefined>): DecodedEnv {
  const out: DecodedEnv = { values: {}, sources: {}, problems: [] };
  for (const field of CONFIG_FIELDS) {
    const hit = lookup(env, BINDINGS[field].vars);
    if (hit !== undefined) decodeOne(field, hit[0], hit[1], out);
  }
  const legacy = lookup(env, DEPRECATED_OVERLAP_WEIGHT_VARS);
  if (legacy !== undefined) {
    const [name, raw] = legacy;
    const v = parseEnvFloat(raw);
    if (v === undefined) {
      out.problems.push(`${name}: must be a number (got ${JSON.stringify(raw)})`);
    } else {
      out.values.prefillLoadScale = v;
      out.sources.prefillLoadScale = name;
      if (v === 0) {
        out.values.overlapScoreCredit = 0;
        out.sources.overlapScoreCredit = name;
      }
    }
  }
  return out;
}

/**
 * Deprecation notices for variables present in `env` (for the Node entry to log at start-up):
 * the deprecated overlap weight and the `DYN_USE_KV_EVENTS` alias.
 */
export function envDeprecations(env: Record<string, string | undefined>): string[] {
  const notes: string[] = [];
  for (const name of DEPRECATED_OVERLAP_WEIGHT_VARS) {
    if (env[name] !== undefined && env[name] !== '') {
      notes.push(`${name} is deprecated; use DYN_ROUTER_PREFILL_LOAD_SCALE`);
    }
  }
  if (env.DYN_USE_KV_EVENTS !== undefined && env.DYN_USE_KV_EVENTS !== '') {
    notes.push('DYN_USE_KV_EVENTS is a legacy alias; use DYN_ROUTER_USE_KV_EVENTS');
  }
  return notes;
}
