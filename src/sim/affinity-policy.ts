/**
 * Session affinity as a custom policy (api §8 modelled through the §10 policy API): the default
 * cost, plus a steering scorer that makes a session's bound worker rank the cheapest while the
 * binding is fresh, and a picker that binds the session to whatever it picked (with
 * `select_and_reserve`, the pick is the booking). Hard mode: a live binding always wins while its
 * rank is eligible; a binding idle longer than the TTL is dropped.
 *
 * The core's own session-affinity tables (leases, hard/soft modes, replication) are being built
 * separately; when they land, the simulator can route with them instead of this model.
 */
import type { Clock } from '../core/types.js';
import {
  createDefaultPolicyFactory, type DefaultCostSettings, type PolicyFactory, type WorkerPicker, type WorkerScorer,
  WorkerInputs,
} from '../core/policy.js';

/** Added to every other rank's cost while a session is bound (finite, as policies require). */
const STEER_COST = 1e12;

interface Binding { workerId: bigint; dpRank: number; lastUsed: number }

/** Options of {@link sessionAffinityFactory}. */
export interface AffinityOptions {
  clock: Clock;
  /** Idle time after which a binding lapses, ms. */
  ttlMs: number;
  /** Cost settings of the underlying default cost. */
  base: Readonly<DefaultCostSettings>;
}

/** A policy factory: default cost + session stickiness (bindings per partition). */
export function sessionAffinityFactory(o: AffinityOptions): PolicyFactory {
  const inner = createDefaultPolicyFactory(o.base);
  return (partition, parameters) => {
    const base = inner(partition, parameters);
    const bindings = new Map<string, Binding>();
    const live = (sid: string | undefined): Binding | undefined => {
      if (sid === undefined) return undefined;
      const b = bindings.get(sid);
      if (b && o.clock.now() - b.lastUsed > o.ttlMs) { bindings.delete(sid); return undefined; }
      return b;
    };
    const steer: WorkerScorer = {
      requiredWorkerInputs: () => WorkerInputs.NONE,
      score(ctx, cands, out) {
        const b = live(ctx.sessionId());
        if (!b) return;
        for (let i = 0; i < cands.length; i++) {
          const w = cands[i].worker();
          if (w.workerId !== b.workerId || w.dpRank !== b.dpRank) out[i] = STEER_COST;
        }
      },
    };
    const picker: WorkerPicker = {
      pick(ctx, rows, rng) {
        const row = base.picker.pick(ctx, rows, rng);
        const sid = ctx.sessionId();
        if (sid !== undefined && rows[row]) {
          const w = rows[row].candidate.worker();
          bindings.set(sid, { workerId: w.workerId, dpRank: w.dpRank, lastUsed: o.clock.now() });
        }
        return row;
      },
    };
    return { filters: base.filters, scorers: [...base.scorers, steer], picker };
  };
}
