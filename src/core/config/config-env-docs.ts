/**
 * What each router variable does, for `--help-env` and the environment table of
 * docs/configuration.md. Kept apart from the bindings in `config-env.ts` so that a bundle which
 * never prints the reference (the browser bundle, an edge Worker) leaves this text out: only the
 * CLI imports this file.
 */
import { BINDINGS, CONFIG_FIELDS, DEPRECATED_OVERLAP_WEIGHT_VARS, ENUM_VALUES, type ConfigField } from './config-env.js';

/** One line per field of the router configuration (the variable's canonical name is in `config-env.ts`). */
const ENV_HELP: Readonly<Record<ConfigField, string>> = {
  overlapScoreCredit: 'weight of the cached prefix in the cost: prefill tokens a worker already holds are credited at this rate (>= 0)',
  overlapScoreCreditDecay: 'lowers the prefix credit of a worker the more its active prefill load exceeds the least-loaded worker\'s (>= 0; 0 = no decay)',
  prefillLoadScale: 'weight of the prefill tokens a worker would have to compute, relative to its decode blocks (>= 0)',
  decodeActiveRequestWeight: 'extra cost per active request on a worker (>= 0)',
  routerTemperature: 'randomness of the pick: 0 takes the lowest cost, higher values sample among near-best workers (>= 0)',
  useKvEvents: 'index the engines\' KV-cache events over ZeroMQ; false = approximate index fed by the bookings (alias DYN_USE_KV_EVENTS)',
  routerReplicaSync: 'accepted for compatibility; replicas share load when --replica-sync-port is given',
  routerTrackActiveBlocks: 'count the KV blocks of active requests as decode load',
  routerTrackOutputBlocks: 'accepted for compatibility (needs DYN_ROUTER_TRACK_ACTIVE_BLOCKS); output blocks are counted from output_block calls',
  routerAssumeKvReuse: 'assume identical prompts share KV blocks; false gives each booking its own random tracking hashes',
  routerTrackPrefillTokens: 'count a booking\'s uncached prompt tokens as prefill load until prefill_complete (a request may override it)',
  routerTrackingHash: 'how tracking hashes are derived; keyed-xxh3-v1 needs the key file and key id below',
  routerTrackingKeyFile: 'path of the 32-byte key (keyed-xxh3-v1 only)',
  routerTrackingKeyId: 'epoch id of that key (keyed-xxh3-v1 only)',
  routerQueueThreshold: 'turns on the admission queue: a request waits while every worker\'s prefill load is above this fraction of its max_num_batched_tokens (>= 0; workers then need max_num_batched_tokens)',
  routerPolicyConfig: 'path of a YAML file with policy classes (queues, limits, chosen by the x-dynamo-meta-policy-class header) and the worker_selection policy',
  routerPrefillPolicy: 'accepted for compatibility; the service selects for aggregated workers only',
  routerDecodePolicy: 'accepted for compatibility; the service selects for aggregated workers only',
  conditionalDisaggEnabled: 'accepted for compatibility (validated with the three settings below); no effect on selection here',
  conditionalDisaggPolicy: 'accepted for compatibility; an unknown value is ignored',
  conditionalDisaggEffIslThreshold: 'accepted for compatibility (an integer >= 0)',
  conditionalDisaggEffIslRatioThreshold: 'accepted for compatibility (between 0 and 1)',
  conditionalDisaggPrefillBusyThreshold: 'advisory /select reports prefill_busy when the worker\'s active prefill tokens exceed this fraction of max_num_batched_tokens (>= 0)',
  conditionalDisaggDecodeBusyThreshold: 'selections report decode_busy when the worker\'s decode blocks exceed this fraction of total_kv_blocks (>= 0)',
  routerPredictedTtlSecs: 'with KV events: also record bookings in a side index whose entries expire after this many seconds (>= 0)',
  routerApproximateCachePolicy: 'retention of the approximate index; lru is for DYN_ROUTER_USE_KV_EVENTS=false and falls back to ttl',
  routerTtlSecs: 'lifetime of approximate-index entries, in seconds (>= 0)',
  routerEventThreads: 'accepted for compatibility (an integer >= 1); the index runs on one thread',
  routerQueuePolicy: 'order of the admission queue: first come, last come, or weighted shortest processing time first',
  useRemoteIndexer: 'accepted for compatibility; the index is always local (no kv_hint when true)',
  sharedCacheMultiplier: 'credit for blocks found in a shared cache beyond the device tier (between 0 and 1; 0.5 when DYN_SHARED_CACHE_TYPE=hicache and this is unset)',
  sharedCacheType: 'kind of shared cache; only sets the multiplier\'s default (the standalone service has no shared cache)',
  hostCacheHitWeight: 'credit of a block cached in host memory, relative to one on the device (between 0 and 1)',
  diskCacheHitWeight: 'credit of a block cached on disk, relative to one on the device (between 0 and 1)',
  routerPrefillLoadModel: 'accepted for compatibility (aic needs DYN_ROUTER_TRACK_PREFILL_TOKENS)',
  routerActiveSequenceStride: 'accepted for compatibility (an integer >= 1)',
  activeRequestExpirySecs: 'a booking still held this many seconds after it was made is dropped (a missing or 0 value means 300)',
  overlapRefreshAfterSecs: 'a request that waited in the queue longer than this re-reads its cache overlap before the pick (seconds; 0 = never)',
  workerSelectionPolicy: 'name of the worker-selection policy (default: the built-in cost function; embedders register their own)',
  routingPolicy: 'routing policy: kv (Dynamo\'s cost, the default), ttft, llmd (llm-d\'s scheduler), sglang_cache_aware (SGLang\'s router) or ray_prefix_affinity (Ray Serve LLM\'s), with parameters as ttft:key=value (same as --routing-policy)',
};

/** The deprecated overlap-weight spellings (`DEPRECATED_OVERLAP_WEIGHT_VARS`). */
const DEPRECATED_OVERLAP_WEIGHT_HELP = 'deprecated: sets DYN_ROUTER_PREFILL_LOAD_SCALE (read after it); 0 also sets the overlap credit to 0';

/** How a variable is written and what it does (`--help-env`, the environment table of docs/configuration.md). */
export interface EnvVarDoc {
  readonly field: ConfigField | null;
  readonly name: string;
  /** `number`, `integer`, `boolean`, `string`, or the accepted values joined by `|`. */
  readonly type: string;
  readonly help: string;
}

const KIND_TYPES: Readonly<Record<'float' | 'uint' | 'bool' | 'string', string>> = { float: 'number', uint: 'integer', bool: 'boolean', string: 'string' };

/** Every variable the router configuration reads, canonical names in field order, then the deprecated ones. */
export function routerEnvDocs(): EnvVarDoc[] {
  const out: EnvVarDoc[] = CONFIG_FIELDS.map((field) => {
    const { vars, kind } = BINDINGS[field];
    const type = kind in KIND_TYPES ? KIND_TYPES[kind as keyof typeof KIND_TYPES] : ENUM_VALUES[kind as keyof typeof ENUM_VALUES].join('|');
    return { field, name: vars[0], type, help: ENV_HELP[field] };
  });
  for (const name of DEPRECATED_OVERLAP_WEIGHT_VARS) {
    out.push({ field: null, name, type: 'number', help: DEPRECATED_OVERLAP_WEIGHT_HELP });
  }
  return out;
}
