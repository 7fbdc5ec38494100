/** Messages between the simulator page and its Web Worker. */
import type { FleetConfig } from '../src/sim/fleet.js';
import type { CostKnobs } from '../src/sim/policies.js';
import type { SimProgress, SimulationResult } from '../src/sim/simulate.js';
import type { SweepResult } from '../src/sim/sweep.js';

/** Page -> worker: run a simulation, or a sweep of one knob. */
export interface RunRequest {
  type: 'run';
  /** JSONL trace text (unused with `workload`). */
  trace: string;
  /** A generated workload spec (`NAME[:key=value...]`), generated in the worker for the fleet. */
  workload?: string;
  /** Arrival rate as a fraction of the measured saturation (replaces `speed`). */
  load?: number;
  limit?: number;
  fleet: Partial<FleetConfig>;
  policies: string;
  knobs: Partial<CostKnobs>;
  seed: number;
  speed: number;
  queue?: { threshold: number };
  /** What the clients send as `expected_output_tokens` (default `trace`). */
  expectedOutput?: 'trace' | 'none';
  /** Body of the custom policy's scorer (ctx, cands, out). */
  scorer?: string;
  /** Every policy at every value of this knob (the CLI's flag names). */
  sweep?: { knob: string; values: number[] };
}

/** Progress of a run; `value` is the swept value being run. */
export interface PageProgress extends SimProgress { value?: number; valueIndex: number; valueCount: number }

/** Worker -> page. */
export type WorkerMessage =
  | { type: 'progress'; progress: PageProgress }
  | { type: 'done'; result: SimulationResult; requests: number; wallMs: number }
  | { type: 'swept'; sweep: SweepResult; requests: number; wallMs: number }
  | { type: 'error'; message: string };
