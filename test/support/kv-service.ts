/**
 * A SelectionService with the default ZMQ ingress, for KV-event integration tests: worker
 * registration, waiting for the ingress to apply batches, and overlap / dump readers.
 */
import { SelectionServiceBuilder, type SelectionService } from '../../src/service/service.js';
import { parseRouterConfig } from '../../src/core/config/config.js';
import type { IngestCounters, WorkerIngestStats } from '../../src/service/kv-events/stats.js';
import { ZmqKvIngress } from '../../src/service/kv-events/ingress.js';
import { eventually } from './ports.js';
import { FakeEngine } from './fake-engine.js';

export const MODEL = 'm';

/** A service with `use_kv_events` on (the default config). */
export function kvService(): Promise<SelectionService> {
  return new SelectionServiceBuilder(parseRouterConfig({})).build();
}

/**
 * An engine, a service and worker 1 listening to it (subscribed, so nothing published from now
 * on is lost to the slow joiner), all closed after the test. `extra` goes into the worker body.
 */
export async function listeningWorker(t: { after(fn: () => Promise<void>): void }, extra: Record<string, unknown> = {}) {
  const engine = await FakeEngine.start();
  const service = await kvService();
  t.after(async () => { await service.shutdown(); engine.close(); });
  const body = workerBody(1, { kv_events_endpoint: engine.endpoint, ...extra });
  service.upsertWorker(body);
  await engine.waitForSubscribers();
  return { engine, service, body };
}

/** A worker body for POST /workers (block size 16). */
export function workerBody(workerId: number, extra: Record<string, unknown>): Record<string, unknown> {
  return { worker_id: workerId, model_name: MODEL, endpoint: `http://worker-${workerId}:8000`, block_size: 16, ...extra };
}

/** Where ingestion stats come from: a service with the default ingress, or an ingress itself. */
export type StatsSource = SelectionService | ZmqKvIngress;
const statsOf = (src: StatsSource, workerId: number): WorkerIngestStats | null =>
  src instanceof ZmqKvIngress ? src.stats(BigInt(workerId)) : src.ingressStats(BigInt(workerId));

/** The worker's ingestion counters (throws when it has no listeners). */
export function counters(src: StatsSource, workerId: number): IngestCounters {
  const st = statsOf(src, workerId);
  if (!st) throw new Error(`worker ${workerId} has no KV-event listeners`);
  return st.counters;
}

/** Waits until `check(counters)` holds for the worker. */
export function until(src: StatsSource, workerId: number, check: (c: IngestCounters) => boolean, what: string): Promise<void> {
  return eventually(() => { const st = statsOf(src, workerId); return st !== null && check(st.counters); }, 10_000, what);
}

/** Overlap in blocks of a selection of `tokens` (the chosen worker's gpu / cpu, tokens / 16). */
export async function selectOverlap(s: SelectionService, tokens: number[], loraName?: string): Promise<{ gpu: number; cpu: number }> {
  const r = await s.select({ model_name: MODEL, token_ids: tokens, ...(loraName ? { lora_name: loraName } : {}) });
  return { gpu: r.overlap.gpu / 16, cpu: r.overlap.cpu / 16 };
}

/** Device and host_pinned blocks per (worker, rank) from /overlap_scores, keyed `"worker:rank"`. */
export function rankOverlaps(s: SelectionService, tokens: number[]): Record<string, [number, number]> {
  const out: Record<string, [number, number]> = {};
  for (const r of s.overlapScores({ model_name: MODEL, token_ids: tokens }).workers) {
    out[`${r.worker_id}:${r.dp_rank}`] = [r.device_blocks, r.host_pinned_blocks];
  }
  return out;
}

/** `"<tier>:<block_hash>"` of every block /dump lists for the partition, sorted. */
export function dumpedBlocks(s: SelectionService): string[] {
  const part = s.dump()[`${MODEL}:default`] as { events: { storage_tier: string; event: { data: unknown } }[] } | undefined;
  const out: string[] = [];
  for (const e of part?.events ?? []) {
    const d = e.event.data as { stored?: { blocks: { block_hash: bigint }[] } };
    for (const b of d.stored?.blocks ?? []) out.push(`${e.storage_tier}:${b.block_hash}`);
  }
  return out.sort();
}
