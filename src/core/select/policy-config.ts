/**
 * Router policy configuration (`DYN_ROUTER_POLICY_CONFIG` YAML, Dynamo `lib/kv-router/src/scheduling/queue.rs`, Dynamo `lib/kv-router/src/services/selection/service.rs`), from the
 * already-parsed document (the Node side reads and YAML-parses the file; this module is
 * isomorphic). Same shape as Dynamo's `policy_config.rs`:
 *
 * ```yaml
 * default_policy_family: standard          # root profile (all three keys, or none)
 * uncached_isl_buckets: [{min_tokens: 0, bucket: all}]
 * policy_classes:
 *   - {name: std, policy_family: standard, cache_bucket: all, quantum: 1, queue_policy: fcfs,
 *      prefill_busy_threshold: 1024, prefill_busy_threshold_frac: 1.5, busy_worker_ratio: 0.9,
 *      request_queue_limit_per_worker: 4, raw_isl_token_queue_limit_per_worker: ...,
 *      cached_token_queue_limit_per_worker: ...}
 *   - {name: latency, quantum: 1, request_queue_limit_per_worker: 0}   # explicit class (no family/bucket)
 * models: {<model_name>: <profile with the same three keys>}           # replaces the root for that model
 * worker_selection: {aggregated: <instance>, instances: [{name, type, parameters}]}
 * ```
 * A request names a class with the `x-dynamo-meta-policy-class` header: an explicit class by
 * name, else a family (unknown names use the default family); the family's class is then
 * chosen by the request's uncached ISL bucket. Without a document, one synthetic class
 * `default` uses `prefill_busy_threshold_frac = router_queue_threshold`.
 */

export type QueuePolicy = 'fcfs' | 'wspt' | 'lcfs';

export interface PolicyClassConfig {
  readonly name: string;
  readonly queuePolicy: QueuePolicy;
  readonly quantum: number;
  readonly prefillBusyThreshold: number | null;
  readonly prefillBusyThresholdFrac: number | null;
  readonly busyWorkerRatio: number | null;
  readonly requestQueueLimitPerWorker: number | null;
  readonly rawIslTokenQueueLimitPerWorker: number | null;
  readonly cachedTokenQueueLimitPerWorker: number | null;
}

/** Default `max_num_batched_tokens` of the busy test when a worker does not report it. */
export const DEFAULT_MAX_BATCHED_TOKENS = 10_000_000;

/** Whether the class queues at all (a busy threshold is set). */
export const classQueues = (c: PolicyClassConfig): boolean => c.prefillBusyThreshold !== null || c.prefillBusyThresholdFrac !== null;

/** Busy test of one rank (OR of the absolute and fractional thresholds). */
export function rankIsBusy(c: PolicyClassConfig, activeTokens: number, maxBatchedTokens: number | null): boolean {
  if (c.prefillBusyThreshold !== null && activeTokens > c.prefillBusyThreshold) return true;
  const cap = maxBatchedTokens ?? DEFAULT_MAX_BATCHED_TOKENS;
  return c.prefillBusyThresholdFrac !== null && activeTokens > c.prefillBusyThresholdFrac * cap;
}

/** Whether the eligible pool counts as busy: all ranks, or `busy_worker_ratio` of them; never with none. */
export function poolIsBusy(c: PolicyClassConfig, busy: number, eligible: number): boolean {
  if (eligible === 0) return false;
  return c.busyWorkerRatio === null ? busy === eligible : busy >= c.busyWorkerRatio * eligible;
}

/** A profile: classes and how a request resolves to one. */
export class PolicyProfile {
  constructor(
    readonly classes: readonly PolicyClassConfig[],
    private readonly explicit: ReadonlyMap<string, number>,
    private readonly families: ReadonlyMap<string, number>,
    private readonly defaultFamily: number,
    private readonly bucketMins: readonly number[],
    private readonly matrix: readonly number[],
  ) {}

  /** One synthetic class `default` with `prefill_busy_threshold_frac = threshold`. */
  static synthetic(threshold: number | null, queuePolicy: QueuePolicy): PolicyProfile {
    const c: PolicyClassConfig = {
      name: 'default', queuePolicy, quantum: 1, prefillBusyThreshold: null, prefillBusyThresholdFrac: threshold,
      busyWorkerRatio: null, requestQueueLimitPerWorker: null, rawIslTokenQueueLimitPerWorker: null, cachedTokenQueueLimitPerWorker: null,
    };
    return new PolicyProfile([c], new Map(), new Map([['default', 0]]), 0, [0], [0]);
  }

