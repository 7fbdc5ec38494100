import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  ConfigError, LIMITS, RouterConfigOverrideSchema, applyOverride, defaultRouterConfig, parseRouterConfig,
  queueingEnabled, type RouterConfig,
} from '../../../src/core/config/config.js';
import { envDeprecations } from '../../../src/core/config/config-env.js';

/** Returns the problems of a failing parse (fails the test if it parses). */
function problems(env: Record<string, string | undefined>, overrides: Partial<RouterConfig> = {}): readonly string[] {
  try {
    parseRouterConfig(env, overrides);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    for (const p of err.problems) assert.ok(err.message.includes(p), 'message lists every problem');
    return err.problems;
  }
  assert.fail('expected a ConfigError');
}

test('defaults match Dynamo `lib/kv-router/src/scheduling/config.rs` and the service values', () => {
  assert.deepEqual({ ...defaultRouterConfig() }, {
    overlapScoreCredit: 1, overlapScoreCreditDecay: 0, prefillLoadScale: 1, decodeActiveRequestWeight: 0,
    routerTemperature: 0, useKvEvents: true, routerReplicaSync: false, routerTrackActiveBlocks: true,
    routerTrackOutputBlocks: false, routerAssumeKvReuse: true, routerTrackPrefillTokens: true,
    routerTrackingHash: 'public-xxh3-v1', routerTrackingKeyFile: null, routerTrackingKeyId: null,
    routerQueueThreshold: null, routerPolicyConfig: null, routerPrefillPolicy: null, routerDecodePolicy: null,
    conditionalDisaggEnabled: false, conditionalDisaggPolicy: 'isl_bounding', conditionalDisaggEffIslThreshold: 2048,
    conditionalDisaggEffIslRatioThreshold: 0.7, conditionalDisaggPrefillBusyThreshold: null,
    conditionalDisaggDecodeBusyThreshold: null, routerPredictedTtlSecs: null, routerApproximateCachePolicy: 'ttl',
    routerTtlSecs: 120, routerEventThreads: 4, routerQueuePolicy: 'fcfs', useRemoteIndexer: false,
    sharedCacheMultiplier: 0, sharedCacheType: 'none', hostCacheHitWeight: 0.75, diskCacheHitWeight: 0.25,
    routerPrefillLoadModel: 'none', routerActiveSequenceStride: 1, activeRequestExpirySecs: 300,
    overlapRefreshAfterSecs: 10, workerSelectionPolicy: null, routingPolicy: null,
  });
});

test('the result is frozen', () => {
  const cfg = parseRouterConfig({ DYN_ROUTER_TEMPERATURE: '0.5' });
  assert.ok(Object.isFrozen(cfg));
  assert.throws(() => { (cfg as { routerTemperature: number }).routerTemperature = 1; }, TypeError);
});

