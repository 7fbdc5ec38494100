/**
 * Virtual time: a clock the core reads (injected as its `Clock`) and a binary min-heap of timed
 * callbacks ordered by (time, insertion order), so equal-time events run in the order they were
 * scheduled and a run is reproducible.
 */
import type { Clock } from '../core/random.js';

interface Entry { t: number; seq: number; fn: () => void }

/** Milliseconds of simulated time; only the event loop advances it. */
export class VirtualClock implements Clock {
  t = 0;
  now(): number { return this.t; }
}

/** Timed callbacks in virtual time. */
export class EventQueue {
  private heap: Entry[] = [];
  private seq = 0;

  constructor(readonly clock: VirtualClock) {}

  get size(): number { return this.heap.length; }

  /** Time of the earliest event, or Infinity. */
  peekTime(): number { return this.heap.length > 0 ? this.heap[0].t : Infinity; }

  /** Run `fn` at virtual time `t` (never earlier than now). */
  at(t: number, fn: () => void): void {
    const e: Entry = { t: Math.max(t, this.clock.t), seq: this.seq++, fn };
    const h = this.heap;
    let i = h.length;
    h.push(e);
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!less(e, h[p])) break;
      h[i] = h[p];
      i = p;
    }
    h[i] = e;
  }

  /** Run `fn` after `ms` of virtual time. */
  after(ms: number, fn: () => void): void { this.at(this.clock.t + ms, fn); }

  /** Pop the earliest event, advance the clock to it and run it. False when empty. */
  runNext(): boolean {
    const h = this.heap;
    if (h.length === 0) return false;
    const top = h[0];
    const last = h.pop() as Entry;
    if (h.length > 0) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1, r = l + 1;
        let m = i;
        let best = last;
        if (l < h.length && less(h[l], best)) { m = l; best = h[l]; }
        if (r < h.length && less(h[r], best)) { m = r; best = h[r]; }
        if (m === i) break;
        h[i] = h[m];
        i = m;
      }
      h[i] = last;
    }
    this.clock.t = top.t;
    top.fn();
    return true;
  }
}

function less(a: Entry, b: Entry): boolean { return a.t < b.t || (a.t === b.t && a.seq < b.seq); }
