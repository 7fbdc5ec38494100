// Cache credit (Dynamo `lib/kv-router/src/scheduling/overlap.rs`) and the router credit of /overlap_scores rows (Dynamo `lib/kv-router/src/services/selection/core/queries.rs`), per
// match row. Reads the match rows, writes four output columns; allocation-free.
//
//   effective_overlap_blocks = device + host_w * host_ext + disk_w * (disk_ext + external_ext)
//   cached_tokens            = max(0, round(effective_overlap_blocks * block_size))
//   effective_prefill_tokens = isl - min(cached_tokens, isl)
//   router_credit_blocks     = credit * device + host_w * host_ext + disk_w * (disk + external)
//                              (+ shared_cache_multiplier * shared hits: always 0 standalone)

/** Rust's f64::round for x >= 0 (half away from zero), without the floor(x + 0.5) error. */
@inline function roundHalfUp(x: f64): f64 {
  const c = Math.ceil(x);
  return c - 0.5 > x ? c - 1 : c;
}

export function creditInto(rows: i32, blockSize: f64, isl: f64, credit: f64, hostW: f64, diskW: f64,
  dev: usize, host: usize, disk: usize, extn: usize,
  outEff: usize, outCredit: usize, outCached: usize, outPrefill: usize): void {
  for (let i = 0; i < rows; i++) {
    const o4 = <usize>i << 2, o8 = <usize>i << 3;
    const d = <f64>load<u32>(dev + o4);
    const h = <f64>load<u32>(host + o4);
    const lower = <f64>load<u32>(disk + o4) + <f64>load<u32>(extn + o4);
    const tierPart = hostW * h + diskW * lower;
    const eff = d + tierPart;
    let cached = roundHalfUp(eff * blockSize);
    if (cached < 0) cached = 0;
    store<f64>(outEff + o8, eff);
    store<f64>(outCredit + o8, credit * d + tierPart);
    store<u32>(outCached + o4, <u32>cached);
    store<u32>(outPrefill + o4, <u32>(isl - Math.min(cached, isl)));
  }
}