test('canonical settings parse', () => {
  const cfg = parseRouterConfig({
    DYN_ROUTER_KV_OVERLAP_SCORE_CREDIT: '0.25', DYN_ROUTER_KV_OVERLAP_SCORE_CREDIT_DECAY: '0.75',
    DYN_ROUTER_PREFILL_LOAD_SCALE: '2.5', DYN_ROUTER_DECODE_ACTIVE_REQUEST_WEIGHT: '32', DYN_ROUTER_TEMPERATURE: '0.7',
    DYN_ROUTER_USE_KV_EVENTS: 'false', DYN_ROUTER_REPLICA_SYNC: 'yes', DYN_ROUTER_TRACK_ACTIVE_BLOCKS: 'on',
    DYN_ROUTER_TRACK_OUTPUT_BLOCKS: 'TRUE', DYN_ROUTER_ASSUME_KV_REUSE: 'No', DYN_ROUTER_TRACK_PREFILL_TOKENS: '1',
    DYN_ROUTER_TRACKING_HASH: 'keyed-xxh3-v1', DYN_ROUTER_TRACKING_KEY_FILE: '/run/secrets/key',
    DYN_ROUTER_TRACKING_KEY_ID: '2026-01', DYN_ROUTER_QUEUE_THRESHOLD: '4.5', DYN_ROUTER_TTL_SECS: '300',
    DYN_ROUTER_EVENT_THREADS: '8', DYN_ROUTER_QUEUE_POLICY: 'wspt', DYN_USE_REMOTE_INDEXER: 'true',
    DYN_SHARED_CACHE_MULTIPLIER: '0.4', DYN_SHARED_CACHE_TYPE: 'hicache', DYN_ROUTER_HOST_CACHE_HIT_WEIGHT: '0.6',
    DYN_ROUTER_DISK_CACHE_HIT_WEIGHT: '0.3', DYN_ROUTER_PREFILL_LOAD_MODEL: 'aic', DYN_ROUTER_PREFILL_POLICY: ' p ',
    DYN_ROUTER_DECODE_POLICY: 'd', DYN_ROUTER_APPROXIMATE_CACHE_POLICY: 'lru', DYN_ROUTER_POLICY_CONFIG: '/etc/p.yaml',
    DYN_ROUTER_CONDITIONAL_DISAGG: '1', DYN_ROUTER_CONDITIONAL_DISAGG_POLICY: 'isl_or_load',
    DYN_ROUTER_CONDITIONAL_DISAGG_EFF_ISL_THRESHOLD: '4096', DYN_ROUTER_CONDITIONAL_DISAGG_EFF_ISL_RATIO_THRESHOLD: '0.5',
    DYN_ROUTER_CONDITIONAL_DISAGG_DECODE_BUSY_THRESHOLD: '0.9', DYN_ROUTER_ACTIVE_SEQUENCE_STRIDE: '2',
    DYN_ROUTER_ACTIVE_REQUEST_EXPIRY_SECS: '600', DYN_ROUTER_OVERLAP_REFRESH_AFTER_SECS: '0',
    DYN_ROUTER_WORKER_SELECTION_POLICY: 'mine',
  });
  assert.equal(cfg.overlapScoreCredit, 0.25);
  assert.equal(cfg.overlapScoreCreditDecay, 0.75);
  assert.equal(cfg.prefillLoadScale, 2.5);
  assert.equal(cfg.decodeActiveRequestWeight, 32);
  assert.equal(cfg.routerTemperature, 0.7);
  assert.equal(cfg.useKvEvents, false);
  assert.equal(cfg.routerReplicaSync, true);
  assert.equal(cfg.routerTrackOutputBlocks, true);
  assert.equal(cfg.routerAssumeKvReuse, false);
  assert.equal(cfg.routerTrackingHash, 'keyed-xxh3-v1');
  assert.equal(cfg.routerTrackingKeyFile, '/run/secrets/key');
  assert.equal(cfg.routerTrackingKeyId, '2026-01');
  assert.equal(cfg.routerQueueThreshold, 4.5);
  assert.equal(cfg.routerEventThreads, 8);
  assert.equal(cfg.routerQueuePolicy, 'wspt');
  assert.equal(cfg.useRemoteIndexer, true);
  assert.equal(cfg.sharedCacheMultiplier, 0.4, 'an explicit multiplier beats the hicache default');
  assert.equal(cfg.hostCacheHitWeight, 0.6);
  assert.equal(cfg.diskCacheHitWeight, 0.3);
  assert.equal(cfg.routerPrefillLoadModel, 'aic');
  assert.equal(cfg.routerPrefillPolicy, 'p');
  assert.equal(cfg.routerApproximateCachePolicy, 'lru');
  assert.equal(cfg.routerPolicyConfig, '/etc/p.yaml');
  assert.equal(cfg.conditionalDisaggPolicy, 'isl_or_load');
  assert.equal(cfg.conditionalDisaggEffIslThreshold, 4096);
  assert.equal(cfg.conditionalDisaggEffIslRatioThreshold, 0.5);
  assert.equal(cfg.conditionalDisaggDecodeBusyThreshold, 0.9);
  assert.equal(cfg.routerActiveSequenceStride, 2);
  assert.equal(cfg.activeRequestExpirySecs, 600);
  assert.equal(cfg.overlapRefreshAfterSecs, 0);
  assert.equal(cfg.workerSelectionPolicy, 'mine');
});

test('booleans: truthy words case-insensitively, empty keeps the default, unknown is an error', () => {
  for (const [v, want] of [['1', true], ['YES', true], ['On', true], ['0', false], ['no', false], ['OFF', false]] as const) {
    assert.equal(parseRouterConfig({ DYN_ROUTER_REPLICA_SYNC: v }).routerReplicaSync, want, v);
  }
  assert.equal(parseRouterConfig({ DYN_ROUTER_USE_KV_EVENTS: '' }).useKvEvents, true);
  assert.deepEqual(problems({ DYN_ROUTER_USE_KV_EVENTS: 'maybe' }),
    ['DYN_ROUTER_USE_KV_EVENTS: must be one of 1/true/yes/on or 0/false/no/off (got "maybe")']);
});

