/**
 * The built-in workload families (`simulate --workload NAME[:key=value...]`). Each is a small
 * generator over a {@link Context}: what is shared (a system prompt, a tool prefix, a document,
 * a growing conversation) keeps its block ids, what is new gets new ones.
 *
 * Arrivals are open-loop: sessions start as a Poisson process, and the requests of a session
 * (turns, agent steps) follow each other by an exponential gap from the previous request's
 * arrival. A real client waits for the answer and then thinks; a trace cannot know when the
 * answer comes (that depends on the routing under test), so the gap stands for answer time plus
 * think time. At high load a next turn may arrive before the previous answer: that is the open
 * loop's price, the same in every policy's run. `--load` and `--speed` compress the whole
 * timeline, gaps included.
 */
import { lengthDraw, uniformInt, exponential, stratifiedInts, Zipf } from './distributions.js';
import { Context, poissonSessions } from './context.js';
import { commonKnobs, count, tokens, type Family, type GenContext, type KnobDef, type Knobs } from './family.js';
import type { TraceRow } from '../trace.js';

/** Single-request sessions arriving as a Poisson process of `k.rate` requests/s. */
function oneShot(k: Knobs, g: GenContext, prompt: () => Context): TraceRow[] {
  return poissonSessions(g.rng, { requests: k.requests, sessionsPerMs: k.rate / 1000, warmMs: 0, tenant: g.tenant }, (start, emit) => {
    emit(start, prompt(), lengthDraw(g.rng, k.output, k.spread));
  });
}

/** One-shot questions over shared prefixes (system prompts, documents), prefix popularity Zipf(`s`). */
function questionsOver(k: Knobs, g: GenContext, prefixes: readonly Context[], s: number): TraceRow[] {
  const zipf = new Zipf(prefixes.length, s);
  return oneShot(k, g, () => prefixes[zipf.draw(g.rng)].fork().append(lengthDraw(g.rng, k.question, k.spread)));
}

/**
 * Sessions of `1..2 x mean - 1` requests (uniform, mean `mean`), each request's context the
 * previous one plus its answer plus `grow()` new tokens, `gap` ms apart on average; a session
 * ends early when its context would pass `max_context`.
 */
function sessions(k: Knobs, g: GenContext, mean: number, gapMs: number, first: () => Context, grow: () => number): TraceRow[] {
  const rng = g.rng;
  const o = { requests: k.requests, sessionsPerMs: k.rate / 1000 / mean, perSession: mean, warmMs: 2 * mean * gapMs, tenant: g.tenant };
  return poissonSessions(rng, o, (start, emit) => {
    const n = uniformInt(rng, 1, 2 * mean - 1);
    const ctx = first();
    let t = start;
    for (let s = 0; s < n; s++) {
      const out = lengthDraw(rng, k.output, k.spread);
      if (ctx.tokens + out > k.max_context) break;
      emit(t, ctx, out);
      ctx.append(out + grow());
      t += exponential(rng, gapMs);
    }
  });
}

/** The knobs of a session family: requests per session (`turns`, `steps`), the gap between them, the context bound. */
function sessionKnobs(unit: 'turn' | 'step', mean: number, gap: 'think' | 'gap', gapMs: number, why: string): Record<string, KnobDef> {
  return {
    [`${unit}s`]: count(mean, `${unit}s per session (mean; uniform in 1..2 x ${unit}s - 1)`, 1000),
    [gap]: { default: gapMs, about: `mean gap between the arrivals of two ${unit}s of a session, ms at speed 1 (${why})`, min: 0, max: 3.6e6 },
    max_context: tokens(32_768, 'a session ends before its context (prompt + answer) would exceed this many tokens'),
  };
}

/** Groups sharing a long system prompt; each request is its group's prompt plus a short question. */
export const systemPrompt: Family = {
  name: 'system_prompt',
  about: 'groups of requests that share a long system prompt, each request that prompt plus a short unique question; group popularity Zipf',
  knobs: {
    groups: count(16, 'groups (distinct system prompts)'),
    prefix: tokens(2048, 'system prompt tokens'),
    zipf: { default: 1, about: 'Zipf exponent of group popularity (0 = uniform)', min: 0, max: 4 },
    question: tokens(128, 'question tokens (median)'),
    output: tokens(256, 'output tokens (median)'),
    ...commonKnobs(12_000, 120),
  },
  generate(k, g) {
    return questionsOver(k, g, Array.from({ length: k.groups }, () => new Context(g.ids).append(k.prefix)), k.zipf);
  },
};

