/**
 * The replica mesh's configurable limits (`--replica-sync-*`), their defaults (`LIMITS.replica*`)
 * and their ranges. No ZeroMQ here: the CLI parses these before deciding to serve.
 */
import { LIMITS } from '../core/config/config.js';

export interface ReplicaSyncLimits {
  /** Anti-entropy digest interval, ms (`--replica-sync-digest-ms`). */
  digestIntervalMs: number;
  /** Messages the PUB queues per subscriber (ZMQ_SNDHWM, `--replica-sync-send-hwm`). */
  sendHwm: number;
  /** Messages a SUB queues per peer (ZMQ_RCVHWM, `--replica-sync-receive-hwm`). */
  receiveHwm: number;
  /** How long `/ready` waits for the mesh after start-up, from the first worker registered, s (0: not at all). */
  readyTimeoutSecs: number;
  /** How long freed ids are remembered, s, and how many at most. */
  tombstoneTtlSecs: number;
  maxTombstones: number;
}

export const MIN_DIGEST_MS = 100;
export const MAX_DIGEST_MS = 60_000;

export const DEFAULT_REPLICA_LIMITS: Readonly<ReplicaSyncLimits> = Object.freeze({
  digestIntervalMs: LIMITS.replicaDigestIntervalMs, sendHwm: LIMITS.replicaSendHwm, receiveHwm: LIMITS.replicaReceiveHwm,
  readyTimeoutSecs: LIMITS.replicaReadyTimeoutSecs, tombstoneTtlSecs: LIMITS.replicaTombstoneTtlSecs, maxTombstones: LIMITS.replicaMaxTombstones,
});

/** Ranges, by field: [flag, min, max, integer]. */
const RANGES: Readonly<Record<keyof ReplicaSyncLimits, readonly [string, number, number, boolean]>> = {
  digestIntervalMs: ['--replica-sync-digest-ms', MIN_DIGEST_MS, MAX_DIGEST_MS, true],
  sendHwm: ['--replica-sync-send-hwm', 1, 2 ** 31 - 1, true],
  receiveHwm: ['--replica-sync-receive-hwm', 1, 2 ** 31 - 1, true],
  readyTimeoutSecs: ['--replica-sync-ready-timeout-secs', 0, 86_400, false],
  tombstoneTtlSecs: ['--replica-sync-tombstone-secs', 1, 86_400, false],
  maxTombstones: ['--replica-sync-max-tombstones', 1, 10_000_000, true],
};

/** The flag, range and integer rule of a limit (the CLI parses with them). */
export const replicaLimitRange = (k: keyof ReplicaSyncLimits): readonly [string, number, number, boolean] => RANGES[k];

/** The limits with defaults filled in, or the problems (one line per limit, naming its flag). */
export function resolveReplicaLimits(given: Partial<ReplicaSyncLimits>): { limits: ReplicaSyncLimits; problems: string[] } {
  const limits = { ...DEFAULT_REPLICA_LIMITS, ...given };
  const problems: string[] = [];
  for (const [k, [flag, min, max, integer]] of Object.entries(RANGES) as [keyof ReplicaSyncLimits, (typeof RANGES)[keyof ReplicaSyncLimits]][]) {
    const v = limits[k];
    if (!(typeof v === 'number' && Number.isFinite(v) && v >= min && v <= max && (!integer || Number.isInteger(v)))) {
      problems.push(`${flag}: must be ${integer ? 'an integer' : 'a number'} between ${min} and ${max} (got ${String(v)})`);
    }
  }
  return { limits, problems };
}