test('a present but unparsable number fails start-up naming the variable (product rule)', () => {
  assert.deepEqual(problems({ DYN_ROUTER_TEMPERATURE: '0,5' }), ['DYN_ROUTER_TEMPERATURE: must be a number (got "0,5")']);
  assert.deepEqual(problems({ DYN_ROUTER_EVENT_THREADS: '4.0' }),
    ['DYN_ROUTER_EVENT_THREADS: must be a non-negative integer (got "4.0")']);
  assert.equal(parseRouterConfig({ DYN_ROUTER_TEMPERATURE: ' 0.5 ' }).routerTemperature, 0.5, 'trimmed');
  assert.equal(parseRouterConfig({ DYN_ROUTER_TEMPERATURE: '' }).routerTemperature, 0, 'empty = unset');
  assert.deepEqual(problems({ DYN_ROUTER_KV_OVERLAP_SCORE_CREDIT: 'inf' }),
    ['DYN_ROUTER_KV_OVERLAP_SCORE_CREDIT: must be a finite number (got Infinity)']);
});

test('range violations name the variable and the value', () => {
  assert.deepEqual(problems({ DYN_ROUTER_TEMPERATURE: '-1' }), ['DYN_ROUTER_TEMPERATURE: must be >= 0 (got -1)']);
  assert.deepEqual(problems({ DYN_ROUTER_HOST_CACHE_HIT_WEIGHT: '1.5' }),
    ['DYN_ROUTER_HOST_CACHE_HIT_WEIGHT: must be between 0 and 1 (got 1.5)']);
  assert.match(problems({ DYN_ROUTER_EVENT_THREADS: '0' })[0], /^DYN_ROUTER_EVENT_THREADS: must be an integer between 1 and/);
  assert.match(problems({ DYN_ROUTER_ACTIVE_SEQUENCE_STRIDE: '0' })[0], /^DYN_ROUTER_ACTIVE_SEQUENCE_STRIDE: must be an integer between 1/);
  for (const v of ['DYN_ROUTER_KV_OVERLAP_SCORE_CREDIT_DECAY', 'DYN_ROUTER_PREFILL_LOAD_SCALE', 'DYN_ROUTER_TTL_SECS',
    'DYN_ROUTER_QUEUE_THRESHOLD', 'DYN_ROUTER_CONDITIONAL_DISAGG_PREFILL_BUSY_THRESHOLD',
    'DYN_ROUTER_CONDITIONAL_DISAGG_DECODE_BUSY_THRESHOLD', 'DYN_ROUTER_DECODE_ACTIVE_REQUEST_WEIGHT',
    'DYN_ROUTER_OVERLAP_REFRESH_AFTER_SECS']) {
    assert.deepEqual(problems({ [v]: '-0.5' }), [`${v}: must be >= 0 (got -0.5)`], v);
  }
  for (const v of ['DYN_ROUTER_DISK_CACHE_HIT_WEIGHT', 'DYN_SHARED_CACHE_MULTIPLIER',
    'DYN_ROUTER_CONDITIONAL_DISAGG_EFF_ISL_RATIO_THRESHOLD']) {
    assert.deepEqual(problems({ [v]: '2' }), [`${v}: must be between 0 and 1 (got 2)`], v);
  }
});

test('failure lists every problem at once', () => {
  const p = problems({
    DYN_ROUTER_TEMPERATURE: '-1', DYN_ROUTER_QUEUE_POLICY: 'lifo', DYN_ROUTER_TTL_SECS: 'x',
    DYN_ROUTER_TRACK_ACTIVE_BLOCKS: 'false', DYN_ROUTER_TRACK_OUTPUT_BLOCKS: 'true',
  });
  assert.equal(p.length, 4, p.join('\n'));
  assert.ok(p.includes('DYN_ROUTER_QUEUE_POLICY: must be one of fcfs, lcfs, wspt (got "lifo")'));
  assert.ok(p.includes('DYN_ROUTER_TRACK_OUTPUT_BLOCKS: router_track_output_blocks requires router_track_active_blocks=true'));
});