  /** The class of a request: explicit name, else (named or default) family x uncached-ISL bucket. */
  resolve(requested: string | undefined, uncachedTokens: number): number {
    if (requested !== undefined) {
      const e = this.explicit.get(requested);
      if (e !== undefined) return e;
    }
    const fam = (requested !== undefined ? this.families.get(requested) : undefined) ?? this.defaultFamily;
    let b = 0;
    while (b + 1 < this.bucketMins.length && this.bucketMins[b + 1] <= uncachedTokens) b++;
    return this.matrix[fam * this.bucketMins.length + b];
  }

  /** Whether any class queues. */
  queues(): boolean { return this.classes.some(classQueues); }
}

/** A custom worker-selection instance. */
export interface WorkerSelectionInstance { readonly name: string; readonly type: string; readonly parameters: Readonly<Record<string, unknown>> }

export interface RouterPolicyConfig {
  readonly root: PolicyProfile | null;
  readonly models: ReadonlyMap<string, PolicyProfile>;
  /** The instance used for aggregated selection (the only one the standalone service uses). */
  readonly aggregated: WorkerSelectionInstance | null;
}

/** The profile of a model: its own, else the root, else the synthetic one. */
export function resolveProfile(cfg: RouterPolicyConfig | null, model: string, threshold: number | null, queuePolicy: QueuePolicy): PolicyProfile {
  return cfg?.models.get(model) ?? cfg?.root ?? PolicyProfile.synthetic(threshold, queuePolicy);
}

/** Whether any configured class queues (Dynamo `lib/kv-router/src/services/selection/catalog.rs` rule 4). */
export function policyConfigQueues(cfg: RouterPolicyConfig | null): boolean {
  if (!cfg) return false;
  if (cfg.root?.queues()) return true;
  for (const p of cfg.models.values()) if (p.queues()) return true;
  return false;
}

