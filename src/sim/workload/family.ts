/**
 * What a workload family is: its knobs (name, default, bounds, one line of meaning) and its
 * generator. The families themselves are in families.ts; `mixed` (mixed.ts) is built from them.
 */
import type { Rng } from '../../core/random.js';
import type { TraceRow } from '../trace.js';
import type { BlockIdAllocator } from './context.js';

/** One knob of a family: `key=value` in a workload spec. */
export interface KnobDef {
  default: number;
  about: string;
  /** Whole numbers only. */
  int?: boolean;
  /** Inclusive bounds (every size a spec controls is bounded). */
  min: number;
  max: number;
  /** The default is per 8 ranks and scales with the fleet's ranks (`requests`, `rate`). */
  scaled?: boolean;
}

/** Knob values by name (defaults filled in). */
export type Knobs = Readonly<Record<string, number>>;

/** What a generator gets besides its knobs. */
export interface GenContext {
  rng: Rng;
  ids: BlockIdAllocator;
  /** Tenant name: every row's `tenant`, and the stem of its session ids. */
  tenant: string;
}

export interface Family {
  name: string;
  /** One sentence: the shape of the family's requests. */
  about: string;
  knobs: Readonly<Record<string, KnobDef>>;
  /** The requests, in time order (ms at speed 1, from about 0). */
  generate(k: Knobs, g: GenContext): TraceRow[];
}

/** Bounds of token lengths in knobs (a prompt of up to a million tokens). */
export const MAX_TOKENS = 1_000_000;
/** Bound of the `requests` knob. */
export const MAX_REQUESTS = 2_000_000;

/** The knobs every family has: how many requests, at what base rate, and the spread of lengths. */
export function commonKnobs(requests: number, rate: number): Record<string, KnobDef> {
  return {
    requests: { default: requests, about: 'requests in the trace', int: true, min: 1, max: MAX_REQUESTS, scaled: true },
    rate: { default: rate, about: 'base arrival rate, requests/s at speed 1 (--load and --speed rescale it)', min: 1e-6, max: 1e6, scaled: true },
    spread: { default: 0.5, about: 'sigma of the log of every length drawn (lognormal around its median, clipped to [median/4, median x 4])', min: 0, max: 3 },
  };
}

/** A token-length knob (a median, or a fixed length). */
export function tokens(def: number, about: string, min = 1): KnobDef {
  return { default: def, about, int: true, min, max: MAX_TOKENS };
}

/** A count knob. */
export function count(def: number, about: string, max = 100_000): KnobDef {
  return { default: def, about, int: true, min: 1, max };
}