test('enum variables: bad values are errors, except the conditional-disagg policy which is ignored', () => {
  assert.deepEqual(problems({ DYN_ROUTER_TRACKING_HASH: 'sha256' }),
    ['DYN_ROUTER_TRACKING_HASH: must be one of public-xxh3-v1, keyed-xxh3-v1 (got "sha256")']);
  assert.equal(problems({ DYN_SHARED_CACHE_TYPE: 'redis' }).length, 1);
  assert.equal(problems({ DYN_ROUTER_PREFILL_LOAD_MODEL: 'AIC' }).length, 1, 'case-sensitive like FromStr');
  assert.equal(problems({ DYN_ROUTER_APPROXIMATE_CACHE_POLICY: 'fifo' }).length, 1);
  assert.equal(parseRouterConfig({ DYN_ROUTER_CONDITIONAL_DISAGG_POLICY: 'bogus' }).conditionalDisaggPolicy, 'isl_bounding');
});

test('DYN_USE_KV_EVENTS is an alias; the canonical name wins', () => {
  assert.equal(parseRouterConfig({ DYN_USE_KV_EVENTS: 'false' }).useKvEvents, false);
  assert.equal(parseRouterConfig({ DYN_USE_KV_EVENTS: 'false', DYN_ROUTER_USE_KV_EVENTS: 'true' }).useKvEvents, true);
  assert.deepEqual(envDeprecations({ DYN_USE_KV_EVENTS: '0', DYN_OVERLAP_SCORE_WEIGHT: '1' }).length, 2);
});

test('deprecated overlap weight maps to prefill_load_scale, 0 also zeroes the credit', () => {
  const a = parseRouterConfig({ DYN_ROUTER_KV_OVERLAP_SCORE_WEIGHT: '2.5', DYN_ROUTER_PREFILL_LOAD_SCALE: '9' });
  assert.equal(a.prefillLoadScale, 2.5, 'applied after the canonical variable, as in Dynamo');
  assert.equal(a.overlapScoreCredit, 1);
  const z = parseRouterConfig({ DYN_OVERLAP_SCORE_WEIGHT: '0', DYN_ROUTER_KV_OVERLAP_SCORE_CREDIT: '0.5' });
  assert.equal(z.prefillLoadScale, 0);
  assert.equal(z.overlapScoreCredit, 0);
  const first = parseRouterConfig({ DYN_ROUTER_KV_OVERLAP_SCORE_WEIGHT: '3', DYN_OVERLAP_SCORE_WEIGHT: '0' });
  assert.equal(first.prefillLoadScale, 3);
  assert.equal(first.overlapScoreCredit, 1);
  assert.deepEqual(problems({ DYN_OVERLAP_SCORE_WEIGHT: '-1' }), ['DYN_OVERLAP_SCORE_WEIGHT: must be >= 0 (got -1)']);
});

test('shared cache multiplier defaults to 0.5 with hicache when unset', () => {
  assert.equal(parseRouterConfig({ DYN_SHARED_CACHE_TYPE: 'hicache' }).sharedCacheMultiplier, 0.5);
  assert.equal(parseRouterConfig({ DYN_SHARED_CACHE_TYPE: 'none' }).sharedCacheMultiplier, 0);
  assert.equal(parseRouterConfig({ DYN_SHARED_CACHE_TYPE: 'hicache', DYN_SHARED_CACHE_MULTIPLIER: '0' }).sharedCacheMultiplier, 0);
  assert.equal(parseRouterConfig({}, { sharedCacheType: 'hicache' }).sharedCacheMultiplier, 0.5);
});

test('DYN_ROUTER_ACTIVE_REQUEST_EXPIRY_SECS: non-numeric or 0 falls back to 300 silently', () => {
  for (const v of ['abc', '0', '-5', '1.5']) {
    assert.equal(parseRouterConfig({ DYN_ROUTER_ACTIVE_REQUEST_EXPIRY_SECS: v }).activeRequestExpirySecs, 300, v);
  }
  assert.equal(parseRouterConfig({ DYN_ROUTER_ACTIVE_REQUEST_EXPIRY_SECS: '42' }).activeRequestExpirySecs, 42);
});

test('cross-field rules of validate()', () => {
  assert.deepEqual(problems({ DYN_ROUTER_PREDICTED_TTL_SECS: '5', DYN_ROUTER_USE_KV_EVENTS: 'false' }),
    ['DYN_ROUTER_PREDICTED_TTL_SECS: router_predicted_ttl_secs requires use_kv_events=true']);
  assert.deepEqual(problems({ DYN_ROUTER_APPROXIMATE_CACHE_POLICY: 'lru' }),
    ['DYN_ROUTER_APPROXIMATE_CACHE_POLICY: router_approximate_cache_policy=lru requires use_kv_events=false']);
  assert.equal(parseRouterConfig({ DYN_ROUTER_APPROXIMATE_CACHE_POLICY: 'lru', DYN_ROUTER_USE_KV_EVENTS: '0' })
    .routerApproximateCachePolicy, 'lru');
  assert.match(problems({ DYN_ROUTER_PREFILL_LOAD_MODEL: 'aic', DYN_ROUTER_TRACK_PREFILL_TOKENS: 'false' })[0],
    /^DYN_ROUTER_PREFILL_LOAD_MODEL: router_prefill_load_model=aic requires router_track_prefill_tokens=true/);
});

