/**
 * Dense worker slots: each `(worker_id, dp_rank)` of a partition is interned to a small integer
 * that the wasm index works on. Freed slots are reused (lowest first) so the per-slot arrays in
 * wasm stay as small as the live worker set.
 */
export interface WorkerRank { workerId: bigint; dpRank: number }

/** The `worker_id:dp_rank` key of a rank (loads, overlap rows and slots share it). */
export const rankKeyOf = (workerId: bigint, dpRank: number): string => `${workerId}:${dpRank}`;

export class SlotTable {
  private readonly bySlot: ((WorkerRank & { key: string }) | null)[] = [];
  private readonly byKey = new Map<string, number>();
  private readonly free: number[] = [];
  /** Bumped whenever a slot is given to a rank or released (callers cache slot -> rank maps by it). */
  version = 0;

  private static key(workerId: bigint, dpRank: number): string { return rankKeyOf(workerId, dpRank); }

  /** The slot of (worker, rank), or -1. */
  find(workerId: bigint, dpRank: number): number {
    return this.byKey.get(SlotTable.key(workerId, dpRank)) ?? -1;
  }

  /** The slot of (worker, rank), interning it when new. */
  intern(workerId: bigint, dpRank: number): number {
    const k = SlotTable.key(workerId, dpRank);
    const s = this.byKey.get(k);
    if (s !== undefined) return s;
    let slot: number;
    if (this.free.length > 0) {
      this.free.sort((a, b) => b - a);
      slot = this.free.pop() as number;
      this.bySlot[slot] = { workerId, dpRank, key: k };
    } else {
      slot = this.bySlot.length;
      this.bySlot.push({ workerId, dpRank, key: k });
    }
    this.byKey.set(k, slot);
    this.version++;
    return slot;
  }

  /** Forget a slot (its index contents must have been cleared first). */
  release(slot: number): void {
    const w = this.bySlot[slot];
    if (!w) return;
    this.byKey.delete(w.key);
    this.bySlot[slot] = null;
    this.free.push(slot);
    this.version++;
  }

  /** (worker, rank) and key of a live slot. */
  get(slot: number): (WorkerRank & { key: string }) | null { return this.bySlot[slot] ?? null; }

  /** Live slots of one worker id (all its ranks). */
  slotsOf(workerId: bigint): number[] {
    const out: number[] = [];
    this.bySlot.forEach((w, s) => { if (w && w.workerId === workerId) out.push(s); });
    return out;
  }

  /** Highest slot ever used + 1 (the wasm slot capacity needed). */
  get size(): number { return this.bySlot.length; }

  /** Every live slot with its worker rank. */
  *entries(): IterableIterator<[number, WorkerRank]> {
    for (let s = 0; s < this.bySlot.length; s++) { const w = this.bySlot[s]; if (w) yield [s, w]; }
  }
}