class Invalid extends Error {
  constructor(msg: string) { super(`invalid router policy config: ${msg}`); }
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const IDENT = /^[A-Za-z0-9_.-]+$/;

function ident(v: unknown, kind: string, where: string): string {
  if (typeof v !== 'string' || !IDENT.test(v)) throw new Invalid(`${where} ${kind} name ${JSON.stringify(v)} must match [A-Za-z0-9_.-]+`);
  return v;
}

function onlyKeys(o: Record<string, unknown>, allowed: readonly string[], where: string): void {
  for (const k of Object.keys(o)) if (!allowed.includes(k)) throw new Invalid(`${where}: unknown field \`${k}\``);
}

function optCount(o: Record<string, unknown>, k: string, where: string): number | null {
  const v = o[k];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw new Invalid(`${where} ${k} must be a non-negative integer`);
  return v;
}

const CLASS_KEYS = ['name', 'policy_family', 'cache_bucket', 'queue_policy', 'quantum', 'prefill_busy_threshold', 'prefill_busy_threshold_frac',
  'busy_worker_ratio', 'request_queue_limit_per_worker', 'raw_isl_token_queue_limit_per_worker', 'cached_token_queue_limit_per_worker'] as const;

function parseProfile(raw: Record<string, unknown>, where: string): PolicyProfile {
  const familyDefault = ident(raw.default_policy_family, 'policy family', where);
  const classesRaw = raw.policy_classes, bucketsRaw = raw.uncached_isl_buckets;
  if (!Array.isArray(classesRaw) || classesRaw.length === 0) throw new Invalid(`${where} policy_classes must not be empty`);
  if (!Array.isArray(bucketsRaw) || bucketsRaw.length === 0) throw new Invalid(`${where} uncached_isl_buckets must not be empty`);
  const bucketMins: number[] = [], bucketIdx = new Map<string, number>(), bucketNames: string[] = [];
  for (const b of bucketsRaw) {
    if (!isObj(b)) throw new Invalid(`${where} uncached_isl_buckets entries must be maps`);
    onlyKeys(b, ['min_tokens', 'bucket'], `${where} uncached_isl_buckets`);
    const min = optCount(b, 'min_tokens', `${where} uncached_isl_buckets`);
    if (min === null) throw new Invalid(`${where} uncached_isl_buckets min_tokens is required`);
    if (bucketMins.length === 0 && min !== 0) throw new Invalid(`${where} uncached_isl_buckets must start at min_tokens 0`);
    if (bucketMins.length > 0 && min <= bucketMins[bucketMins.length - 1]) throw new Invalid(`${where} uncached_isl_buckets min_tokens must be strictly increasing`);
    const name = ident(b.bucket, 'cache bucket', where);
    if (bucketIdx.has(name)) throw new Invalid(`${where} contains duplicate cache bucket ${JSON.stringify(name)}`);
    bucketIdx.set(name, bucketNames.length);
    bucketNames.push(name);
    bucketMins.push(min);
  }
  const classes: PolicyClassConfig[] = [];
  const explicit = new Map<string, number>();
  const bindings: ({ family: string; bucket: number } | null)[] = [];
  for (const c of classesRaw) {
    if (!isObj(c)) throw new Invalid(`${where} policy_classes entries must be maps`);
    onlyKeys(c, CLASS_KEYS, `${where} policy class`);
    const name = ident(c.name, 'policy class', where);
    if (classes.some((x) => x.name === name)) throw new Invalid(`${where} contains duplicate policy class ${JSON.stringify(name)}`);
    const quantum = optCount(c, 'quantum', `${where} policy class ${JSON.stringify(name)}`);
    if (quantum === null || quantum === 0) throw new Invalid(`${where} policy class ${JSON.stringify(name)} quantum must be greater than zero`);
    const qp = c.queue_policy ?? 'fcfs';
    if (qp !== 'fcfs' && qp !== 'wspt') throw new Invalid(`${where} policy class ${JSON.stringify(name)} queue_policy must be fcfs or wspt`);
    const frac = c.prefill_busy_threshold_frac;
    if (frac != null && !(typeof frac === 'number' && Number.isFinite(frac) && frac >= 0)) {
      throw new Invalid(`${where} policy class ${JSON.stringify(name)} prefill_busy_threshold_frac must be finite and non-negative`);
    }
    const ratio = c.busy_worker_ratio;
    if (ratio != null && !(typeof ratio === 'number' && Number.isFinite(ratio) && ratio > 0 && ratio <= 1)) {
      throw new Invalid(`${where} policy class ${JSON.stringify(name)} busy_worker_ratio must be a finite fraction in (0.0, 1.0]`);
    }
    const cfg: PolicyClassConfig = {
      name, queuePolicy: qp, quantum,
      prefillBusyThreshold: optCount(c, 'prefill_busy_threshold', `${where} policy class ${JSON.stringify(name)}`),
      prefillBusyThresholdFrac: (frac as number | null | undefined) ?? null,
      busyWorkerRatio: (ratio as number | null | undefined) ?? null,
      requestQueueLimitPerWorker: optCount(c, 'request_queue_limit_per_worker', where),
      rawIslTokenQueueLimitPerWorker: optCount(c, 'raw_isl_token_queue_limit_per_worker', where),
      cachedTokenQueueLimitPerWorker: optCount(c, 'cached_token_queue_limit_per_worker', where),
    };
    if (cfg.busyWorkerRatio !== null && !classQueues(cfg)) {
      throw new Invalid(`${where} policy class ${JSON.stringify(name)} sets busy_worker_ratio but no prefill_busy_threshold or prefill_busy_threshold_frac, so no worker can ever be considered busy`);
    }
    const fam = c.policy_family, bucket = c.cache_bucket;
    if (fam == null && bucket == null) {
      explicit.set(name, classes.length);
      bindings.push(null);
    } else if (fam != null && bucket != null) {
      const f = ident(fam, 'policy family', where), bn = ident(bucket, 'cache bucket', where);
      const bi = bucketIdx.get(bn);
      if (bi === undefined) throw new Invalid(`${where} policy class ${JSON.stringify(name)} references unknown cache bucket ${JSON.stringify(bn)}`);
      bindings.push({ family: f, bucket: bi });
    } else {
      throw new Invalid(`${where} policy class ${JSON.stringify(name)} must specify both policy_family and cache_bucket or neither for an explicit class`);
    }
    classes.push(cfg);
  }
  const families = new Map<string, number>();
  for (const b of bindings) if (b && !families.has(b.family)) families.set(b.family, families.size);
  for (const name of explicit.keys()) if (families.has(name)) throw new Invalid(`${where} explicit policy class ${JSON.stringify(name)} collides with a policy family`);
  const def = families.get(familyDefault);
  if (def === undefined) throw new Invalid(`${where} default_policy_family ${JSON.stringify(familyDefault)} does not name a configured family`);
  const nb = bucketMins.length;
  const matrix = new Array<number>(families.size * nb).fill(-1);
  bindings.forEach((b, ci) => {
    if (!b) return;
    const at = (families.get(b.family) as number) * nb + b.bucket;
    if (matrix[at] !== -1) throw new Invalid(`${where} contains duplicate policy classes for family ${JSON.stringify(b.family)} and bucket ${JSON.stringify(bucketNames[b.bucket])}`);
    matrix[at] = ci;
  });
  for (const [f, fi] of families) for (let b = 0; b < nb; b++) {
    if (matrix[fi * nb + b] === -1) throw new Invalid(`${where} is missing a policy class for family ${JSON.stringify(f)} and bucket ${JSON.stringify(bucketNames[b])}`);
  }
  return new PolicyProfile(classes, explicit, families, def, bucketMins, matrix);
}

function parseWorkerSelection(raw: unknown): WorkerSelectionInstance | null {
  if (!isObj(raw)) throw new Invalid('worker_selection must be a map');
  onlyKeys(raw, ['aggregated', 'prefill', 'decode', 'encode', 'instances'], 'worker_selection');
  const instances = new Map<string, WorkerSelectionInstance>();
  for (const i of Array.isArray(raw.instances) ? raw.instances : []) {
    if (!isObj(i)) throw new Invalid('worker_selection instances must be maps');
    const name = ident(i.name, 'worker selection instance', 'worker_selection');
    if (name === 'default') throw new Invalid('worker_selection instance name "default" is reserved');
    if (typeof i.type !== 'string' || i.type === '') throw new Invalid(`worker_selection instance ${JSON.stringify(name)} needs a type`);
    const params = i.parameters ?? {};
    if (!isObj(params)) throw new Invalid(`worker_selection instance ${JSON.stringify(name)} parameters must be a map`);
    instances.set(name, { name, type: i.type, parameters: params });
  }
  const roles = ['aggregated', 'prefill', 'decode', 'encode'] as const;
  if (!roles.some((r) => raw[r] !== undefined)) throw new Invalid('worker_selection must name at least one of aggregated, prefill, decode, encode');
  for (const r of roles) {
    const v = raw[r];
    if (v !== undefined && v !== 'default' && !instances.has(String(v))) throw new Invalid(`worker_selection ${r} names unknown instance ${JSON.stringify(v)}`);
  }
  const agg = raw.aggregated;
  return agg === undefined || agg === 'default' ? null : (instances.get(String(agg)) as WorkerSelectionInstance);
}

/** Validates a parsed policy document; throws an Error starting `invalid router policy config:`. */
export function parsePolicyConfig(doc: unknown): RouterPolicyConfig {
  if (!isObj(doc)) throw new Invalid('the document must be a map');
  onlyKeys(doc, ['default_policy_family', 'policy_classes', 'uncached_isl_buckets', 'models', 'worker_selection'], 'root');
  const rootKeys = ['default_policy_family', 'policy_classes', 'uncached_isl_buckets'].filter((k) => doc[k] !== undefined);
  if (rootKeys.length !== 0 && rootKeys.length !== 3) {
    throw new Invalid('root profile must specify default_policy_family, uncached_isl_buckets, and policy_classes when any root profile field is present');
  }
  const root = rootKeys.length === 3 ? parseProfile(doc, 'root') : null;
  const models = new Map<string, PolicyProfile>();
  if (doc.models !== undefined) {
    if (!isObj(doc.models)) throw new Invalid('models must be a map');
    for (const [m, p] of Object.entries(doc.models)) {
      if (m === '') throw new Invalid('model profile name must not be empty');
      if (!isObj(p)) throw new Invalid(`model ${JSON.stringify(m)} profile must be a map`);
      onlyKeys(p, ['default_policy_family', 'policy_classes', 'uncached_isl_buckets'], `model ${JSON.stringify(m)}`);
      models.set(m, parseProfile(p, `model ${JSON.stringify(m)}`));
    }
  }
  const aggregated = doc.worker_selection !== undefined ? parseWorkerSelection(doc.worker_selection) : null;
  if (!root && models.size === 0 && doc.worker_selection === undefined) {
    throw new Invalid('router policy config must define a root profile, at least one model profile, or worker_selection');
  }
  return { root, models, aggregated };
}