test('conditional-disagg load policies need a prefill busy threshold or the queue threshold', () => {
  const base = { DYN_ROUTER_CONDITIONAL_DISAGG: 'true', DYN_ROUTER_CONDITIONAL_DISAGG_POLICY: 'prefill_load' };
  assert.match(problems(base)[0], /^DYN_ROUTER_CONDITIONAL_DISAGG_POLICY: conditional_disagg_policy=prefill_load needs/);
  assert.equal(problems({ ...base, DYN_ROUTER_CONDITIONAL_DISAGG_POLICY: 'isl_or_load' }).length, 1);
  parseRouterConfig({ ...base, DYN_ROUTER_QUEUE_THRESHOLD: '0' });
  parseRouterConfig({ ...base, DYN_ROUTER_CONDITIONAL_DISAGG_PREFILL_BUSY_THRESHOLD: '0.8' });
  parseRouterConfig({ DYN_ROUTER_CONDITIONAL_DISAGG_POLICY: 'prefill_load' }); // disabled: not checked (Dynamo)
});

test('tracking-hash key options (tracking_hash.rs)', () => {
  assert.deepEqual(problems({ DYN_ROUTER_TRACKING_HASH: 'keyed-xxh3-v1' }), [
    'DYN_ROUTER_TRACKING_KEY_FILE: keyed-xxh3-v1 requires router_tracking_key_file',
    'DYN_ROUTER_TRACKING_KEY_ID: keyed-xxh3-v1 requires router_tracking_key_id',
  ]);
  assert.deepEqual(problems({ DYN_ROUTER_TRACKING_KEY_ID: '2026-01' }),
    ['DYN_ROUTER_TRACKING_KEY_ID: router tracking key options require router_tracking_hash=keyed-xxh3-v1']);
  assert.deepEqual(problems({ DYN_ROUTER_TRACKING_KEY_FILE: '/k' }),
    ['DYN_ROUTER_TRACKING_KEY_FILE: router tracking key options require router_tracking_hash=keyed-xxh3-v1']);
  const keyed = { DYN_ROUTER_TRACKING_HASH: 'keyed-xxh3-v1', DYN_ROUTER_TRACKING_KEY_FILE: '/k' };
  assert.deepEqual(problems({ ...keyed, DYN_ROUTER_TRACKING_KEY_ID: ' 2026-01' }),
    ['DYN_ROUTER_TRACKING_KEY_ID: must be non-empty without surrounding whitespace (got " 2026-01")']);
  assert.deepEqual(problems(keyed, { routerTrackingKeyId: '' }),
    ['--router-tracking-key-id: must be non-empty without surrounding whitespace (got "")']);
  assert.equal(parseRouterConfig(keyed, { routerTrackingKeyId: 'k1' }).routerTrackingKeyId, 'k1');
});

test('CLI overrides win over env and are named by option in messages', () => {
  assert.equal(parseRouterConfig({ DYN_ROUTER_ASSUME_KV_REUSE: 'true' }, { routerAssumeKvReuse: false }).routerAssumeKvReuse, false);
  assert.equal(parseRouterConfig({ DYN_ROUTER_TEMPERATURE: '-1' }, { routerTemperature: 0.1 }).routerTemperature, 0.1);
  assert.equal(parseRouterConfig({}, { routerTemperature: undefined }).routerTemperature, 0);
  assert.deepEqual(problems({}, { routerTemperature: -2 }), ['routerTemperature: must be >= 0 (got -2)']);
  assert.deepEqual(problems({}, { bogus: 1 } as unknown as Partial<RouterConfig>), ['overrides: unknown option(s) bogus']);
  assert.deepEqual(problems({}, { routerTrackingHash: 'x' as never }),
    ['--router-tracking-hash: must be one of public-xxh3-v1, keyed-xxh3-v1 (got "x")']);
});

test('queueingEnabled: threshold set or a policy class queues', () => {
  assert.equal(queueingEnabled(defaultRouterConfig(), false), false);
  assert.equal(queueingEnabled(defaultRouterConfig(), true), true);
  assert.equal(queueingEnabled(parseRouterConfig({ DYN_ROUTER_QUEUE_THRESHOLD: '0' }), false), true);
});