/** Chat sessions whose context grows each turn: previous prompt + answer + new user message. */
export const multiTurn: Family = {
  name: 'multi_turn',
  about: 'chat sessions: each turn is the previous prompt + its answer + a new user message, after an exponential gap',
  knobs: {
    system: tokens(512, 'system prompt shared by every session (0 = none)', 0),
    first: tokens(1024, 'first user message tokens (median)'),
    user: tokens(128, 'later user message tokens (median)'),
    output: tokens(256, 'answer tokens (median)'),
    ...sessionKnobs('turn', 6, 'think', 10_000, 'the answer, then the user reading and typing'),
    ...commonKnobs(10_000, 80),
  },
  generate(k, g) {
    const system = new Context(g.ids).append(k.system);
    return sessions(k, g, k.turns, k.think, () => system.fork().append(lengthDraw(g.rng, k.first, k.spread)),
      () => lengthDraw(g.rng, k.user, k.spread));
  },
};

/** Agent loops: a long shared tool/instruction prefix, then many steps each appending a short result. */
export const agentic: Family = {
  name: 'agentic',
  about: 'agent sessions: a long tool/instruction prefix shared by all sessions of an agent, a task, then many steps each appending the answer and a short tool result',
  knobs: {
    agents: count(2, 'agents (distinct tool/instruction prefixes; a session picks one uniformly)'),
    prefix: tokens(8192, 'tool/instruction prefix tokens'),
    task: tokens(512, 'task statement tokens (median)'),
    append: tokens(256, 'tool result tokens appended after each step (median)'),
    output: tokens(128, 'tokens generated per step (median)'),
    ...sessionKnobs('step', 12, 'gap', 2000, 'the answer, then the tool call'),
    ...commonKnobs(8000, 60),
  },
  generate(k, g) {
    const prefixes = Array.from({ length: k.agents }, () => new Context(g.ids).append(k.prefix));
    return sessions(k, g, k.steps, k.gap, () => prefixes[uniformInt(g.rng, 0, k.agents - 1)].fork().append(lengthDraw(g.rng, k.task, k.spread)),
      () => lengthDraw(g.rng, k.append, k.spread));
  },
};

/** A few large documents, many questions each, interleaved. */
export const docQa: Family = {
  name: 'doc_qa',
  about: 'questions over a few large documents: each request is a whole document plus a short question; documents interleave',
  knobs: {
    documents: count(16, 'documents'),
    doc_min: tokens(8192, 'shortest document, tokens (lengths spread evenly over doc_min..doc_max: one drawn in each of `documents` equal slices)'),
    doc_max: tokens(30_720, 'longest document, tokens'),
    zipf: { default: 0, about: 'Zipf exponent of document popularity (0 = uniform)', min: 0, max: 4 },
    question: tokens(64, 'question tokens (median)'),
    output: tokens(256, 'answer tokens (median)'),
    ...commonKnobs(10_000, 24),
  },
  generate(k, g) {
    if (k.doc_min > k.doc_max) throw new Error(`doc_qa: doc_min ${k.doc_min} exceeds doc_max ${k.doc_max}`);
    const lengths = stratifiedInts(g.rng, k.documents, k.doc_min, k.doc_max);
    return questionsOver(k, g, lengths.map((n) => new Context(g.ids).append(n)), k.zipf);
  },
};

/** Every prompt unique. */
export const noReuse: Family = {
  name: 'no_reuse',
  about: 'every prompt unique: nothing to reuse, only load to balance',
  knobs: {
    input: tokens(1024, 'prompt tokens (median)'),
    output: tokens(256, 'output tokens (median)'),
    ...commonKnobs(12_000, 120),
  },
  generate(k, g) {
    return oneShot(k, g, () => new Context(g.ids).append(lengthDraw(g.rng, k.input, k.spread)));
  },
};

/** The single families, by name. */
export const FAMILIES: Readonly<Record<string, Family>> = Object.freeze(Object.fromEntries(
  [systemPrompt, multiTurn, agentic, docQa, noReuse].map((f) => [f.name, f])));
