/**
 * Step-time model of a simulated engine: the duration of one scheduler step (one forward pass
 * over a batch of chunked-prefill tokens and decode tokens) as
 *
 *   step_ms = fixed
 *           + prefill_token  x (prefill tokens in the step)
 *           + prefill_pair   x (query-key pairs the prefill chunks attend: chunk x (context before it + (chunk + 1) / 2))
 *           + decode_seq     x (decoding sequences in the step)
 *           + decode_kv      x (KV tokens the decoding sequences attend: their context lengths)
 *
 * Named profiles carry coefficients measured on a named model and GPU; each cites its source.
 * Where a source's fit has no term for something, the profile says how the term was derived
 * (or that it is zero because the fit absorbed it).
 */

/** Coefficients of {@link stepMs}, milliseconds. */
export interface StepCost {
  fixedMs: number;
  prefillTokenMs: number;
  prefillPairMs: number;
  decodeSeqMs: number;
  decodeKvTokenMs: number;
}

/** A named, cited profile. */
export interface PerfProfile {
  name: string;
  model: string;
  gpu: string;
  /** Where the numbers come from (public repository path or paper). */
  source: string;
  cost: Readonly<StepCost>;
}

/**
 * Decode attention reads each attended KV token once per step, so its cost is bytes per token
 * over the effective HBM bandwidth. DistServe's vLLM profile of OPT-13B on one A100-80GB
 * (below) measured 0.000494112 ms per attended context token; OPT-13B stores
 * 40 layers x 2 (K, V) x 5,120 x 2 bytes = 819,200 bytes of KV per token, so the measured
 * effective bandwidth is 819,200 B / 0.494112 us = 1.658 TB/s (81% of the A100's 2.039 TB/s).
 * Llama-3.1-8B (32 layers, 8 KV heads of 128, bf16) stores 131,072 bytes per token.
 */
const OPT13B_KV_BYTES = 819_200;
const OPT13B_DECODE_KV_MS = 0.0004941120550644942;
const LLAMA31_8B_KV_BYTES = 131_072;
/** A100-80GB SXM and H100 SXM peak HBM bandwidths (NVIDIA data sheets), TB/s. */
const A100_TBPS = 2.039;
const H100_TBPS = 3.35;
const llamaDecodeKvMs = (tbps: number): number => OPT13B_DECODE_KV_MS * (LLAMA31_8B_KV_BYTES / OPT13B_KV_BYTES) * (A100_TBPS / tbps);

/**
 * BLIS, the llm-d inference simulator (github.com/inference-sim/inference-sim, `defaults.yaml`,
 * "blackbox" step model `beta0 + beta1 x cache-miss tokens + beta2 x decode tokens`, in
 * microseconds, fitted to vLLM v0.8.4 step traces, tensor parallelism 1). Its fit has no
 * attention terms: prefill attention is absorbed into beta1; the decode KV term is derived from
 * DistServe's measurement as described above.
 */
const BLIS = 'inference-sim/inference-sim defaults.yaml (BLIS blackbox beta coefficients, vLLM v0.8.4, TP1)';

/** The profiles the CLI (`--profile`) and the page offer. */
export const PERF_PROFILES: Readonly<Record<string, PerfProfile>> = Object.freeze({
  // beta = [16441.531547147923, 47.837412108198656, 18.20560632171683] us
  'llama3.1-8b-a100': {
    name: 'llama3.1-8b-a100', model: 'meta-llama/Llama-3.1-8B-Instruct', gpu: 'A100-80GB', source: BLIS,
    cost: { fixedMs: 16.441531547147923, prefillTokenMs: 0.047837412108198656, prefillPairMs: 0, decodeSeqMs: 0.01820560632171683, decodeKvTokenMs: llamaDecodeKvMs(A100_TBPS) },
  },
  // beta = [5752.705191348184, 17.25086436834028, 5.999143920128404] us
  'llama3.1-8b-h100': {
    name: 'llama3.1-8b-h100', model: 'meta-llama/Llama-3.1-8B-Instruct', gpu: 'H100-80GB', source: BLIS,
    cost: { fixedMs: 5.752705191348184, prefillTokenMs: 0.01725086436834028, prefillPairMs: 0, decodeSeqMs: 0.005999143920128404, decodeKvTokenMs: llamaDecodeKvMs(H100_TBPS) },
  },
  // DistServe (Zhong et al., OSDI'24), github.com/LLMServe/DistServe
  // simdistserve/estimators/profile_data/profiler-a100-80g.vllm.json, "facebook/opt-13b", TP 1:
  // prefill [23.62736227 ms, 0.15054561 ms/token, 8.65348374e-06 ms/token^2] (per prompt: a + b L + c L^2,
  // so c L^2 = 2c per attended query-key pair), decoding_smallbs [19.562534173678987 ms,
  // 0.0004941120550644942 ms/context token, 0.05060571771697455 ms/sequence]. One fixed part per
  // step: the decode intercept (a prefill-only step is 4 ms cheaper than DistServe's prefill fit).
  'opt-13b-a100': {
    name: 'opt-13b-a100', model: 'facebook/opt-13b', gpu: 'A100-80GB',
    source: 'LLMServe/DistServe simdistserve/estimators/profile_data/profiler-a100-80g.vllm.json (vLLM, TP1)',
    cost: { fixedMs: 19.562534173678987, prefillTokenMs: 0.15054561, prefillPairMs: 2 * 8.65348374e-6, decodeSeqMs: 0.05060571771697455, decodeKvTokenMs: OPT13B_DECODE_KV_MS },
  },
});

/**
 * The default: Llama-3.1-8B on H100, whose KV budget is the default fleet's and whose
 * throughput puts the bundled conversation trace at light load at 1x, moderate at 3x and just
 * past saturation at 6x (on A100 the same fleet saturates before 3x).
 */
export const DEFAULT_PROFILE = 'llama3.1-8b-h100';

/** A profile by name; throws an Error listing the known ones. */
export function perfProfile(name: string): PerfProfile {
  const p = PERF_PROFILES[name];
  if (!p) throw new Error(`unknown profile "${name}" (known: ${Object.keys(PERF_PROFILES).join(', ')})`);
  return p;
}

/** Duration of one step, ms. */
export function stepMs(c: Readonly<StepCost>, prefillTokens: number, prefillPairs: number, decodeSeqs: number, decodeKvTokens: number): number {
  return c.fixedMs + c.prefillTokenMs * prefillTokens + c.prefillPairMs * prefillPairs + c.decodeSeqMs * decodeSeqs + c.decodeKvTokenMs * decodeKvTokens;
}