test('router_config_override: validation, null = absent, deprecated weight, unknown keys ignored', () => {
  const ok = RouterConfigOverrideSchema.parse({ overlap_score_credit: 2, router_temperature: null, extra: 1, track_prefill_tokens: false });
  assert.deepEqual({ ...ok }, { overlapScoreCredit: 2, trackPrefillTokens: false });
  assert.deepEqual({ ...RouterConfigOverrideSchema.parse({ overlap_score_weight: 0, prefill_load_scale: 3, overlap_score_credit: 0.5 }) },
    { overlapScoreCredit: 0, prefillLoadScale: 0 });
  assert.deepEqual({ ...RouterConfigOverrideSchema.parse({ overlap_score_weight: 2 }) }, { prefillLoadScale: 2 });
  assert.deepEqual({ ...RouterConfigOverrideSchema.parse({ shared_cache_multiplier: 1n }) }, { sharedCacheMultiplier: 1 });
  for (const bad of [{ overlap_score_credit: -1 }, { prefill_load_scale: -0.1 }, { router_temperature: -1 },
    { shared_cache_multiplier: 1.5 }, { overlap_score_weight: -1 }, { assume_kv_reuse: 'yes' }, { overlap_score_credit: Infinity }]) {
    const r = RouterConfigOverrideSchema.safeParse(bad);
    assert.equal(r.success, false, JSON.stringify(bad));
    assert.equal(r.error?.issues[0].path[0], Object.keys(bad)[0]);
  }
  assert.equal(RouterConfigOverrideSchema.safeParse({ router_temperature: -1 }).error?.issues[0].message, 'must be >= 0 (got -1)');
});

test('applyOverride falls back to the configuration field by field', () => {
  const cfg = parseRouterConfig({ DYN_ROUTER_TRACK_PREFILL_TOKENS: 'false', DYN_SHARED_CACHE_TYPE: 'hicache' });
  assert.deepEqual(applyOverride(cfg, null), {
    overlapScoreCredit: 1, prefillLoadScale: 1, routerTemperature: 0, assumeKvReuse: true,
    trackPrefillTokens: false, sharedCacheMultiplier: 0.5,
  });
  const o = RouterConfigOverrideSchema.parse({ router_temperature: 0.3, track_prefill_tokens: true, assume_kv_reuse: false });
  assert.deepEqual(applyOverride(cfg, o), {
    overlapScoreCredit: 1, prefillLoadScale: 1, routerTemperature: 0.3, assumeKvReuse: false,
    trackPrefillTokens: true, sharedCacheMultiplier: 0.5,
  });
});

test('LIMITS carry the spec defaults and are frozen', () => {
  assert.ok(Object.isFrozen(LIMITS));
  assert.equal(LIMITS.requestBodyLimitBytes, 8388608);
  assert.equal(LIMITS.selectionCacheMaxBytes, 256 * 1024 * 1024);
  assert.equal(LIMITS.approximateMaxTreeSize, 1048576);
  assert.equal(LIMITS.sessionAffinityTtlMaxSecs, 365 * 24 * 3600);
  assert.equal(LIMITS.maxDataParallelSize, 1024);
  assert.equal(LIMITS.wasmIndexHandles, 4096);
  assert.equal(LIMITS.endedReservationsMaxEntries, 65536);
  // the mesh beyond Dynamo: ZMQ's own queue (1,000) would drop 5 s of events at 200/s
  assert.deepEqual([LIMITS.replicaSendHwm, LIMITS.replicaReceiveHwm, LIMITS.replicaTombstoneTtlSecs], [10000, 10000, 300]);
  // the drain after an early answer: 4x the body limit, 30 s
  assert.deepEqual([LIMITS.drainMaxBytes, LIMITS.drainMaxMs], [4 * 8388608, 30000]);
  assert.equal(Object.keys(LIMITS).length, 47);
});

test('config sources are isomorphic: no node: imports, no process.env', () => {
  for (const f of ['config/config.ts', 'config/config-env.ts', 'errors.ts', 'index/tracking-hash.ts']) {
    const text = readFileSync(fileURLToPath(new URL(`../../../../../src/core/${f}`, import.meta.url)), 'utf8');
    const src = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, ''); // code only
    assert.doesNotMatch(src, /from ['"]node:/, f);
    assert.doesNotMatch(src, /process\.env/, f);
  }
});
