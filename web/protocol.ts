/** Messages between the simulator page and its Web Worker. */
import type { FleetConfig } from '../src/sim/fleet.js';
import type { CostKnobs } from '../src/sim/policies.js';
import type { SimProgress, SimulationResult } from '../src/sim/simulate.js';

/** Page -> worker: run a simulation. */
export interface RunRequest {
  type: 'run';
  /** JSONL trace text. */
  trace: string;
  limit?: number;
  fleet: Partial<FleetConfig>;
  policies: string;
  knobs: Partial<CostKnobs>;
  seed: number;
  speed: number;
  queue?: { threshold: number };
  /** Body of the custom policy's scorer (ctx, cands, out). */
  scorer?: string;
}

/** Worker -> page. */
export type WorkerMessage =
  | { type: 'progress'; progress: SimProgress }
  | { type: 'done'; result: SimulationResult; requests: number; wallMs: number }
  | { type: 'error'; message: string };
