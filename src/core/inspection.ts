/**
 * Inspection (api §2.13-§2.16, §7): current loads with queue counters, potential loads and
 * tiered overlap rows for a prompt, and the index as a `/dump` snapshot (and loading one).
 */
import { applyOverride, type EffectiveRouterValues } from './config/config.js';
import { FilterQuerySchema, PromptQuerySchema, type FilterQuery } from './wire/schemas.js';
import { partitionKeyOf } from './catalog/catalog.js';
import { checkPromptFields, type NormalizedPrompt, type PromptFields } from './index/prompt.js';
import type { Partition } from './catalog/partition.js';
import { effectivePrefillTokens, untrackedBlocks } from './select/selector.js';
import type { RouterEvent } from './index/kv-index.js';
import { parseBody, type CoreState } from './core-state.js';
import type { Scheduler } from './select/scheduler.js';
import type { DumpResponse, ModelLoadResponse, OverlapScoresResponse, PotentialLoad } from './wire/types.js';

export class Inspection {
  constructor(private readonly s: CoreState, private readonly sched: Scheduler, private readonly live: () => void,
    private readonly maintain: () => void) {}

  loads(filter: FilterQuery | unknown = {}): ModelLoadResponse[] {
    this.maintain();
    const f = parseBody(FilterQuerySchema, filter);
    const parts = [...this.s.partitions.values()]
      .filter((p) => (f.model_name === undefined || p.modelName === f.model_name) && (f.routing_group === undefined || p.routingGroup === f.routing_group))
      .sort((a, b) => (a.modelName !== b.modelName ? (a.modelName < b.modelName ? -1 : 1) : a.routingGroup < b.routingGroup ? -1 : a.routingGroup > b.routingGroup ? 1 : 0));
    return parts.map((p) => ({
      model_name: p.modelName, routing_group: p.routingGroup,
      loads: p.schedulableRanks().map(({ entry, dpRank, key }): PotentialLoad => {
        const l = p.loads.loadOf(key);
        return {
          worker_id: entry.req.worker_id, dp_rank: dpRank, potential_prefill_tokens: l.activePrefillTokens,
          potential_decode_blocks: l.activeDecodeBlocks, active_requests: l.activeRequests,
        };
      }),
      ...pendingCounters(p),
    }));
  }

  potentialLoads(input: unknown): PotentialLoad[] {
    this.live();
    const { part, prompt, eff } = this.promptQuery(input);
    const untracked = untrackedBlocks(prompt.isl, part.blockSize, prompt.nBlocks);
    return this.sched.candidates(part, prompt, eff).map((c) => ({
      worker_id: c.workerId, dp_rank: c.dpRank,
      potential_prefill_tokens: c.activePrefillTokens + (eff.trackPrefillTokens ? effectivePrefillTokens(prompt.isl, c.cachedTokens) : 0),
      potential_decode_blocks: c.potentialDecodeBlocks + untracked,
      active_requests: c.activeRequests,
    }));
  }

  overlapScores(input: unknown): OverlapScoresResponse {
    this.live();
    const { part, prompt, eff } = this.promptQuery(input);
    const ranks = part.schedulableRanks().map(({ entry, dpRank }) => ({ workerId: entry.req.worker_id, dpRank }));
    const rows = part.index.overlapRows(prompt.locals ?? [], ranks, {
      overlapScoreCredit: eff.overlapScoreCredit, hostCacheHitWeight: this.s.config.hostCacheHitWeight,
      diskCacheHitWeight: this.s.config.diskCacheHitWeight, sharedCacheMultiplier: eff.sharedCacheMultiplier,
    });
    return {
      block_size: part.blockSize, num_blocks: prompt.nBlocks, workers: rows,
      shared_cache: { enabled: false, total_hit_blocks: 0, ranges: [], error: null },
    };
  }

  private promptQuery(input: unknown): { part: Partition; prompt: NormalizedPrompt; eff: EffectiveRouterValues } {
    const req = parseBody(PromptQuerySchema, input);
    checkPromptFields(req as PromptFields);
    const part = this.s.readyPartition(req.model_name, req.routing_group);
    const eff = applyOverride(this.s.config, req.router_config_override);
    return { part, prompt: this.s.normalizer.normalize(req, part, eff.assumeKvReuse), eff };
  }

  dump(): DumpResponse {
    const out: DumpResponse = {};
    const parts = [...this.s.partitions.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    for (const p of parts) {
      try {
        out[`${p.modelName}:${p.routingGroup}`] = { block_size: p.blockSize, events: p.index.dumpEvents() };
      } catch (err) {
        out[`${p.modelName}:${p.routingGroup}`] = { error: err instanceof Error ? err.message : String(err) };
      }
    }
    return out;
  }

  /**
   * Load a dump (api §7.2): each `"model:group"` key split at the first ':' gets its partition
   * (created with the dump's block size when new) and its events applied. Returns events applied.
   */
  loadDump(dump: Readonly<Record<string, { block_size: number; events: readonly RouterEvent[] }>>): number {
    let n = 0;
    for (const [key, v] of Object.entries(dump)) {
      const at = key.indexOf(':');
      if (at < 0) throw new Error(`malformed dump key "${key}"`);
      const part = this.ensurePartitionForDump(key.slice(0, at), key.slice(at + 1), v.block_size);
      n += part.index.loadEvents(v.events);
    }
    return n;
  }

  private ensurePartitionForDump(model: string, group: string, blockSize: number): Partition {
    const p = this.s.partitions.get(partitionKeyOf(model, group));
    return p ?? this.s.ensurePartition(model, group, blockSize, false);
  }
}

/** The queue counters of `/loads` (api §2.13). */
function pendingCounters(p: Partition): { pending_count: number; pending_isl_tokens: number } {
  const q = p.queue.pending();
  return { pending_count: q.count, pending_isl_tokens: q.islTokens };
}
